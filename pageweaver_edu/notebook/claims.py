"""Chapter 11: every worked example of the definitions and every anchor number of the paper
(docs/definitions.md#paper-numbers), each sorted into exact, simulation, synthetic H200 or
not here.

:class:`PaperClaims` collects the rows; each function below computes one group of them, adds
its rows and returns the values the chapter's checks assert on. The recorded (synthetic
H200) rows and the live cell are in :mod:`.claims_recorded`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go

from ..core.bitmap import bitmap_words, encode_bitmaps, popcount_delta
from ..core.grouping import Grouping
from ..core.supports import token_support
from ..core.union_metrics import group_union, union_stats
from ..pagepairs.traffic import partial_bytes, traffic_model
from ..pagepairs.work import plan_page_pairs
from ..regroup.bitmap import greedy_regroup
from ..regroup.optimal import optimal_regroup
from ..workloads import make_preset
from .open_questions_cost import TAU_NS, c_online_us
from .paper_numbers import PAPER, paper_text
from .style import style

#: Row shading of each status in :meth:`PaperClaims.figure`.
STATUS_COLOURS = {"exact": "#d9f0d3", "simulation": "#fff2cc", "synthetic H200": "#dbe9f6",
                  "not here": "#eeeeee"}
#: The paper's L43/r1 complete calls at W128, ms (T0, T_fixed, T_online; Figure 6).
PAPER_CALLS_MS = tuple(PAPER[k].value for k in ("t0", "t_fixed", "t_online"))
#: The paper's offline orderings on L43/r1 (execution only, Appendix A), ms.
PAPER_OFFLINE_MS = {name: PAPER[key].value for name, key in (
    ("original", "offline_original"), ("identity ids", "offline_identity"),
    ("random ids", "offline_random"), ("W512", "offline_w512"), ("W2048", "offline_w2048"))}


@dataclass
class PaperClaims:
    """The rows of the claims table: (id, source, claim, paper, ours, status)."""

    rows: list = field(default_factory=list)

    def add(self, cid, src, text, paper, ours, status) -> None:
        """Add one row; ``status`` is a key of :data:`STATUS_COLOURS`."""
        self.rows.append((cid, src, text, paper, ours, status))

    def counts(self) -> dict:
        """Rows per status."""
        return {k: sum(r[5] == k for r in self.rows) for k in STATUS_COLOURS}

    def exact_lines(self) -> str:
        """``<id> exact: <claim>`` for every exact row, and their number."""
        lines = [f"{r[0]:4} exact: {r[2]}" for r in self.rows if r[5] == "exact"]
        return "\n".join([*lines, f"exact rows: {sum(r[5] == 'exact' for r in self.rows)}"])

    def figure(self) -> go.Figure:
        """The whole table, one shaded row per claim."""
        cols = list(zip(*self.rows, strict=True))
        widths = [38, 55, 230, 150, 300, 70]
        fig = go.Figure(go.Table(
            columnwidth=widths,
            header=dict(values=["id", "source", "claim", "paper", "ours", "status"],
                        align="left", font=dict(size=12)),
            cells=dict(values=cols, align="left", font=dict(size=11), height=24,
                       fill_color=[[STATUS_COLOURS[st] for st in cols[5]]] * 6)))
        style(fig, "Every worked example and anchor number, by status", "", "",
              height=130 + table_height(cols, widths), legend_rows=0,
              subtitle="the status column says exact, simulation, synthetic H200 or not here; "
                       "the row shading only repeats it")
        fig.update_layout(margin=dict(l=10, r=10, b=10))
        return fig


def table_height(cols, widths, plot_px: int = 760, char_px: float = 6.4,
                 line_px: int = 16) -> int:
    """Pixels a plotly table of these columns needs so that no row is cut off: per row, the
    most lines any of its cells wraps to (columns share ``plot_px`` in proportion to
    ``widths``; ``char_px`` per character at font size 11), plus the header."""
    px = [plot_px * w / sum(widths) - 10 for w in widths]
    lines = [max(-(-len(str(cell)) * char_px // p) for cell, p in zip(row, px, strict=True))
             for row in zip(*cols, strict=True)]
    return int(sum(line_px * n + 10 for n in lines) + 40)


def _rows_text(rows, widths) -> str:
    claim_w, paper_w = widths
    return "\n".join(f"{r[0]:4}{r[2]:{claim_w}} paper {r[3]:{paper_w}} ours {r[4]}" for r in rows)


def worked_examples(claims: PaperClaims) -> tuple[dict, str]:
    """E1–E9: the worked examples of the definitions, all exact.

    Returns
    -------
    values : dict
        ``a_i``, ``union``, ``rho``, ``halves`` (UnionStats), ``perm_g3``, ``g3_before``,
        ``g3_after``, ``g2_visits`` (original, greedy, optimum), ``delta``.
    text : str
        One line per row.
    """
    v = {}
    start = len(claims.rows)
    v["a_i"] = token_support([0, 2], page_size=4, length=11, causal_pos=9).tolist()
    claims.add("E1", "eq. 1", "A_i for P=4, S={0,2}, L=11, c=9", "{0,1,2,3,8,9}",
               "{" + ",".join(map(str, v["a_i"])) + "}", "exact")
    v["union"] = group_union([[1, 4, 7], [1, 4, 9]], [0, 1]).tolist()
    v["rho"] = union_stats([[1, 4, 7], [1, 4, 9]], group=2).rho
    claims.add("E2", "eq. 3", "U of {1,4,7},{1,4,9}; rho", "{1,4,7,9}; 1.5",
               "{" + ",".join(map(str, v["union"])) + f"}}; {v['rho']}", "exact")
    v["halves"] = s_c4 = union_stats([list(range(16))] * 4 + [list(range(8, 24))] * 4, group=8)
    claims.add("E3", "eq. 4", "halves of 16 pages, 8 shared: union, C4 contribution", "24; 32",
               f"{s_c4.union_visits}; {s_c4.c4}", "exact")
    g3 = [[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]]
    v["perm_g3"] = p3 = greedy_regroup(g3, Grouping(6, 3))
    v["g3_before"], v["g3_after"] = b3, a3 = (union_stats(g3, group=3),
                                              union_stats(g3, p3, group=3))
    claims.add("E4", "Alg. 1", "g=3 example: π; union visits; edges",
               "[0,2,3,1,4,5]; 10 -> 7; 12",
               f"{p3.tolist()}; {b3.union_visits} -> {a3.union_visits}; {a3.edges}"
               .replace(" ", "").replace("->", " -> ").replace(";", "; "), "exact")
    g2 = [[1, 2, 3, 4], [1, 2, 6, 7], [1, 2, 3, 5], [3, 5, 8, 9]]
    v["g2_visits"] = v2 = [union_stats(g2, p, group=2).union_visits for p in (
        None, greedy_regroup(g2, Grouping(4, 2)), optimal_regroup(g2, Grouping(4, 2)))]
    claims.add("E5", "Alg. 1", "g=2 counterexample: original vs greedy (optimum)", "12 vs 13",
               f"{v2[0]} vs {v2[1]} (optimum {v2[2]})", "exact")
    u_bits, q_bits = encode_bitmaps([[1, 2], [2, 3]], capacity=512)
    v["delta"] = int(popcount_delta(q_bits, u_bits))
    claims.add("E6", "§4.1", "popcount delta of {2,3} against union {1,2}", "1", str(v["delta"]),
               "exact")
    claims.add("E7", "§4.1", "B=512 pages: words per query; tokens at P=128", "16; 65,536",
               f"{bitmap_words(512)}; {512 * 128:,}", "exact")
    claims.add("E8", "§4.1", "grouping work N·W·⌈B/32⌉ for L43/r1 at W128", "O(N·W·⌈B/32⌉)",
               f"{15_272 * 128 * bitmap_words(512):,} word ops", "exact")
    claims.add("E9", "§4.2", "Union8 tile rows; FP8 K+V page at P=d=128; slots per CTA",
               "64 (M64); 32 KiB; 2 x 32 KiB", f"{4 * 16}; {2 * 128 * 128 // 1024} KiB; "
               f"2 x {2 * 128 * 128 // 1024} KiB", "exact")
    return v, _rows_text(claims.rows[start:], (52, 22))


def capture_numbers(claims: PaperClaims, cap) -> tuple[dict, str]:
    """C1–C5: the L43/r1 shape, its union visits and the paper's eq. 7 arithmetic.

    Returns
    -------
    values : dict
        ``original`` (UnionStats of ``cap``), ``regrouped`` (W -> UnionStats at W64, W128,
        W512), ``paper_pct`` (the paper's union-visit change at W128, %).
    text : str
    """
    start = len(claims.rows)
    o = union_stats(cap.topk)
    s = {w: union_stats(cap.topk, greedy_regroup(cap.topk, Grouping(w), **cap.regroup_kwargs()))
         for w in (64, 128, 512)}
    queries, prefix, context = (int(PAPER[k].value) for k in ("l43_queries", "l43_prefix",
                                                              "l43_context"))
    before, after = (int(PAPER[k].value) for k in ("l43_visits_original", "l43_visits_w128"))
    claims.add("C1", "§5.4", "L43/r1: context tokens; pages at P=128; edges",
               f"{queries:,} + {prefix:,} = {context:,}; -; -",
               f"{queries + prefix:,}; {-(-context // 128)}; {queries * 16:,} (cap64k {o.edges:,})",
               "exact")
    paper_pct = 100 * (after - before) / before
    change = 100 * (s[128].union_visits - o.union_visits) / o.union_visits
    claims.add("C2", "§5.4", "union visits W128: original -> regrouped (change)",
               f"{before:,} -> {after:,} ({paper_text('l43_visits_change')})",
               f"paper arithmetic {paper_pct:.3f}%; cap64k {o.union_visits:,} -> "
               f"{s[128].union_visits:,} ({change:+.2f}%, calibrated)", "simulation")
    t0, tf, ton = PAPER_CALLS_MS
    claims.add("C3", "§3.4 eq. 7", "S_exec; C_online; S_net (µs) from T0, T_fixed, T_online",
               "; ".join(PAPER[k].number_text() for k in ("s_exec", "c_online", "s_net")),
               f"{1e3 * (t0 - tf):.2f}; {1e3 * (ton - tf):.2f}; {1e3 * (t0 - ton):.2f}", "exact")
    claims.add("C4", "§5.4", "L43/r1 online W128 latency change; inside the five-capture range",
               paper_text("online_w128_change"), f"{100 * (ton - t0) / t0:.2f}% (inside)", "exact")
    alone = PAPER["grouping_l43_w128"]
    claims.add("C5", "§5.4", "online cost vs grouping alone (µs)",
               f"{PAPER['c_online'].number_text()} vs {alone.number_text()}",
               f"difference {1e3 * (ton - tf) - alone.value:.2f} µs: C_online includes more than "
               "the kernel", "exact")
    return ({"original": o, "regrouped": s, "paper_pct": paper_pct},
            _rows_text(claims.rows[start:], (62, 30)))


def offline_orderings(claims: PaperClaims, cap, numbers: dict, rng) -> tuple[dict, str]:
    """C6–C8: the paper's offline orderings beside our union visits, and the CPU search time
    at W2048 (``numbers``: :func:`capture_numbers`'s values; W2048 is added to them).

    Returns
    -------
    offline : dict of str to (float, UnionStats)
        Ordering -> (paper ms, our union stats).
    text : str
    """
    o, s = numbers["original"], numbers["regrouped"]
    start = time.perf_counter()
    perm = greedy_regroup(cap.topk, Grouping(2048), **cap.regroup_kwargs())
    search_s = time.perf_counter() - start
    s[2048] = union_stats(cap.topk, perm)
    rand = union_stats(cap.topk, rng.permutation(cap.num_queries))
    ours = {"original": o, "identity ids": o, "random ids": rand, "W512": s[512],
            "W2048": s[2048]}
    offline = {name: (ms, ours[name]) for name, ms in PAPER_OFFLINE_MS.items()}
    base = PAPER_OFFLINE_MS["original"]
    lines = [f"{name:13} paper {ms:.3f} ms ({ms / base:5.3f}x)   cap64k union visits "
             f"{st.union_visits:>8,} ({st.union_visits / o.union_visits:5.3f}x)"
             for name, (ms, st) in offline.items()]
    lines.append(f"CPU greedy search W2048 on cap64k: {search_s:.2f} s (wall); paper: "
                 f"{paper_text('offline_w2048_search')}")
    claims.add("C6", "App. A", "offline ids, relative to original: identity; random; W512; W2048",
               "; ".join(f"{PAPER_OFFLINE_MS[n] / base:.3f}" for n in ("identity ids", "random ids",
                                                                      "W512", "W2048"))
               + " (time)",
               f"1.000; {rand.union_visits / o.union_visits:.3f}; "
               f"{s[512].union_visits / o.union_visits:.3f}; "
               f"{s[2048].union_visits / o.union_visits:.3f} (union visits)", "simulation")
    claims.add("C7", "App. A", "W512 with physical reorder; global hash + W512 (ms)",
               f"{PAPER['offline_w512_reorder'].number_text()}; "
               f"{PAPER['offline_hash_w512'].number_text()}",
               "copy cost not modelled; the paper does not specify the hash", "not here")
    claims.add("C8", "App. A", "CPU search time for W2048 ids", paper_text("offline_w2048_search"),
               f"{search_s:.1f} s, our NumPy greedy on this CPU", "simulation")
    return offline, "\n".join(lines)


def model_claims(claims: PaperClaims, cap, numbers: dict) -> tuple[bool, str]:
    """C9–C14: window size, Union4, page pairs, the workspace and the capacity fallback.

    Returns
    -------
    fallback : bool
        The beyond-capacity preset keeps the identity order.
    text : str
    """
    start = len(claims.rows)
    o, s = numbers["original"], numbers["regrouped"]
    net = {w: TAU_NS * (o.union_visits - s[w].union_visits) / 1e3 - c_online_us(w)
           for w in (64, 128)}
    claims.add("C9", "§5.4", "W64 beat W128 on one capture (L39/r1)", "W64 faster there",
               f"model on cap64k: W64 {net[64]:.1f} µs vs W128 {net[128]:.1f} µs net",
               "simulation")
    claims.add("C10", "§5.2", "Union8 vs Union4, same arithmetic (geo. mean)",
               paper_text("vs_union4"),
               f"cap64k original order: KV page rounds {o.c4:,} (g=4) vs {o.union_visits:,} "
               f"(g=8) = {o.c4 / o.union_visits:.3f}x; compute rounds equal (C4)", "simulation")
    ratio = {}
    for name in ("interleaved-32k", "interleaved-64k"):
        c = make_preset(name)
        st = plan_page_pairs(c.topk).stats()
        ratio[name] = st["edges"] * 32768 / traffic_model(c.num_queries, 0, st)["page_pairs"]
    t_cap = traffic_model(cap.num_queries, o.union_visits, plan_page_pairs(cap.topk).stats())
    claims.add("C11", "§5.3", "page union vs FlashInfer, interleaved 32K; 64K",
               "; ".join(_change_text(f"page_union_{c}_flashinfer", f"page_union_{c}")
                         for c in ("32k", "64k")),
               f"byte model, no sharing / page pairs: {ratio['interleaved-32k']:.2f}x; "
               f"{ratio['interleaved-64k']:.2f}x", "simulation")
    claims.add("C12", "§5.3", "L43/r1: page union vs Union8 (ms; ratio)",
               f"{PAPER['page_union_l43'].number_text()} vs "
               f"{PAPER['union8_l43_fig5'].number_text()} "
               f"({PAPER['page_union_l43'].value / PAPER['union8_l43_fig5'].value:.2f}x)",
               "cap64k byte model, page pairs (FP32) / Union8: "
               f"{t_cap['page_pairs'] / t_cap['union8']:.2f}x", "simulation")
    claims.add("C13", "§4.3", "padded partial workspace for 16K queries",
               f"~{paper_text('workspace_gib')}",
               f"{partial_bytes(16384 * 16, 16, 128, 2, 0) / 2**30:.3f} GiB (16 BF16 entries) = "
               f"{partial_bytes(16384 * 8, 16, 128, 4, 0) / 2**30:.3f} GiB (8 FP32 entries), "
               "H=16, D=128", "simulation")
    bc = make_preset("beyond-capacity")
    fallback = bool(np.array_equal(greedy_regroup(bc.topk, Grouping(128), **bc.regroup_kwargs()),
                                   np.arange(bc.num_queries)))
    claims.add("C14", "§4.1", "context > 512 pages keeps the identity order", "identity ids",
               f"beyond-capacity ({int(bc.topk.max()) + 1} pages): identity = {fallback}",
               "exact")
    return fallback, _rows_text(claims.rows[start:], (48, 36))


def _change_text(before: str, after: str) -> str:
    """``1.588 -> 1.340 (-15.6%)`` for two entries of :data:`PAPER`."""
    a, b = PAPER[before], PAPER[after]
    return f"{a.number_text()} -> {b.number_text()} ({100 * (b.value - a.value) / a.value:.1f}%)"
