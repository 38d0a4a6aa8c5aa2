"""CPU greedy-regroup timing on the cap64k preset.

Times the vectorized bitmap regroup (:func:`pageweaver_edu.regroup.bitmap.greedy_regroup`)
at W64 and W128 (median of ``--runs`` timed calls after one warm-up call) and the readable
set-based version once at W128, checks that both give the same π, prints a table and writes
``benchmarks/results/cpu_regroup.json``. Target: W128 <= 150 ms on a 2-core CPU.

Usage: ``python benchmarks/bench_cpu_regroup.py [--runs 7] [--out PATH]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.progress import progress
from pageweaver_edu.records import cpu_model, source_commit
from pageweaver_edu.regroup.bitmap import greedy_regroup
from pageweaver_edu.regroup.sets import greedy_regroup_sets
from pageweaver_edu.workloads import make_preset

ROOT = Path(__file__).resolve().parent
TARGET_W128_MS = 150.0


def time_calls(fn, runs: int, warmup: int = 1) -> list[float]:
    """Wall times of ``runs`` calls of ``fn`` in microseconds, after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return times


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per window (>= 7)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "cpu_regroup.json")
    args = parser.parse_args(argv)
    runs = max(7, args.runs)

    cap = make_preset("cap64k")
    kwargs = cap.regroup_kwargs()
    results, perms = [], {}
    for w in progress((64, 128), desc="cpu regroup", unit="W"):
        perms[w] = greedy_regroup(cap.topk, Grouping(w), **kwargs)
        times = time_calls(lambda w=w: greedy_regroup(cap.topk, Grouping(w), **kwargs), runs)
        results.append(
            {
                "name": f"cpu_regroup_w{w}",
                "median_us": round(statistics.median(times), 1),
                "runs": runs,
            }
        )
    t0 = time.perf_counter()
    perm_sets = greedy_regroup_sets(cap.topk, Grouping(128), **kwargs)
    sets_us = (time.perf_counter() - t0) * 1e6
    if not np.array_equal(perm_sets, perms[128]):
        raise SystemExit("set-based and bitmap regroup disagree on cap64k W128")
    results.append({"name": "cpu_regroup_sets_w128", "median_us": round(sets_us, 1), "runs": 1})

    report = {
        "device": cpu_model(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": source_commit(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "workload": "cap64k",
        "results": results,
    }
    print(f"cap64k: N = {cap.num_queries}, K = {cap.topk.shape[1]}  ({report['device']})")
    print(f"{'name':<24} {'median ms':>10} {'runs':>5}")
    for r in results:
        print(f"{r['name']:<24} {r['median_us'] / 1e3:>10.2f} {r['runs']:>5}")
    w128_ms = results[1]["median_us"] / 1e3
    verdict = "meets" if w128_ms <= TARGET_W128_MS else "MISSES"
    print(f"W128 bitmap {w128_ms:.1f} ms {verdict} the {TARGET_W128_MS:.0f} ms target")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    main()
