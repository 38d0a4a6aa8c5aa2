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
from ..records import record_header, recorded_results, result_medians

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
    """Median µs of the GPU regroup kernel on this capture at each W (needs a GPU)."""
    from ..gpu import regroup_launch
    from ..gpu.timing import bench_gpu
    from ..notebook.live import _cuda_inputs

    cap = analysis.capture
    topk, lengths = _cuda_inputs(cap)
    n, k = cap.topk.shape
    out = {}
    for w in windows:
        plan = regroup_launch(n, 1, k, analysis.grouping.with_window(w), cap.request_offsets,
                              cap.page_size)
        perm = plan.run(topk, lengths)
        out[f"W{w}"] = bench_gpu(lambda plan=plan, perm=perm: plan.run(topk, lengths, perm),
                                 reps)["median_us"]
    return out


def time_estimate(analysis, record: dict | None = None, live=None) -> dict | None:
    """Estimated Union8 complete-call times of this capture per ordering, or None.

    Parameters
    ----------
    analysis : CaptureAnalysis
    record : dict, optional
        A loaded result file; default ``benchmarks/results/union8_cap64k_h200.json`` (None
        is returned when there is none).
    live : callable, optional
        ``live(analysis) -> {"W64": µs, ...}``; default :func:`live_regroup_us` when a GPU
        is present (nothing runs on a GPU otherwise).

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
    if live is not None:
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
