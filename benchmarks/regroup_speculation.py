"""Would two greedy groups in flight shorten the regroup kernel's chain? A CPU estimate.

The GPU regroup is W dependent rounds per window (``bench_gpu_regroup_notes.md``). One way to
halve the chain would be to run group k+1 alongside group k in the same warp, speculatively:
its seed is the second-smallest id of R (the smallest seeds group k), and from its pick t on
it skips the picks group k has made before pick t. The speculation pays only where the
speculative group k+1 equals the group Algorithm 1 builds after group k; otherwise group k+1
must be redone from the first difference. This script counts, over every window of each
preset (windows as ``plan_windows`` cuts them), the group pairs where the speculative group is
exact.

Usage: ``python benchmarks/regroup_speculation.py [--presets cap64k,...] [--windows 64,128]``
"""

from __future__ import annotations

import argparse

from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.windows import window_table
from pageweaver_edu.workloads import make_preset


def grow(sets, candidates, seed, group, taken_before=None):
    """Algorithm 1's picks for one group from ``candidates`` (seed first); with
    ``taken_before(t)``, the ids that pick t may no longer take."""
    members, union, avail = [seed], set(sets[seed]), set(candidates) - {seed}
    while len(members) < group and avail:
        if taken_before is not None:
            avail -= taken_before(len(members))
            if not avail:
                break
        best = min(avail, key=lambda j: (len(sets[j] - union), j))
        members.append(best)
        union |= sets[best]
        avail.discard(best)
    return members


def exact_pairs(sets, start, end, group):
    """(group pairs, pairs whose speculative second group is exact) in one window."""
    remaining, pairs, exact = set(range(start, end)), 0, 0
    while remaining:
        first = grow(sets, remaining, min(remaining), group)
        rest = remaining - set(first)
        if rest:
            spec = grow(sets, remaining - {first[0]}, min(remaining - {first[0]}), group,
                        taken_before=lambda t, f=first: set(f[:t]))
            pairs += 1
            exact += spec == grow(sets, rest, min(rest), group)
        remaining = rest
    return pairs, exact


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="cap64k,cap16k-high-overlap,interleaved-64k")
    ap.add_argument("--windows", default="64,128")
    args = ap.parse_args(argv)
    print(f"{'preset':22s} {'W':>4s} {'group pairs':>12s} {'speculation exact':>18s}")
    for name in args.presets.split(","):
        cap = make_preset(name, seed=0)
        for w in (int(x) for x in args.windows.split(",")):
            plan = window_table(cap.topk, Grouping(w), **cap.regroup_kwargs())
            sets = [frozenset(int(p) for p in row if p >= 0) for row in plan.canonical]
            pairs = exact = 0
            for (start, end), ident in zip(plan.windows.tolist(), plan.fallback, strict=True):
                if not ident:
                    p, e = exact_pairs(sets, start, end, 8)
                    pairs, exact = pairs + p, exact + e
            share = 100 * exact / max(pairs, 1)
            print(f"{name:22s} {w:4d} {pairs:12d} {exact:11d} ({share:3.0f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
