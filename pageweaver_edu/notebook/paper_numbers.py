"""The paper's numbers, in one table that every chapter reads (arXiv:2610.11201).

Each :class:`PaperNumber` is printed as the paper prints it, with its unit, the experiment it
comes from and the section, figure or table. Where the paper gives a range (over captures or
runs), the entry holds the range, never a number picked from it; :attr:`PaperNumber.value` is
then the midpoint, for the few models that need one number. The same quantity can appear in
several experiments with different values: the original-order Union8 call on L43/r1 is
1.36633 ms in Figure 6 (medians of the rotated online experiment), 1.371 ms in Appendix A
(execution only, fixed ids) and 1.368 ms in Figure 5 (beside page union). They are separate
entries, and a chapter names the one it uses.

:func:`paper_table` renders the whole table (chapter 11 shows it; ``docs/definitions.md``
points to it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaperNumber:
    """One number (or range, or list) of the paper.

    Attributes
    ----------
    values : tuple of float
        One value, the two ends of a range (``sep="–"``) or a list (``sep="/"``).
    decimals : int
        Digits after the point, as the paper prints them.
    unit : str
        ``"ms"``, ``"µs"``, ``"%"``, ``"×"``, ``"s"`` or ``""``.
    what : str
        The quantity, in the series' words.
    source : str
        Section, figure, table or appendix of arXiv:2610.11201.
    experiment : str
        The experiment the number belongs to (which input, which measurement).
    sep : str
        ``"–"`` for a range, ``"/"`` for a list of separate values.
    signed : bool
        A change: positive values print with ``+``.
    """

    values: tuple[float, ...]
    decimals: int
    unit: str
    what: str
    source: str
    experiment: str
    sep: str = "–"
    signed: bool = False

    @property
    def value(self) -> float:
        """The number; the midpoint of a range; the mean of a list."""
        return sum(self.values) / len(self.values)

    @property
    def low(self) -> float:
        """The smaller end of a range (the value itself for one number)."""
        return min(self.values)

    @property
    def high(self) -> float:
        """The larger end of a range (the value itself for one number)."""
        return max(self.values)

    def number_text(self) -> str:
        """The number(s) as the paper prints them, without the unit: ``19.3–19.5``."""
        sign = "+" if self.signed else ""
        sep = " to " if self.sep == "–" and self.low < 0 else self.sep
        return sep.join(f"{sign if v > 0 else ''}{v:,.{self.decimals}f}" for v in self.values)

    def text(self) -> str:
        """The number(s) with the unit: ``19.3–19.5 µs``, ``1.701×``, ``−12.70 %``."""
        number = self.number_text()
        if self.unit in ("×", ""):
            return number + self.unit
        return f"{number} {self.unit}"


L43 = "L43/r1 64K capture"
FIG6 = "L43/r1, W128, Figure 6 (medians of the rotated online experiment)"
FIVE = "five 64K model captures"
OFFLINE = "L43/r1, execution only with fixed ids (Appendix A)"
BASE = "base kernel, six model captures (geometric means)"
FIG5 = "Figure 5: direct KV-page union"
SERVICE = "whole-model prefill service"
B300 = "B300 port (P = 64)"


def _n(values, decimals, unit, what, source, experiment, sep="–",
       signed=False) -> PaperNumber:
    values = values if isinstance(values, tuple) else (values,)
    return PaperNumber(tuple(float(v) for v in values), decimals, unit, what, source,
                       experiment, sep, signed)


#: Every number of the paper the series uses, by key.
PAPER = {
    "l43_queries": _n(15_272, 0, "", "current queries", "§5.4", L43),
    "l43_prefix": _n(49_152, 0, "", "prefix tokens before them", "§5.4", L43),
    "l43_context": _n(64_424, 0, "", "context tokens", "§5.4", L43),
    "l43_visits_original": _n(102_429, 0, "", "union visits, original order", "§5.4", L43),
    "l43_visits_w128": _n(89_426, 0, "", "union visits after W128 regrouping", "§5.4", L43),
    "l43_visits_change": _n(-12.70, 2, "%", "union-visit change at W128", "§5.4", L43),
    "t0": _n(1.36633, 5, "ms", "T0, original-order Union8 complete call", "§5.4, Fig. 6", FIG6),
    "t_fixed": _n(1.27037, 5, "ms", "T_fixed, with precomputed W128 ids", "§5.4, Fig. 6", FIG6),
    "t_online": _n(1.30792, 5, "ms", "T_online, live W128 grouping", "§5.4, Fig. 6", FIG6),
    "s_exec": _n(95.96, 2, "µs", "S_exec = T0 − T_fixed", "eq. 7, Fig. 6", FIG6),
    "c_online": _n(37.55, 2, "µs", "C_online = T_online − T_fixed", "eq. 7, Fig. 6", FIG6),
    "s_net": _n(58.41, 2, "µs", "S_net = T0 − T_online", "eq. 7, Fig. 6", FIG6),
    "grouping_l43_w128": _n(34.65, 2, "µs", "grouping kernel alone, W128", "§5.4", FIG6),
    "grouping_w64": _n((19.3, 19.5), 1, "µs", "grouping kernel alone, W64", "§5.4", FIVE),
    "grouping_w128": _n((34.6, 34.9), 1, "µs", "grouping kernel alone, W128", "§5.4", FIVE),
    "online_w128_change": _n((-3.26, -7.66), 2, "%",
                             "online W128 complete-call latency vs original Union8", "§5.4",
                             FIVE),
    "online_16k_change": _n(-4.11, 2, "%", "online W128 latency, 16K high-overlap control",
                            "§5.4", "16K high-overlap capture"),
    "offline_original": _n(1.371, 3, "ms", "original order", "App. A", OFFLINE),
    "offline_identity": _n(1.382, 3, "ms", "identity ids", "App. A", OFFLINE),
    "offline_random": _n(1.832, 3, "ms", "random ids", "App. A", OFFLINE),
    "offline_w512": _n(1.234, 3, "ms", "W512 affinity ids", "App. A", OFFLINE),
    "offline_w512_reorder": _n(1.315, 3, "ms", "W512 with Q/Top-K physically reordered",
                               "App. A", OFFLINE),
    "offline_hash_w512": _n(1.298, 3, "ms", "global hash order, then W512", "App. A", OFFLINE),
    "offline_w2048": _n(1.185, 3, "ms", "W2048 ids", "App. A", OFFLINE),
    "offline_w2048_search": _n(1.50, 2, "s", "CPU search time of the W2048 ids", "App. A",
                               OFFLINE),
    "vs_flashinfer": _n(1.701, 3, "×", "Union8 speed-up over FlashInfer", "§5.2", BASE),
    "vs_native": _n(2.662, 3, "×", "Union8 speed-up over the native SM90 kernel", "§5.2", BASE),
    "vs_union4": _n(1.075, 3, "×", "Union8 speed-up over Union4", "§5.2", BASE),
    "nrms_union8": _n((2.246, 3.967), 3, "%", "NRMS of Union8 vs a Triton reference",
                      "Table 2", BASE),
    "nrms_flashinfer": _n((2.288, 4.077), 3, "%", "NRMS of FlashInfer vs a Triton reference",
                          "Table 2", BASE),
    "nrms_native": _n((6.258, 9.120), 3, "%", "NRMS of the native kernel vs a Triton reference",
                      "Table 2", BASE),
    "nrms_online": _n((2.66, 4.51), 2, "%", "NRMS of the online path, 33 sampled rows", "§5",
                      "one model capture"),
    "reuse_survey": _n((3.85, 4.54), 2, "", "per-source median reuse", "§5.1",
                       "development survey"),
    "page_union_32k_flashinfer": _n(1.588, 3, "ms", "FlashInfer, interleaved 32K", "§5.3",
                                    FIG5),
    "page_union_32k": _n(1.340, 3, "ms", "page union, interleaved 32K", "§5.3", FIG5),
    "page_union_64k_flashinfer": _n(3.172, 3, "ms", "FlashInfer, interleaved 64K", "§5.3",
                                    FIG5),
    "page_union_64k": _n(2.852, 3, "ms", "page union, interleaved 64K", "§5.3", FIG5),
    "page_union_l43": _n(1.827, 3, "ms", "page union on L43/r1", "§5.3", FIG5),
    "union8_l43_fig5": _n(1.368, 3, "ms", "Union8 on L43/r1, beside page union", "§5.3", FIG5),
    "workspace_gib": _n(1, 0, "GiB", "padded partial workspace for 16K queries (about)", "§4.3",
                        "page-pair design"),
    "service_vs_native": _n((7.88, 14.36), 2, "%", "median throughput over the native service",
                            "§5.5", SERVICE, signed=True),
    "service_increment": _n((0.47, 0.73), 2, "%", "regroup increment, 32K and 64K", "§5.5",
                            SERVICE, signed=True),
    "service_8k": _n((-0.56, -1.31), 2, "%", "regroup increment at 8K, concurrency 1 / 4",
                     "§5.5", SERVICE, sep="/"),
    "service_pairs": _n((0.630, 0.666, 0.641), 3, "%", "three paired 64K/C1 rounds", "§5.5",
                        SERVICE, sep="/", signed=True),
    "service_outlier": _n(32.36, 2, "%", "the 64K/C4 outlier pairing", "§5.5", SERVICE,
                          signed=True),
    "b300_ratios": _n((1.068, 1.156), 3, "×", "speed ratios", "§5.7", B300),
    "b300_times_a": _n((1.497, 1.295, 0.592), 3, "ms", "first set of three times", "§5.7",
                       B300, sep="/"),
    "b300_times_b": _n((0.475, 0.500, 0.547), 3, "ms", "second set of three times", "§5.7",
                       B300, sep="/"),
    "b300_nrms": _n(1.55e-5, 7, "", "NRMS", "§5.7", B300),
    "profile_registers": _n(255, 0, "", "producer kernel: registers per thread", "App.",
                            "Nsight Compute profile"),
    "profile_occupancy": _n(12.4, 1, "%", "producer kernel: achieved occupancy", "App.",
                            "Nsight Compute profile"),
    "profile_l2_hit": _n(96.5, 1, "%", "producer kernel: L2 hit rate", "App.",
                         "Nsight Compute profile"),
}


def paper(key: str) -> PaperNumber:
    """The entry ``key`` of :data:`PAPER` (a KeyError names a missing key)."""
    return PAPER[key]


def paper_text(key: str) -> str:
    """``paper(key).text()``: the number with its unit, as the paper prints it."""
    return PAPER[key].text()


def paper_table() -> str:
    """The whole table as markdown, grouped by experiment, in the order of :data:`PAPER`."""
    lines = ["| experiment | quantity | paper | where |", "|---|---|--:|---|"]
    seen = set()
    for n in PAPER.values():
        head = n.experiment if n.experiment not in seen else ""
        seen.add(n.experiment)
        lines.append(f"| {head} | {n.what} | {n.text()} | {n.source} |")
    return "\n".join(lines)
