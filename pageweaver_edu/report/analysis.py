"""The numbers of a capture report: the series' measures, computed once for one capture.

:func:`analyze_capture` validates the capture once (one window table), regroups it at each
report window (W64 / W128 / W512 by default), and collects what the chapters measure on the
presets: support sizes |S_i| (chapter 01), union visits, C4 and ρ_Q per ordering (chapters
02 and 05), ρ_Q for every W = g, 2g, … 512 (chapter 03's window curve), the gain per request
and per chunk, and the chunks the capacity fallback keeps in identity order (chapter 03). All
of it is the library's own code; this module only arranges the calls.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..core.budget import check_regroup_work, check_scan_work
from ..core.capture import Capture
from ..core.grouping import Grouping
from ..core.inputs import PageWeaverInputError
from ..core.progress import progress
from ..core.supports import support_sizes
from ..core.union_metrics import UnionStats, union_stats, window_visits
from ..core.windows import WindowTable, window_table
from ..notebook.regroup_cases import doubling_windows, fallback_report, window_curve
from ..regroup.bitmap import regroup_table
from . import REPORT_WINDOWS

MAX_REPORT_CHUNKS = 1 << 16  #: (request, chunk) pairs a report lists, one by one
CURVE_LARGEST = 512  #: the ρ_Q curve runs W = g, 2g, 4g, … up to 512 (or g when g is larger)


@dataclass
class CaptureAnalysis:
    """Everything a report shows about one capture (see :func:`analyze_capture`).

    Attributes
    ----------
    source : str
        Where the capture came from (a path or a preset name).
    capture : Capture
    table : WindowTable
        The validated rows, requests, chunks and capacity fallback (one per capture).
    supports : numpy.ndarray of int64, shape [N]
        |S_i| per query.
    perms : dict of str to numpy.ndarray or None
        π per ordering: ``"original"`` (None) and ``"W<w>"`` for each report window.
    stats : dict of str to UnionStats
        Union visits, C4, ρ_Q and |U_G| per ordering.
    grouping_ms : dict of str to float
        CPU wall time of each regroup (ms).
    curve : dict
        :func:`pageweaver_edu.notebook.regroup_cases.window_curve` (union visits per W).
    chunks : list of dict
        One per (request, chunk): ``request``, ``start``, ``end``, ``fallback`` and
        ``visits`` (ordering -> union visits of the chunk's groups).
    fallback_lines : list of str
        The capacity-fallback verdict of the first window of every chunk that falls back.
    """

    source: str
    capture: Capture
    table: WindowTable
    supports: np.ndarray
    perms: dict
    stats: dict[str, UnionStats]
    grouping_ms: dict[str, float]
    curve: dict
    chunks: list[dict] = field(default_factory=list)
    fallback_lines: list[str] = field(default_factory=list)
    _gains: list[dict] | None = field(default=None, repr=False)

    @property
    def group(self) -> int:
        return self.table.group

    @property
    def grouping(self) -> Grouping:
        return self.table.grouping

    def change_pct(self, key: str) -> float:
        """Union visits of ordering ``key`` against the original order, in percent."""
        base = self.stats["original"].union_visits
        return 100.0 * (self.stats[key].union_visits - base) / base if base else 0.0

    def request_gains(self) -> list[dict]:
        """The chunks' union visits added up per request: ``request``, ``queries``,
        ``chunks``, ``fallback_chunks`` and ``visits`` (ordering -> union visits); computed
        once (the page and the summary both list them)."""
        if self._gains is None:
            self._gains = self._sum_per_request() if self.chunks else []
        return self._gains

    def _sum_per_request(self) -> list[dict]:
        columns = {"queries": [c["end"] - c["start"] for c in self.chunks],
                   "chunks": [1] * len(self.chunks),
                   "fallback_chunks": [int(c["fallback"]) for c in self.chunks]}
        columns |= {key: [c["visits"][key] for c in self.chunks] for key in self.perms}
        requests, first = np.unique([c["request"] for c in self.chunks], return_index=True)
        sums = {k: np.add.reduceat(np.asarray(v, dtype=np.int64), first).tolist()
                for k, v in columns.items()}  # the chunks come in request order
        return [{"request": int(r), "queries": sums["queries"][i], "chunks": sums["chunks"][i],
                 "fallback_chunks": sums["fallback_chunks"][i],
                 "visits": {key: sums[key][i] for key in self.perms}}
                for i, r in enumerate(requests)]


def analyze_capture(capture: Capture, source: str = "capture", *, group: int = 8,
                    capacity: int = 512, chunk_size: int | None = None,
                    windows=REPORT_WINDOWS, quiet: bool = False) -> CaptureAnalysis:
    """Regroup ``capture`` at each of ``windows`` and measure it the way the series does.

    Parameters
    ----------
    capture : Capture
    source : str
        Shown as the capture's name.
    group, capacity, chunk_size : int
        g, B and the prefill chunk size (:class:`~pageweaver_edu.core.grouping.Grouping`).
    windows : sequence of int
        Report windows W (multiples of g).
    quiet : bool
        No progress bar (``--json``); otherwise one shows on a terminal after a few seconds.

    Raises
    ------
    PageWeaverInputError
        A capture or grouping the regroup refuses (one line, as the CLI prints it).
    """
    groupings = [Grouping(int(w), group, capacity, chunk_size) for w in windows]
    table = window_table(capture.topk, Grouping(group, group, capacity, chunk_size),
                         **capture.regroup_kwargs())
    if table.canonical.shape[0] == 0:
        raise PageWeaverInputError("the capture has no query rows (N = 0): nothing to report")
    if len(table.chunks) > MAX_REPORT_CHUNKS:
        raise PageWeaverInputError(
            f"the report lists every (request, chunk): {len(table.chunks):,} is more than the "
            f"limit {MAX_REPORT_CHUNKS:,}; use pageweaver analyze, or a larger --chunk-size")
    curve_windows = doubling_windows(group, max(CURVE_LARGEST, group))
    check_scan_work(capture.topk.size, 4 + len(groupings) + len(curve_windows), "the report")
    check_regroup_work(table, [g.window for g in groupings] + curve_windows, "the report")
    rows, offsets = table.canonical, table.request_offsets
    perms: dict = {"original": None}
    ms: dict[str, float] = {}
    steps = [f"W{g.window}" for g in groupings] + ["W curve", "chunks"]
    bar = progress(desc="report", total=len(steps), quiet=quiet)
    try:
        for grouping in groupings:
            bar.set_postfix_str(f"regroup W{grouping.window}")
            start = time.perf_counter()
            perms[f"W{grouping.window}"] = regroup_table(table.for_window(grouping.window))
            ms[f"W{grouping.window}"] = round(1e3 * (time.perf_counter() - start), 3)
            bar.update()
        stats = {k: union_stats(rows, p, offsets, group) for k, p in perms.items()}
        bar.set_postfix_str("ρ_Q per W")
        curve = window_curve(table, curve_windows,
                             perms={g.window: perms[f"W{g.window}"] for g in groupings})
        bar.update()
        chunks = _chunk_gains(table, stats)
        lines = _fallback_lines(capture, table)
        bar.update()
    finally:
        bar.close()
    return CaptureAnalysis(source, capture, table, support_sizes(rows), perms, stats, ms,
                           curve, chunks, lines)


def _one_window_per_chunk(table: WindowTable) -> Grouping:
    """A grouping whose window is as wide as the capture: cut by the chunk table, it is
    exactly one window per (request, chunk) (groups never cross a chunk)."""
    n, g = table.canonical.shape[0], table.group
    return table.grouping.with_window(g * max(1, -(-n // g)))


def _chunk_gains(table: WindowTable, stats: dict[str, UnionStats]) -> list[dict]:
    """Union visits per (request, chunk) and ordering."""
    whole = _one_window_per_chunk(table)
    per = {key: window_visits(table.canonical, None, whole, table.request_offsets,
                              union_sizes=s.union_sizes) for key, s in stats.items()}
    requests = np.searchsorted(table.request_offsets, table.chunks[:, 0], side="right") - 1
    return [{"request": int(requests[c]), "start": int(start), "end": int(end),
             "fallback": bool(table.chunk_fallback[c]),
             "visits": {key: int(v[c]) for key, v in per.items()}}
            for c, (start, end) in enumerate(table.chunks)]


def _fallback_lines(capture: Capture, table: WindowTable) -> list[str]:
    """Chapter 03's fallback verdict for every chunk that keeps the identity order."""
    if not table.chunk_fallback.any():
        return []
    lines = fallback_report(capture.topk, _one_window_per_chunk(table),
                            request_offsets=capture.request_offsets, lengths=capture.lengths,
                            page_size=capture.page_size)
    return [line for line, fb in zip(lines, table.chunk_fallback, strict=True) if fb]


def analysis_summary(a: CaptureAnalysis) -> dict:
    """The JSON-able numbers of a report (``pageweaver report --json``)."""
    cap, sizes = a.capture, a.supports
    curve = a.curve
    return {
        "capture": a.source,
        "queries": cap.num_queries,
        "requests": cap.num_requests,
        "k": int(cap.topk.shape[1]),
        "page_size": int(cap.page_size),
        "group": a.group,
        "capacity": a.grouping.capacity,
        "chunk_size": a.grouping.chunk_size,
        "edges": a.stats["original"].edges,
        "pages_referenced": int(np.unique(a.table.canonical[a.table.canonical >= 0]).size),
        "support_sizes": {"min": int(sizes.min()) if sizes.size else 0,
                          "mean": round(float(sizes.mean()), 3) if sizes.size else 0.0,
                          "max": int(sizes.max(initial=0)), "empty": int((sizes == 0).sum())},
        "union_visits": {k: s.union_visits for k, s in a.stats.items()},
        "c4": {k: s.c4 for k, s in a.stats.items()},
        "rho": {k: None if np.isnan(s.rho) else round(float(s.rho), 4)
                for k, s in a.stats.items()},
        "change_pct": {k: round(a.change_pct(k), 3) for k in a.stats if k != "original"},
        "grouping_ms": a.grouping_ms,
        "rho_per_window": {f"W{w}": (round(curve["edges"] / v, 4) if v else None)
                           for w, v in zip(curve["windows"], curve["visits"], strict=True)},
        "chunks": len(a.chunks),
        "chunks_in_fallback": int(sum(c["fallback"] for c in a.chunks)),
        "requests_detail": a.request_gains(),
    }
