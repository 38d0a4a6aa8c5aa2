"""Launch the Union8 kernels on one preset for a profiler (Nsight Compute), nothing else.

Builds the preset's inputs exactly as ``benchmarks/bench_union8.py`` does (one KV head,
seeded random Q/K/V, CPU plan of the W128 greedy order), warms every kernel up once, then
launches each kernel ``--reps`` times. Profile one launch of each with, e.g.:

    ncu --clock-control none -k regex:union --launch-skip 2 --launch-count 4 --set full \
        -o union8 python3 tools/profile_union8.py --preset cap64k

(``--clock-control none`` leaves the clocks alone, as the timings in the result files do.)
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="cap64k")
    ap.add_argument("--kernels", default="union8_fp8,union4_fp8,union8_bf16,union4_bf16")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    import torch

    from pageweaver_edu.regroup_bitmap import greedy_regroup
    from pageweaver_edu.union8_fp8_launch import Fp8UnionAttention, fp8_cache_from_bf16
    from pageweaver_edu.union8_launch import UnionAttention, plan_from_cpu
    from pageweaver_edu.union_prep import prepare_unions
    from pageweaver_edu.workloads import make_preset

    cap = make_preset(args.preset)
    n = cap.topk.shape[0]
    pages = int(cap.topk.max()) + 1
    gen = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn((n, 16, 128), generator=gen, device="cuda").to(torch.bfloat16)
    k = torch.randn((pages, 1, 128, 128), generator=gen, device="cuda").to(torch.bfloat16)
    v = torch.randn((pages, 1, 128, 128), generator=gen, device="cuda").to(torch.bfloat16)
    cpos = None if cap.causal_pos is None else torch.from_numpy(cap.causal_pos).cuda()
    lens = None if cap.lengths is None else torch.from_numpy(cap.lengths).cuda()
    perm = greedy_regroup(cap.topk, 128, 8, **cap.regroup_kwargs())
    plans = {g: plan_from_cpu([prepare_unions(cap.topk, perm if g == 8 else None,
                                              cap.request_offsets, g)], n, g, cap.request_offsets)
             for g in (8, 4)}
    cache = fp8_cache_from_bf16(k, v)
    runs = {}
    for name in args.kernels.split(","):
        kind, dtype = name.split("_")
        if dtype == "fp8":
            att = Fp8UnionAttention(q, cache, cpos, lens, kind)
        else:
            att = UnionAttention(q, k, v, cpos, lens, kind)
        runs[name] = (att, plans[8 if kind == "union8" else 4])
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
