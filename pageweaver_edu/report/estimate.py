"""A time estimate for a capture, from the recorded H200 files of the fast kernel.

The kernel is the one-SM warp-specialized FP8 Union8 kernel (``union8ws``, chapter 12). Its
complete-call time follows the work the capture gives it, so :func:`fit_model` fits

    µs = a + b · union visits + c · C4 rounds + d · queries

(per KV head, added over the heads) through every recorded ordering (original, W64, W128) of
every recorded preset: ``benchmarks/results/union8_fp8_<preset>_h200.json`` (cap64k with one
and with eight KV heads, cap16k-high-overlap, interleaved-64k; 12 points). The weights minimise
the relative error. :func:`fit_errors` gives, per recorded point, the fit's error and the error
with the point's whole preset left out of the fit; the estimate declines (``declined``) when a
fitted point is off by more than :data:`MAX_ERROR`. The online cost C_online is the recorded
one of cap64k; with a GPU here the regroup kernel is timed live on this capture instead.

It is an estimate, not a measurement: it assumes the recorded shape (16 query heads per KV
head, head dimension 128, FP8 E4M3 K/V, P = 128) and the recorded kernel; its label says so
and names the files it rests on.
"""

from __future__ import annotations

import numpy as np

from ..gpu import device
from ..notebook.live import LiveKernel
from ..records import record_header, recorded_results, result_medians
from ..regroup.bitmap import greedy_regroup

#: The recorded files the fit uses (one per preset and head count).
RECORD_STEMS = ("union8_fp8_cap64k_h200", "union8_fp8_cap64k_h8_h200",
                "union8_fp8_cap16k-high-overlap_h200", "union8_fp8_interleaved-64k_h200")
#: The file whose recorded C_online the estimate adds (the fast kernel's accounting).
C_ONLINE_STEM = "union8_fp8_cap64k_h200"
#: Ordering key of a file's ``stats`` -> the fast kernel's row of that ordering.
FIT_ROWS = {"original": "union8ws_fp8_original", "w64": "union8ws_fp8_fixed_w64",
            "w128": "union8ws_fp8_fixed_w128"}
#: The terms of the model, in the order of its coefficients.
TERMS = ("call", "union visits", "C4 rounds", "queries")
MAX_ERROR = 0.15  # a fitted point further off than this: no estimate


def load_records(stems=RECORD_STEMS) -> dict[str, dict]:
    """The recorded files that exist, by stem: each stem's own file (its device), so that the
    fit never mixes devices (:data:`ESTIMATE` reads them the same way)."""
    out = {}
    for stem in stems:
        try:
            out[stem] = recorded_results(stem, any_device=False)
        except FileNotFoundError:
            continue
    return out


def fit_points(records: dict[str, dict]) -> list[dict]:
    """One point per recorded (file, ordering): ``preset`` (workload, ``×H`` for H KV heads),
    ``ordering``, ``terms`` (1, union visits, C4 rounds, queries · KV heads: float [4]) and
    ``us`` (the fast kernel's recorded median)."""
    pts = []
    for rec in records.values():
        med, stats = result_medians(rec), rec.get("stats", {})
        heads = int(rec.get("kv_heads", 1))
        preset = rec.get("workload", "?") + (f" ×{heads} KV heads" if heads > 1 else "")
        for key, row in FIT_ROWS.items():
            s = stats.get(key, {})
            if row in med and "union_visits" in s and "c4" in s:
                pts.append({"preset": preset, "ordering": key, "us": med[row],
                            "terms": np.array([1.0, s["union_visits"], s["c4"],
                                               heads * int(rec["queries"])], dtype=float)})
    return pts


def fit_model(points: list[dict]) -> np.ndarray:
    """Coefficients (a µs, b, c, d µs per unit; float64 [4]) minimising the relative error."""
    if len({p["preset"] for p in points}) < 2 or len(points) < len(TERMS):
        raise ValueError("the recorded files hold too few points to fit the model")
    x = np.array([p["terms"] / p["us"] for p in points])
    coef, *_ = np.linalg.lstsq(x, np.ones(len(points)), rcond=None)
    return coef


def fit_errors(points: list[dict]) -> list[dict]:
    """Per point: ``preset``, ``ordering``, ``recorded_us``, ``fit_us`` and ``error`` (the
    fit of all points), ``held_out_us`` and ``held_out_error`` (the fit without the point's
    preset: how the model does on a workload it has not seen). Errors are relative."""
    coef, out = fit_model(points), []
    for p in points:
        rest = [q for q in points if q["preset"] != p["preset"]]
        held = float(p["terms"] @ fit_model(rest)) if len(rest) >= len(TERMS) else float("nan")
        fit = float(p["terms"] @ coef)
        out.append({"preset": p["preset"], "ordering": p["ordering"], "recorded_us": p["us"],
                    "fit_us": fit, "error": fit / p["us"] - 1, "held_out_us": held,
                    "held_out_error": held / p["us"] - 1})
    return out


def error_lines(errors: list[dict]) -> list[str]:
    """The fit's error on every recorded point, as text."""
    lines = [f"{'preset':34s}{'ordering':>9s}{'recorded µs':>13s}{'fit µs':>9s}{'error':>8s}"
             f"{'preset left out':>17s}"]
    for e in errors:
        lines.append(f"{e['preset']:34s}{e['ordering']:>9s}{e['recorded_us']:>13,.1f}"
                     f"{e['fit_us']:>9,.1f}{100 * e['error']:>+7.1f}%"
                     f"{100 * e['held_out_error']:>+16.1f}%")
    return lines


def live_windows(analysis) -> list[int]:
    """The W the regroup kernel is timed at live: W64 and W128 where the analysis reports
    them (the orderings the estimate has records of; a report at other windows times none)."""
    return [w for w in (64, 128) if f"W{w}" in analysis.stats]


def live_regroup_us(analysis, windows=None, reps: int = 50) -> dict[str, float]:
    """Median µs of the GPU regroup kernel on this capture at each W (needs a GPU); every π
    is checked against the CPU one of the analysis first (AssertionError when they differ).
    ``windows`` default: :func:`live_windows`."""
    from ..gpu import regroup_launch
    from ..gpu.timing import bench_gpu
    from ..notebook.live import cuda_capture

    cap = analysis.capture
    topk, lengths = cuda_capture(cap, announce=False)  # the page and --json stay clean
    n, k = cap.topk.shape
    out = {}
    for w in live_windows(analysis) if windows is None else windows:
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
    """The estimate as text: what it rests on, one line per ordering, the fit's errors."""
    lines = [f"ESTIMATE, not a measurement. Based on: {est['basis']}."]
    if est.get("declined"):
        return [*lines, f"No estimate: {est['declined']}", *error_lines(est["errors"])]
    lines.append(f"{'ordering':10s}{'union visits':>14s}{'C4 rounds':>11s}{'est. µs (ids)':>15s}"
                 f"{'C_online µs':>13s}{'est. µs (live)':>16s}")
    for key, r in est["rows"].items():
        c = f"{r['c_online_us']:,.1f}" if "c_online_us" in r else "–"
        o = f"{r['online_us']:,.0f}" if "online_us" in r else "–"
        lines.append(f"{key:10s}{r['union_visits']:>14,}{r['c4']:>11,}"
                     f"{r['attention_us']:>15,.0f}{c:>13s}{o:>16s}")
    return [*lines, "The fit on the recorded points:", *error_lines(est["errors"])]


def _estimate_recorded(records, analysis) -> dict:
    est = time_estimate(analysis, records, live=False)
    print("\n".join(estimate_lines(est)))
    return {k: r["attention_us"] for k, r in est["rows"].items()}


def _estimate_live(records, analysis) -> dict:
    est = time_estimate(analysis, records, live=live_regroup_us)
    print("\n".join(estimate_lines(est)))
    return {k: r.get("online_us", r["attention_us"]) for k, r in est["rows"].items()}


def _c_online(key: str, records: dict, measured: dict) -> tuple[float, str] | None:
    """C_online of ordering ``key`` (e.g. "W128"): live regroup µs, or the recorded one."""
    if key in measured:
        return measured[key], "the GPU regroup timed live on this capture"
    acc = records.get(C_ONLINE_STEM, {}).get("accounting", {})
    rec = acc.get(f"union8ws_{key.lower()}", {})
    if "C_online_us" in rec:
        return rec["C_online_us"], f"recorded on {records[C_ONLINE_STEM].get('workload')}"
    return None


def _caveats(analysis, points: list[dict]) -> list[str]:
    cap, out = analysis.capture, ["an estimate, not a measurement of this capture"]
    if cap.page_size != 128:
        out.append(f"this capture's P = {cap.page_size}, the recorded one is 128: one union "
                   "visit is not the same amount of work")
    if analysis.group != 8:
        out.append(f"g = {analysis.group}: the recorded kernel is Union8 (g = 8)")
    per_q = [p["terms"][1] / p["terms"][3] for p in points]
    s = analysis.stats["original"]
    mine = s.union_visits / max(1, cap.num_queries)
    if not min(per_q) <= mine <= max(per_q):
        out.append(f"this capture's original order has {mine:.2f} union visits per query, "
                   f"outside the recorded {min(per_q):.2f}–{max(per_q):.2f}: an extrapolation")
    return out


def time_estimate(analysis, records: dict | None = None, live=None) -> dict | None:
    """Estimated complete-call times of the fast Union8 kernel on this capture, or None.

    Parameters
    ----------
    analysis : CaptureAnalysis
    records : dict of str to dict, optional
        Loaded result files by stem; default :data:`RECORD_STEMS` (None is returned when
        none of them exists).
    live : callable or False, optional
        ``live(analysis) -> {"W64": µs, ...}``; default :func:`live_regroup_us` when a GPU
        is present; False: the recorded C_online only.

    Returns
    -------
    dict or None
        ``basis`` (one line: what the estimate rests on), ``record`` (the files' headers),
        ``fit`` (``coef`` [a, b, c, d], ``terms``, ``points``), ``errors``
        (:func:`fit_errors`), ``declined`` (why there is no estimate, or None), ``rows``
        (ordering -> ``union_visits``, ``c4``, ``attention_us``, ``online_us``,
        ``c_online_us``, ``c_online_source``; empty when declined) and ``caveats``.
    """
    records = load_records() if records is None else records
    points = fit_points(records)
    if not points:
        return None
    coef, errors = fit_model(points), fit_errors(points)
    worst = max(errors, key=lambda e: abs(e["error"]))
    declined = None
    if abs(worst["error"]) > MAX_ERROR:
        declined = (f"the model misses the recorded {worst['preset']} {worst['ordering']} by "
                    f"{100 * worst['error']:+.1f} % (more than {100 * MAX_ERROR:.0f} %)")
    if live is None and device.gpu_available():
        live = live_regroup_us
    measured = live(analysis) if live and not declined else {}
    rows = {}
    for key, s in ({} if declined else analysis.stats).items():
        x = np.array([1.0, s.union_visits, s.c4, analysis.capture.num_queries])
        row = {"union_visits": s.union_visits, "c4": s.c4, "attention_us": float(x @ coef)}
        c = _c_online(key, records, measured)
        if c is not None:
            row["c_online_us"], row["c_online_source"] = c
            row["online_us"] = row["attention_us"] + c[0]
        rows[key] = row
    a, b, c4, d = coef
    files = ", ".join(f"benchmarks/results/{s}.json" for s in records)
    return {
        "basis": (f"fit of the recorded H200 complete-call times of the one-SM warp-specialized "
                  f"FP8 Union8 kernel ({len(points)} orderings of "
                  f"{len({p['preset'] for p in points})} presets, {files}): {a:,.1f} µs + "
                  f"{1e3 * b:,.2f} ns per union visit + {1e3 * c4:,.2f} ns per C4 round + "
                  f"{1e3 * d:,.2f} ns per query; largest error on a recorded point "
                  f"{100 * abs(worst['error']):.1f} %; FP8 K/V, 16 query heads per KV head, "
                  "d = 128"),
        "record": "; ".join(record_header(r).strip() for r in records.values()),
        "fit": {"coef": [float(v) for v in coef], "terms": TERMS, "points": len(points)},
        "errors": errors,
        "declined": declined,
        "rows": rows,
        "caveats": _caveats(analysis, points),
    }


#: Chapter 13's live cell: the estimate for a capture (``ESTIMATE.run(analysis=a)``). On a GPU
#: the regroup kernel runs on the capture, is checked against the CPU π and timed; on a CPU
#: the recorded C_online stands in.
ESTIMATE = LiveKernel("warp-specialized kernel time estimate "
                      "(GPU regroup of this capture, kernels/regroup.cu)",
                      greedy_regroup, RECORD_STEMS, _estimate_recorded, _estimate_live,
                      any_device=False)
