"""A time estimate for a capture, from a recorded H200 result file (and a GPU, when present).

Union8's complete-call time follows the union visits it schedules (one cluster page step per
visit; chapter 08's "time vs union visits" figure). :func:`time_estimate` fits that line
through the orderings recorded in ``benchmarks/results/union8_<preset>_h200.json`` (original,
W64, W128, W512 and random ids of the preset) and reads this capture's union visits off it. The
online cost C_online (GPU regroup + union preparation) is the recorded one of that preset;
with a GPU here, the regroup kernel is timed live on this capture instead.

It is an estimate, not a measurement: it assumes the recorded shape (16 query heads, one KV
head, head dimension 128, BF16, the recorded P) and the recorded kernel, and its label says
so and names the file it is based on.
"""

from __future__ import annotations

import numpy as np

from ..gpu import device
from ..notebook.live import LiveKernel
from ..records import record_header, recorded_results, result_medians
from ..regroup.bitmap import greedy_regroup

#: The recorded file the estimate is based on, and the orderings its fit uses.
RECORD_STEM = "union8_cap64k_h200"
FIT_ROWS = {"original": "union8_original", "w64": "union8_fixed_w64",
            "w128": "union8_fixed_w128", "w512": "union8_fixed_w512",
            "random": "union8_random_ids"}


def visit_fit(rec: dict) -> tuple[float, float, int]:
    """Least-squares line ``µs = a + b · union visits`` through a record's orderings.

    Returns
    -------
    (a_us, b_us_per_visit, points)
    """
    med, stats = result_medians(rec), rec.get("stats", {})
    pts = [(stats[k]["union_visits"], med[name]) for k, name in FIT_ROWS.items()
           if k in stats and name in med]
    if len(pts) < 2:
        raise ValueError(f"{RECORD_STEM}.json has fewer than two orderings to fit")
    x, y = np.array(pts, dtype=float).T
    b, a = np.polyfit(x, y, 1)
    return float(a), float(b), len(pts)


def live_regroup_us(analysis, windows=(64, 128), reps: int = 50) -> dict[str, float]:
    """Median µs of the GPU regroup kernel on this capture at each W (needs a GPU); every π
    is checked against the CPU one of the analysis first (AssertionError when they differ)."""
    from ..gpu import regroup_launch
    from ..gpu.timing import bench_gpu
    from ..notebook.live import cuda_capture

    cap = analysis.capture
    topk, lengths = cuda_capture(cap, announce=False)  # the page and --json stay clean
    n, k = cap.topk.shape
    out = {}
    for w in windows:
        plan = regroup_launch(n, 1, k, analysis.grouping.with_window(w), cap.request_offsets,
                              cap.page_size)
        perm = plan.run(topk, lengths)
        ref = analysis.perms.get(f"W{w}")
        if ref is not None:
            got = perm.cpu().numpy().reshape(-1)
            assert np.array_equal(got, ref), f"W{w}: GPU π differs from the CPU one"
        out[f"W{w}"] = bench_gpu(lambda plan=plan, perm=perm: plan.run(topk, lengths, perm),
                                 reps)["median_us"]
    return out


def estimate_lines(est: dict) -> list[str]:
    """The estimate as text: what it rests on, then one line per ordering."""
    lines = [f"ESTIMATE, not a measurement. Based on: {est['basis']}.",
             f"{'ordering':10s}{'union visits':>14s}{'est. µs (ids)':>15s}{'C_online µs':>13s}"
             f"{'est. µs (live)':>16s}"]
    for key, r in est["rows"].items():
        c = f"{r['c_online_us']:,.1f}" if "c_online_us" in r else "–"
        o = f"{r['online_us']:,.0f}" if "online_us" in r else "–"
        lines.append(f"{key:10s}{r['union_visits']:>14,}{r['attention_us']:>15,.0f}{c:>13s}"
                     f"{o:>16s}")
    return lines


def _estimate_recorded(records, analysis) -> dict:
    est = time_estimate(analysis, records[RECORD_STEM], live=False)
    print("\n".join(estimate_lines(est)))
    return {k: r["attention_us"] for k, r in est["rows"].items()}


def _estimate_live(records, analysis) -> dict:
    est = time_estimate(analysis, records[RECORD_STEM], live=live_regroup_us)
    print("\n".join(estimate_lines(est)))
    return {k: r.get("online_us", r["attention_us"]) for k, r in est["rows"].items()}


def time_estimate(analysis, record: dict | None = None, live=None) -> dict | None:
    """Estimated Union8 complete-call times of this capture per ordering, or None.

    Parameters
    ----------
    analysis : CaptureAnalysis
    record : dict, optional
        A loaded result file; default ``benchmarks/results/union8_cap64k_h200.json`` (None
        is returned when there is none).
    live : callable or False, optional
        ``live(analysis) -> {"W64": µs, ...}``; default :func:`live_regroup_us` when a GPU
        is present; False: the recorded C_online only.

    Returns
    -------
    dict or None
        ``basis`` (one line: what the estimate rests on), ``record`` (its header),
        ``fit`` (a, b, points), ``rows`` (ordering -> ``attention_us``, ``online_us``,
        ``c_online_us``, ``c_online_source``) and ``caveats`` (list of str).
    """
    if record is None:
        try:
            record = recorded_results(RECORD_STEM)
        except FileNotFoundError:
            return None
    a, b, points = visit_fit(record)
    acc = record.get("accounting", {})
    measured: dict[str, float] = {}
    source = f"recorded on {record.get('workload', 'its preset')}"
    if live is None and device.gpu_available():
        live = live_regroup_us
    if live:
        measured = live(analysis)
        source = "GPU regroup timed live on this capture + recorded preparation"
    prep = result_medians(record).get("gpu_union_prepare", 0.0)
    rows = {}
    for key, s in analysis.stats.items():
        row = {"union_visits": s.union_visits, "attention_us": a + b * s.union_visits}
        w = key.lower()
        if key in measured:
            row["c_online_us"], row["c_online_source"] = measured[key] + prep, source
        elif w in acc and "C_online_us" in acc[w]:
            row["c_online_us"], row["c_online_source"] = acc[w]["C_online_us"], source
        if "c_online_us" in row:
            row["online_us"] = row["attention_us"] + row["c_online_us"]
        rows[key] = row
    cap = analysis.capture
    caveats = ["an estimate, not a measurement of this capture"]
    if cap.page_size != 128:
        caveats.append(f"this capture's P = {cap.page_size}, the recorded one is 128: one union "
                       "visit is not the same amount of work")
    if analysis.group != 8:
        caveats.append(f"g = {analysis.group}: the recorded kernel is Union8 (g = 8)")
    return {
        "basis": (f"linear fit of the recorded H200 Union8 complete-call times against union "
                  f"visits ({points} orderings of {record.get('workload')}, "
                  f"benchmarks/results/{RECORD_STEM}.json): {a:,.1f} µs + {1e3 * b:,.2f} ns "
                  "per union visit; BF16, 16 query heads, one KV head, d = 128"),
        "record": record_header(record).strip(),
        "fit": {"a_us": a, "b_us_per_visit": b, "points": points},
        "rows": rows,
        "caveats": caveats,
    }


#: Chapter 13's live cell: the estimate for a capture (``ESTIMATE.run(analysis=a)``). On a GPU
#: the regroup kernel runs on the capture, is checked against the CPU π and timed; on a CPU
#: the recorded file's C_online stands in.
ESTIMATE = LiveKernel("Union8 time estimate (GPU regroup of this capture, kernels/regroup.cu)",
                      greedy_regroup, (RECORD_STEM,), _estimate_recorded, _estimate_live)
