"""The fused online plan in the notebooks (docs/definitions.md#fused-online-plan).

* :func:`row_layout` — chapter 05: where group G's pages sit in the fused plan's rows of g·K
  entries, beside the CSR offsets of the two-pass preparation;
* :data:`FUSED_PLAN` — chapter 05's live cell: ``regroup_plan_pairs_w<W>`` (π and the plan in
  one launch) checked against the CPU regroup and union preparation, timed beside the regroup
  alone; recorded: the FP8 benchmark's rows;
* :func:`online_waterfalls`, :func:`online_table` — chapter 08: C_online of the
  warp-specialized kernel with the two launches of regroup and preparation and with the fused
  one, from one run per file.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..core.grouping import Grouping
from ..core.union_plan import UnionPlan, prepare_unions
from ..records import list_records, recorded_results
from ..records.files import ROOT, record_header
from ..regroup.bitmap import greedy_regroup
from ..workloads.presets import make_preset
from .live import HEADER, LiveKernel, _row, cuda_capture
from .online_cost import waterfall_trace
from .style import style

#: The FP8 benchmark's file that records the fused kernel on cap64k (one KV head).
FP8_STEM = "union8_fp8_cap64k_h200"
WINDOWS = (64, 128)


def row_layout(plan: UnionPlan, per_group: int) -> dict:
    """The fused plan's layout of a CPU plan: group G's pages at ``G * per_group``.

    Parameters
    ----------
    plan : UnionPlan
    per_group : int
        Entries of a group's row, g·K (at least every group's |U_G|).

    Returns
    -------
    dict
        ``csr_offsets`` and ``row_offsets`` (int64 ``[G]``, where each group starts),
        ``counts`` (``[G]``), ``csr_entries`` (Σ|U_G|) and ``row_entries`` (G·g·K).
    """
    counts = plan.page_counts.astype(np.int64)
    if counts.size and int(counts.max()) > per_group:
        raise ValueError(f"a group holds {int(counts.max())} pages, more than {per_group}")
    groups = len(counts)
    return {"csr_offsets": plan.page_offsets[:-1].astype(np.int64),
            "row_offsets": np.arange(groups, dtype=np.int64) * per_group, "counts": counts,
            "csr_entries": int(counts.sum()), "row_entries": groups * per_group}


def regroup_and_prepare(topk, grouping: Grouping, **kw) -> UnionPlan:
    """The CPU ground truth of the fused kernel: greedy_regroup, then prepare_unions."""
    perm = greedy_regroup(topk, grouping, **kw)
    return prepare_unions(topk, perm, kw.get("request_offsets"), grouping.group)


def _names(windows) -> list[str]:
    return [name for w in windows for name in (f"gpu_regroup_w{w}", f"gpu_regroup_plan_w{w}")]


def _fused_recorded(records, windows=WINDOWS, **_) -> dict:
    rec = records[FP8_STEM]
    rows = {r["name"]: r["median_us"] for r in rec.get("results", [])}
    print(HEADER)
    for name in _names(windows):
        print(_row(name, rows.get(name)))
    return {name: rows[name] for name in _names(windows) if name in rows}


def _fused_live(records, windows=WINDOWS, preset: str = "cap64k", reps: int = 200) -> dict:
    from ..gpu import regroup_launch, regroup_plan_launch
    from ..gpu.timing import bench_gpu

    cap = make_preset(preset)
    n, k = cap.topk.shape
    kw = cap.regroup_kwargs()
    topk, lengths = cuda_capture(cap)
    out, lines = {}, [HEADER]
    for w in windows:
        fused = regroup_plan_launch(n, 1, k, Grouping(w), cap.request_offsets, cap.page_size)
        got = fused.run(topk, lengths).to_cpu()
        ref = regroup_and_prepare(cap.topk, Grouping(w), **kw)
        bad = [f for f in ("perm", "page_offsets", "pages", "masks", "cta_any", "page_counts")
               if not np.array_equal(getattr(ref, f), getattr(got, f))]
        assert not bad, f"W{w}: the fused plan differs from the CPU reference in {bad}"
        alone = regroup_launch(n, 1, k, Grouping(w), cap.request_offsets, cap.page_size)
        out[f"gpu_regroup_w{w}"] = bench_gpu(lambda a=alone: a.run(topk, lengths),
                                             reps)["median_us"]
        out[f"gpu_regroup_plan_w{w}"] = bench_gpu(lambda f=fused: f.run(topk, lengths),
                                                  reps)["median_us"]
        lines += [_row(f"gpu_regroup_w{w}", out[f"gpu_regroup_w{w}"]),
                  _row(f"gpu_regroup_plan_w{w}", out[f"gpu_regroup_plan_w{w}"], True)]
    print("\n".join(lines))
    return out


#: Chapter 05: the fused online regroup on cap64k at W64 and W128, beside the regroup alone
#: (``gpu_regroup_w<W>``); the plan checked field for field. Inputs: ``windows``, ``preset``,
#: ``reps``.
FUSED_PLAN = LiveKernel("fused online regroup, kernels/regroup.cu (regroup_plan_pairs_w<W>)",
                        regroup_and_prepare, (FP8_STEM,), _fused_recorded, _fused_live)


def fused_records(root: str = str(ROOT)) -> list[dict]:
    """The current FP8 result files (no commit in the name) that hold the fused online plan's
    accounting, by path."""
    return [rec for rec in list_records(root, "union8_fp8_*_h200")
            if "union8ws_w128" in rec.get("accounting", {})]


def online_waterfalls(stem: str = FP8_STEM, window: int = 128) -> go.Figure | None:
    """T0 → −S_exec → +C_online → T_online of the warp-specialized FP8 Union8 in one run: the
    online plan from two launches (regroup, then union preparation) and from the fused one.
    None (and a printed line) when the file was recorded before the fused plan existed."""
    rec = recorded_results(stem)
    us = {r["name"]: r["median_us"] for r in rec["results"]}
    if f"union8ws_fp8_online_w{window}_twopass" not in us:
        print(f"benchmarks/results/{stem}.json (commit {rec.get('commit')}) was recorded before "
              "the fused online plan: no two-launch row beside it")
        return None
    t0, tf = us["union8ws_fp8_original"], us[f"union8ws_fp8_fixed_w{window}"]
    before = us[f"union8ws_fp8_online_w{window}_twopass"]
    after = us[f"union8ws_fp8_online_w{window}"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        f"regroup + union preparation: C_online {before - tf:+.1f} µs",
        f"fused online plan: C_online {after - tf:+.1f} µs"), shared_yaxes=True)
    fig.add_trace(waterfall_trace(t0, tf, before, 1), 1, 1)
    fig.add_trace(waterfall_trace(t0, tf, after, 1), 1, 2)
    fig.update_layout(showlegend=False)
    fig.update_yaxes(rangemode="normal")
    return style(fig, f"warp-specialized kernel, {rec['workload']}, W{window}: one run "
                      f"({rec['date'][:10]}, commit {rec['commit']})", "term of eq. 7",
                 "time (µs)", height=420)


def online_table(records=None, header: bool = True) -> str:
    """Markdown: per file (preset, KV heads) and W, the fused kernel alone, C_online with the
    fused plan (the difference of the two rows, and the median difference of interleaved pairs
    of the two calls where the file has it) and with the two launches, and S_net, of the
    warp-specialized kernel; above it (``header``), each run's device, date and commit once."""
    records = fused_records() if records is None else records
    if not records:
        return "No recorded FP8 file holds the fused online plan's accounting yet."
    head = "\n".join(sorted({"* " + record_header(r).strip() for r in records}))
    lines = ([f"Recorded runs:\n\n{head}\n"] if header else []) + [
             "| preset | KV heads | W | fused kernel, µs | regroup alone, µs | T0, µs | "
             "T_fixed, µs | T_online, µs | C_online (fused), µs | C_online (fused, pairs), µs "
             "| C_online (two launches), µs | S_net, µs |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for rec in records:
        us = {r["name"]: r["median_us"] for r in rec["results"]}
        for w in WINDOWS:
            a = rec["accounting"].get(f"union8ws_w{w}")
            if a is None:
                continue
            paired = a.get("C_online_paired_us")
            paired = "–" if paired is None else f"{paired:+.1f}"
            lines.append(
                f"| {rec['workload']} | {rec.get('kv_heads', 1)} | {w} "
                f"| {us[f'gpu_regroup_plan_w{w}']:.1f} | {us[f'gpu_regroup_w{w}']:.1f} "
                f"| {us['union8ws_fp8_original']:,.0f} | {us[f'union8ws_fp8_fixed_w{w}']:,.0f} "
                f"| {us[f'union8ws_fp8_online_w{w}']:,.0f} | {a['C_online_us']:+.1f} "
                f"| {paired} | {a['C_online_twopass_us']:+.1f} | {a['S_net_us']:+.1f} |")
    return "\n".join(lines)
