"""Launch the Union kernels on one preset for a profiler (Nsight Compute), nothing else.

Builds the preset's inputs with ``union8_bench_common.preset_inputs`` (one KV head, the same
seeded Q/K/V as ``bench_union8.py``) and the CPU plan of the W128 greedy order, warms every
kernel up once, then launches each kernel ``--reps`` times. Profile one launch of each with:

    ncu --clock-control none -k regex:'^union[48]' --launch-skip 6 --launch-count 6 \
        --set full -o union8 python3 benchmarks/profile_union8.py --reps 1

(``--clock-control none`` leaves the clocks alone, as the timings in the result files do.)
"""

from __future__ import annotations

import argparse
import sys

from union8_bench_common import preset_inputs

from pageweaver_edu.core.grouping import Grouping


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="cap64k")
    ap.add_argument("--kernels", default="union8_fp8,union4_fp8,union8_bf16,union4_bf16,"
                                          "union8ws_fp8,union8ws_fp8acc,union8ws_bf16")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    import torch

    from pageweaver_edu.core.union_plan import prepare_unions
    from pageweaver_edu.gpu import (
        Bf16UnionAttention,
        Bf16WsUnionAttention,
        Fp8UnionAttention,
        Fp8WsUnionAttention,
        GpuUnionPlan,
        fp8_cache_from_bf16,
    )
    from pageweaver_edu.regroup.bitmap import greedy_regroup

    x = preset_inputs(args.preset, 1)
    perm = greedy_regroup(x.cap.topk, Grouping(128), **x.cap.regroup_kwargs())
    plans = {g: GpuUnionPlan.from_cpu([prepare_unions(x.cap.topk, perm if g == 8 else None,
                                                      x.offsets, g)]) for g in (8, 4)}
    cache = fp8_cache_from_bf16(x.k, x.v)
    runs = {}
    for name in args.kernels.split(","):
        kind, dtype = name.split("_")
        fp8 = {"union8ws": Fp8WsUnionAttention}.get(kind, Fp8UnionAttention)
        bf16 = {"union8ws": Bf16WsUnionAttention}.get(kind, Bf16UnionAttention)
        if dtype in ("fp8", "fp8acc"):  # fp8acc: the accurate mode of union8ws
            att = fp8(x.q, cache, x.cpos, x.lens, **({"accurate": True} if dtype == "fp8acc"
                                                     else {}))
        else:
            att = bf16(x.q, (x.k, x.v), x.cpos, x.lens)
        runs[name] = (att, plans[4 if kind == "union4" else 8])
    for att, plan in runs.values():  # compile + warm up, outside the profiled launches
        att.run(plan)
    torch.cuda.synchronize()
    for name, (att, plan) in runs.items():
        for _ in range(args.reps):
            att.run(plan)
        torch.cuda.synchronize()
        print(f"{name}: {args.reps} launches, {plan.num_groups} groups", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
