"""Latency of every widget update of the notebook series, at up to 2,048 queries.

Each case is the plain function a widget callback runs (compute + in-place ``FigureWidget``
redraw, no browser): median and max over ``--runs`` timed calls (``time.perf_counter``)
after ``--warmup`` calls. Target: every update within 100 ms for up to 2,048
queries.

Prints a table and writes ``benchmarks/results/widget_latency.json``
``{"device", "date", "commit", "python", "results": [{"name", "n", "median_ms", "max_ms"}]}``.

Usage: ``python benchmarks/bench_widget_latency.py [--runs 20] [--warmup 2] [--out PATH]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.progress import progress
from pageweaver_edu.records import cpu_model, source_commit

ROOT = Path(__file__).resolve().parent
TARGET_MS = 100.0
N = 2048

Case = tuple[str, int, Callable[[int], object]]  # name, queries, call(i) for the i-th run


def regroup_cases(presets) -> Iterator[Case]:
    """Chapter 03: round stepper, grouping view, W curve."""
    from pageweaver_edu.notebook import regroup as vr

    steps = {"g3 example": vr.greedy_steps(vr.G3_EXAMPLE, Grouping(6, 3)),
             "cap64k W64": vr.greedy_steps(presets["cap64k"].topk[:N], Grouping(64))}
    for label, st in steps.items():
        fig = vr.round_view_figure(st, 0)
        rounds = len(st.trace.rounds)
        yield (f"03 update_round_view ({label})", len(st.perm),
               lambda i, f=fig, s=st, r=rounds: vr.update_round_view(f, s, (i * 37) % r))
    fig = vr.grouping_view_figure()
    for name, g, w in (("cap64k", 8, 128), ("cap64k", 8, 512), ("cap16k-high-overlap", 2, 512),
                       ("interleaved-64k", 4, 256), ("beyond-capacity", 8, 128)):
        cap = presets[name]
        kw = {"lengths": None if cap.lengths is None else cap.lengths[:N],
              "page_size": cap.page_size}
        yield (f"03 update_grouping_view ({name}, g={g}, W={w})", N,
               lambda i, c=cap, g=g, w=w, kw=kw: vr.update_grouping_view(fig, c.topk[:N], g, w,
                                                                         **kw))
    curve = vr.window_curve_figure()
    for name, g in (("cap64k", 8), ("cap16k-high-overlap", 2), ("interleaved-64k", 4)):
        cap = presets[name]
        kw = {"lengths": None if cap.lengths is None else cap.lengths[:N],
              "page_size": cap.page_size}
        yield (f"03 update_window_curve ({name}, g={g}, W={g}…512)", N,
               lambda i, c=cap, g=g, kw=kw: vr.update_window_curve(curve, c.topk[:N], g, **kw))


def supports_cases(presets) -> Iterator[Case]:
    """Chapters 01–02: token strip, group mask, preset profile."""
    from pageweaver_edu.notebook import supports as vs

    strip = vs.token_strip_figure(widget=True)
    yield ("01 update_token_strip (P=128, 16 pages)", 1,
           lambda i: vs.update_token_strip(strip, [0, 3, 5, 9, 15], 128, 2000 + i, 1900 + i))
    mask = vs.mask_figure(widget=True)
    top = presets["cap64k"].topk[:N]
    yield ("02 update_group_mask (cap64k group)", 8,
           lambda i: vs.update_group_mask(mask, top[8 * i:8 * i + 8].tolist()))
    prof, mask2 = vs.profile_figure(widget=True), vs.mask_figure(widget=True)
    yield ("02 update_preset_profile (cap64k)", N,
           lambda i: vs.update_preset_profile(prof, mask2, top, N, 8, i % 256))


def bitmap_cases(presets) -> Iterator[Case]:
    """Chapters 04–05: CTA round stepper, slot map, union histogram."""
    from pageweaver_edu.core.union_plan import prepare_unions
    from pageweaver_edu.notebook import bitmap as vb
    from pageweaver_edu.notebook import union as vu
    from pageweaver_edu.regroup.bitmap import greedy_regroup

    cap = presets["cap64k"]
    top = cap.topk[:N]
    stepper = vb.CtaStepper(top, window=128, index=0)
    yield ("04 CtaStepper.update (round step, W=128)", N,
           lambda i: stepper.update(128, 0, i % 128))
    yield ("04 CtaStepper.update (new window, W=128)", N,
           lambda i: stepper.update(128, 1 + i % 15, 0))
    plan = prepare_unions(top, greedy_regroup(top, Grouping(128)))
    smap = vu.slot_map_figure(plan, 0, widget=True)
    yield ("05 update_slot_map (cap64k)", N, lambda i: vu.update_slot_map(smap, plan, i % 256))
    counts, title = vu.union_hist_for(cap, N)
    hist = vu.union_hist_figure(counts, widget=True, title=title)
    yield ("05 union_hist_for + update_union_hist (cap64k)", N,
           lambda i: vu.update_union_hist(hist, *vu.union_hist_for(cap, N - 64 * (i % 2))))


def pipeline_cases(presets) -> Iterator[Case]:
    """Chapter 06: simulate + timeline redraw, and the pipeline explorer."""
    from pageweaver_edu.core.union_plan import prepare_unions
    from pageweaver_edu.notebook import pipeline as vp
    from pageweaver_edu.notebook import pipeline_plot as pp
    from pageweaver_edu.regroup.bitmap import greedy_regroup
    from pageweaver_edu.replay.pipeline import Durations, flags_from_masks, simulate

    top = presets["cap64k"].topk[:N]
    plan = prepare_unions(top, greedy_regroup(top, Grouping(128)))
    g = int(np.argmax(plan.page_counts))
    pages, masks = plan.group_pages(g)
    flags = flags_from_masks(masks)
    widget = pp.timeline_widget(simulate(pages, flags))
    yield (f"06 simulate + update_timeline_widget ({len(pages)} pages)", 8,
           lambda i: pp.update_timeline_widget(
               widget, simulate(pages, flags, Durations(qk=1.0 + 0.25 * (i % 4)))))
    ex = vp.pipeline_explorer(pages, flags, n_show=len(pages))
    yield (f"06 PipelineExplorer.update ({len(pages)} pages)", 8, lambda i: ex.update())


def time_case(call: Callable[[int], object], runs: int, warmup: int) -> list[float]:
    """Milliseconds of ``runs`` calls after ``warmup`` calls."""
    for i in range(warmup):
        call(i)
    out = []
    for i in range(runs):
        t0 = time.perf_counter()
        call(warmup + i)
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timed calls per case (>= 20)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "widget_latency.json")
    args = parser.parse_args(argv)
    runs = max(20, args.runs)

    from pageweaver_edu.workloads import make_preset, preset_names

    presets = {name: make_preset(name) for name in preset_names()}
    results = []
    for source in (regroup_cases, supports_cases, bitmap_cases, pipeline_cases):
        for name, n, call in progress(list(source(presets)), desc=source.__name__,
                                      unit="case"):
            ms = time_case(call, runs, args.warmup)
            results.append({"name": name, "n": n, "median_ms": round(statistics.median(ms), 2),
                            "max_ms": round(max(ms), 2)})

    report = {"device": cpu_model(), "date": dt.datetime.now(dt.timezone.utc).isoformat(
        timespec="seconds"), "commit": source_commit(), "python": platform.python_version(),
        "runs": runs, "target_ms": TARGET_MS, "results": results}
    width = max(len(r["name"]) for r in results)
    print(f"{report['device']} · Python {report['python']} · {runs} timed calls per case")
    print(f"{'widget update':<{width}} {'N':>5} {'median ms':>10} {'max ms':>8}  ≤100 ms?")
    for r in results:
        ok = "yes" if r["median_ms"] <= TARGET_MS else "NO"
        print(f"{r['name']:<{width}} {r['n']:>5} {r['median_ms']:>10.2f} {r['max_ms']:>8.2f}"
              f"  {ok}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    main()
