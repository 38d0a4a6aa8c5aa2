"""Union8 / Union4 attention on the H200: check, then time against the baselines (§6, §8).

Per preset (default ``cap64k``, ``cap16k-high-overlap``, ``interleaved-64k``) and KV-head count
(each head its own Top-K: seeds 0..H-1 of the preset), on random BF16 Q/K/V:

1. correctness: Union8 (original order) vs the float64 reference on sampled rows (NRMS), and
   bitwise equality of every ordering (original, fixed W64/W128/W512, online, random ids,
   Union4) — the outputs are poisoned with NaN before each run;
2. times (CUDA events, L2 flushed and the stream kept busy ahead of every repetition:
   :func:`pageweaver_edu.gpu.timing.bench_gpu`; median of ``--reps``):
   complete calls (§8) — ``union8_original`` (T0: union preparation of the identity π +
   attention), ``union8_fixed_wW`` (T_fixed: preparation of precomputed ids + attention),
   ``union8_online_wW`` (T_online: GPU regroup + preparation + attention), ``union8_random_ids``,
   ``union4_original``; ``*_attn`` rows are the attention kernel alone; baselines
   ``gather_reference`` (torch BF16 gather + SDPA, chunked) and ``flex_attention``
   (torch.compile'd, page-membership mask_mod + BlockMask; compile and mask build reported
   separately);
3. derived: union visits, C4, S_exec = T0 - T_fixed, C_online = T_online - T_fixed,
   S_net = T0 - T_online, TFLOP/s on the C4 work (C4 x 64 rows x 128 tokens x 128 dims x 4).

Writes ``benchmarks/results/union8_<preset>[_hH]_h200.json`` (copied to $OUT when set) and
prints a compact table last.

    python benchmarks/bench_union8.py [--presets cap64k,...] [--heads 1,8] [--reps 30]

The files' ``commit`` is ``$PAGEWEAVER_COMMIT`` when set, else git's HEAD (``+worktree`` when
tracked files differ), else "uncommitted" (:func:`pageweaver_edu.gpu.results.source_commit`).

``--fp8`` runs the FP8 E4M3 kernels (``kernels/union8_fp8.cu``) instead: per preset the same
inputs, K/V quantized once to the paged FP8 cache (per-head scales), checks against the CPU
emulation (:mod:`pageweaver_edu.fp8_emulation`, sampled rows) and float64, bitwise equality of
every ordering, then ``union8_fp8_original`` / ``_fixed_w128`` / ``_online_w128`` /
``union4_fp8_original`` (+ ``_attn`` rows) beside the BF16 ``union8_*`` rows, FlexAttention and
the gather reference of the same run; writes ``union8_fp8_<preset>[_hH]_h200.json``.
``--smoke --fp8`` is the FP8 smoke test (for compute-sanitizer).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
import traceback
from pathlib import Path

import numpy as np

from pageweaver_edu.attention import reference_attention
from pageweaver_edu.gpu.results import result_environment
from pageweaver_edu.regroup_bitmap import greedy_regroup
from pageweaver_edu.union_metrics import union_stats
from pageweaver_edu.union_prep import prepare_unions
from pageweaver_edu.workloads import make_preset

ROOT = Path(__file__).resolve().parents[1]
FLOP_PER_C4_ROUND = 64 * 128 * 128 * 4  # 64 rows x 128 tokens x d=128, QK and PV, 2 flop/FMA
TARGETS = {"vs_flex": 15.0, "vs_gather": 10.0, "tflops_c4": 300.0}
WINDOWS = (64, 128, 512)
ONLINE = (64, 128)


def nrms(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def run_preset(name: str, heads: int, args, env: dict) -> dict:
    import torch

    from pageweaver_edu.attention_baselines import FlexPageAttention, dedup_topk, gather_reference
    from pageweaver_edu.gpu import regroup_plan
    from pageweaver_edu.gpu.timing import bench_gpu
    from pageweaver_edu.union8_launch import UnionAttention, gpu_prepare_plan, plan_from_cpu

    caps = [make_preset(name, seed=h) for h in range(heads)]
    cap = caps[0]
    topk = np.stack([c.topk for c in caps])  # [H, N, K]
    n, kk = topk.shape[1], topk.shape[2]
    pages = int(topk.max()) + 1
    offsets = cap.request_offsets
    gen = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn((n, heads * 16, 128), generator=gen, device="cuda").to(torch.bfloat16)
    k = torch.randn((pages, heads, 128, 128), generator=gen, device="cuda").to(torch.bfloat16)
    v = torch.randn((pages, heads, 128, 128), generator=gen, device="cuda").to(torch.bfloat16)
    cpos = None if cap.causal_pos is None else torch.from_numpy(cap.causal_pos).cuda()
    lens = None if cap.lengths is None else torch.from_numpy(cap.lengths).cuda()
    t32 = torch.from_numpy(topk).to(torch.int32).cuda().contiguous()
    lens64 = None if cap.lengths is None else torch.from_numpy(cap.lengths).to(torch.int64).cuda()

    # ---- orderings (CPU greedy = GPU greedy bit for bit; tests/test_gpu_regroup check that)
    rng = np.random.default_rng(0)
    perms = {"original": [np.arange(n)] * heads}
    for w in WINDOWS:
        t0 = time.perf_counter()
        perms[f"w{w}"] = [greedy_regroup(c.topk, w, 8, **c.regroup_kwargs()) for c in caps]
        if w == 512:
            w512_cpu_s = time.perf_counter() - t0
    perms["random"] = [rng.permutation(n) for _ in range(heads)]
    stats = {}
    for key, ps in perms.items():
        st = [union_stats(c.topk, p, offsets, 8) for c, p in zip(caps, ps, strict=True)]
        stats[key] = {"union_visits": sum(s.union_visits for s in st),
                      "c4": sum(s.c4 for s in st), "edges": sum(s.edges for s in st)}
    plans = {key: plan_from_cpu([prepare_unions(c.topk, p, offsets, 8)
                                 for c, p in zip(caps, ps, strict=True)], n, 8, offsets)
             for key, ps in perms.items()}
    plan4 = plan_from_cpu([prepare_unions(c.topk, None, offsets, 4) for c in caps], n, 4, offsets)
    stats["original_g4"] = {"c4": sum(union_stats(c.topk, None, offsets, 4).union_visits
                                      for c in caps)}
    perm_gpu = {key: torch.from_numpy(np.stack(ps).astype(np.int32)).cuda()
                for key, ps in perms.items()}

    u8 = UnionAttention(q, k, v, cpos, lens, "union8")
    u4 = UnionAttention(q, k, v, cpos, lens, "union4")
    u8s3 = UnionAttention(q, k, v, cpos, lens, "union8", slots=3)
    regroupers = {w: regroup_plan(n, heads, kk, w, 8, 512, offsets, None, cap.page_size)
                  for w in ONLINE}

    # ---- correctness
    def fresh(fn):
        for att in (u8, u4, u8s3):
            att.out.fill_(float("nan"))
        out = fn()
        torch.cuda.synchronize()
        return out.clone()

    base = fresh(lambda: u8.run(plans["original"]))
    rows = np.sort(rng.choice(n, min(n, args.check_rows), replace=False))
    ref = np.concatenate([reference_attention(
        q[rows, h * 16:(h + 1) * 16].float().cpu(), k[:, h].float().cpu(), v[:, h].float().cpu(),
        topk[h, rows], lengths=None if cap.lengths is None else cap.lengths[rows],
        causal_pos=None if cap.causal_pos is None else cap.causal_pos[rows])
        for h in range(heads)], axis=1)
    check = {"nrms_vs_float64": nrms(base[torch.from_numpy(rows).cuda()].float().cpu(), ref),
             "all_rows_written": not bool(torch.isnan(base).any())}
    same = {}
    for key in plans:
        same[key] = bool(torch.equal(base, fresh(lambda key=key: u8.run(plans[key]))))
    for w in ONLINE:
        same[f"online_w{w}"] = bool(torch.equal(base, fresh(lambda w=w: u8.run(gpu_prepare_plan(
            t32, regroupers[w].run(t32, lens64), 8, offsets)))))
    same["union4"] = bool(torch.equal(base, fresh(lambda: u4.run(plan4))))
    same["union8_3slots"] = bool(torch.equal(base, fresh(lambda: u8s3.run(plans["w128"]))))
    check["bitwise_identical"] = same

    # ---- timings
    results = []

    def add(rname, fn, reps=args.reps, c4=None, **extra):
        r = bench_gpu(fn, reps=reps, warmup=3, spin_us=args.spin_us)
        row = {"name": rname, "median_us": round(r["median_us"], 2),
               "p10_us": round(r["p10_us"], 2), "p90_us": round(r["p90_us"], 2), "reps": reps}
        if c4 is not None:
            row["tflops_c4"] = round(c4 * FLOP_PER_C4_ROUND / (r["median_us"] * 1e6), 1)
        row.update(extra)
        results.append(row)
        print(f"  {rname:34s} {row['median_us']:11.1f} us", flush=True)
        return row["median_us"]

    ident = perm_gpu["original"]
    t = {}
    t["T0"] = add("union8_original", lambda: u8.run(gpu_prepare_plan(t32, ident, 8, offsets)),
                  c4=stats["original"]["c4"])
    add("union8_original_attn", lambda: u8.run(plans["original"]), c4=stats["original"]["c4"])
    add("union4_original", lambda: u4.run(gpu_prepare_plan(t32, ident, 4, offsets)),
        c4=stats["original_g4"]["c4"])
    add("union4_original_attn", lambda: u4.run(plan4), c4=stats["original_g4"]["c4"])
    for w in WINDOWS:
        pw = perm_gpu[f"w{w}"]
        c4 = stats[f"w{w}"]["c4"]
        t[f"fixed{w}"] = add(f"union8_fixed_w{w}",
                             lambda pw=pw: u8.run(gpu_prepare_plan(t32, pw, 8, offsets)), c4=c4,
                             **({"cpu_regroup_s": round(w512_cpu_s, 3)} if w == 512 else {}))
        add(f"union8_fixed_w{w}_attn", lambda w=w: u8.run(plans[f"w{w}"]), c4=c4)
    add("union8_fixed_w128_3slots_attn", lambda: u8s3.run(plans["w128"]), c4=stats["w128"]["c4"])
    for w in ONLINE:
        rg = regroupers[w]
        t[f"online{w}"] = add(
            f"union8_online_w{w}",
            lambda rg=rg: u8.run(gpu_prepare_plan(t32, rg.run(t32, lens64), 8, offsets)),
            c4=stats[f"w{w}"]["c4"])
        add(f"gpu_regroup_w{w}", lambda rg=rg: rg.run(t32, lens64))
    add("gpu_union_prepare", lambda: gpu_prepare_plan(t32, ident, 8, offsets))
    add("union8_random_ids", lambda: u8.run(gpu_prepare_plan(t32, perm_gpu["random"], 8, offsets)),
        c4=stats["random"]["c4"])

    # ---- baselines
    ids = dedup_topk(t32)
    gout = torch.empty_like(q)

    def gather():
        return gather_reference(q, k, v, ids, cpos, lens, chunk=args.gather_chunk, out=gout)

    gather()
    torch.cuda.synchronize()
    check["gather_nrms_vs_union8"] = nrms(gout.float().cpu(), base.float().cpu())
    t["gather"] = add("gather_reference", gather, reps=args.baseline_reps, chunk=args.gather_chunk)
    if name in args.flex_presets and heads == 1:
        for block in args.flex_blocks:
            try:
                fx = FlexPageAttention(q, k, v, ids, cpos, lens, block=block)
                check[f"flex_{block[0]}x{block[1]}_nrms_vs_union8"] = nrms(
                    fx.result().float().cpu(), base.float().cpu())
                t.setdefault("flex", []).append(add(
                    f"flex_attention_q{block[0]}_kv{block[1]}", fx, reps=args.baseline_reps,
                    mask_build_s=round(fx.mask_build_s, 3), compile_s=round(fx.compile_s, 2)))
                del fx
            except Exception as exc:  # report and carry on with the other measurements
                check[f"flex_{block[0]}x{block[1]}_error"] = f"{type(exc).__name__}: {exc}"[:500]
                print("flex failed:", check[f"flex_{block[0]}x{block[1]}_error"], flush=True)

    # ---- accounting (§8) and targets
    acct = {}
    for w in ONLINE:
        acct[f"w{w}"] = {"S_exec_us": round(t["T0"] - t[f"fixed{w}"], 2),
                         "C_online_us": round(t[f"online{w}"] - t[f"fixed{w}"], 2),
                         "S_net_us": round(t["T0"] - t[f"online{w}"], 2)}
    best = min(t[f"fixed{w}"] for w in WINDOWS)
    best = min(best, t["T0"], *(t[f"online{w}"] for w in ONLINE))
    summary = {"best_union8_us": best, "speedup_vs_gather": round(t["gather"] / best, 2)}
    if "flex" in t:
        summary["speedup_vs_flex"] = round(min(t["flex"]) / best, 2)
    return {**env, "workload": name, "kv_heads": heads, "queries": n, "pages": pages,
            "stats": stats, "accounting": acct, "summary": summary, "targets": TARGETS,
            "check": check, "results": results}


def smoke() -> int:
    """A tiny end-to-end call (2 KV heads, tail groups, causal + lengths, Union8 and Union4,
    CPU and GPU plans) for compute-sanitizer and as a hang check before the long runs."""
    import torch

    from pageweaver_edu.gpu import gpu_greedy_regroup
    from pageweaver_edu.union8_launch import gpu_prepare_plan, plan_from_cpu, union_attention

    rng = np.random.default_rng(0)
    n, pages, heads = 37, 9, 2
    topk = rng.integers(-1, pages, size=(heads, n, 5))
    cpos = rng.integers(0, pages * 128, size=n)
    lens = rng.integers(1, pages * 128, size=n)
    q = torch.randn((n, heads * 16, 128), device="cuda").to(torch.bfloat16)
    k = torch.randn((pages, heads, 128, 128), device="cuda").to(torch.bfloat16)
    v = torch.randn((pages, heads, 128, 128), device="cuda").to(torch.bfloat16)
    c, ln = torch.from_numpy(cpos).cuda(), torch.from_numpy(lens).cuda()
    outs = []
    for g in (8, 4):
        plan = plan_from_cpu([prepare_unions(topk[h], None, None, g) for h in range(heads)], n, g)
        out = torch.full_like(q, float("nan"))
        outs.append(union_attention(q, k, v, plan, c, ln, out=out))
    t32 = torch.from_numpy(topk).to(torch.int32).cuda().contiguous()
    out = torch.full_like(q, float("nan"))
    outs.append(union_attention(q, k, v, gpu_prepare_plan(t32, gpu_greedy_regroup(t32, 8, 8)),
                                c, ln, out=out))
    torch.cuda.synchronize()
    ref = np.concatenate([reference_attention(
        q[:, h * 16:(h + 1) * 16].float().cpu(), k[:, h].float().cpu(), v[:, h].float().cpu(),
        topk[h], lengths=lens, causal_pos=cpos) for h in range(heads)], axis=1)
    errs = [nrms(o.float().cpu(), ref) for o in outs]
    same = all(torch.equal(outs[0], o) for o in outs[1:])
    print(f"smoke: nrms {[f'{e:.2e}' for e in errs]}, bitwise identical {same}, "
          f"NaN {any(bool(torch.isnan(o).any()) for o in outs)}", flush=True)
    return 0 if max(errs) < 1e-2 and same else 1


FP8_DENSE_PEAK_TFLOPS = 1979.0  # H100/H200 SXM dense FP8 tensor-core peak (datasheet)
FP8_TARGETS = {"vs_bf16_union8": 1.5, "vs_flex": 25.0, "fraction_of_fp8_peak_c4": 0.40,
               "s_net_w128_us": 0.0}
PAPER_MS = {"T0": 1.36633, "T_fixed": 1.27037, "T_online": 1.30792,
            "note": "arXiv:2610.11201 §5 on its L43/r1 64K capture: different inputs"}


def run_preset_fp8(name: str, heads: int, args, env: dict) -> dict:
    """FP8 Union8 / Union4 on one preset: checks, then complete-call timings (see __doc__)."""
    import torch

    from pageweaver_edu.attention_baselines import FlexPageAttention, dedup_topk, gather_reference
    from pageweaver_edu.fp8_emulation import Fp8KV, fp8_union_attention, reference_on_cache
    from pageweaver_edu.gpu import regroup_plan
    from pageweaver_edu.gpu.timing import bench_gpu
    from pageweaver_edu.union8_fp8_launch import Fp8UnionAttention, fp8_cache_from_bf16
    from pageweaver_edu.union8_launch import UnionAttention, gpu_prepare_plan, plan_from_cpu

    caps = [make_preset(name, seed=h) for h in range(heads)]
    cap = caps[0]
    topk = np.stack([c.topk for c in caps])  # [H, N, K]
    n, kk = topk.shape[1], topk.shape[2]
    pages = int(topk.max()) + 1
    offsets = cap.request_offsets
    gen = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn((n, heads * 16, 128), generator=gen, device="cuda").to(torch.bfloat16)
    k = torch.randn((pages, heads, 128, 128), generator=gen, device="cuda").to(torch.bfloat16)
    v = torch.randn((pages, heads, 128, 128), generator=gen, device="cuda").to(torch.bfloat16)
    cache = fp8_cache_from_bf16(k, v)
    cpos = None if cap.causal_pos is None else torch.from_numpy(cap.causal_pos).cuda()
    lens = None if cap.lengths is None else torch.from_numpy(cap.lengths).cuda()
    t32 = torch.from_numpy(topk).to(torch.int32).cuda().contiguous()
    lens64 = None if cap.lengths is None else torch.from_numpy(cap.lengths).to(torch.int64).cuda()

    rng = np.random.default_rng(0)
    perms = {"original": [np.arange(n)] * heads,
             "w128": [greedy_regroup(c.topk, 128, 8, **c.regroup_kwargs()) for c in caps],
             "random": [rng.permutation(n) for _ in range(heads)]}
    stats = {}
    for key, ps in perms.items():
        st = [union_stats(c.topk, p, offsets, 8) for c, p in zip(caps, ps, strict=True)]
        stats[key] = {"union_visits": sum(s.union_visits for s in st),
                      "c4": sum(s.c4 for s in st), "edges": sum(s.edges for s in st)}
    stats["original_g4"] = {"c4": sum(union_stats(c.topk, None, offsets, 4).union_visits
                                      for c in caps)}
    plans = {key: plan_from_cpu([prepare_unions(c.topk, p, offsets, 8)
                                 for c, p in zip(caps, ps, strict=True)], n, 8, offsets)
             for key, ps in perms.items()}
    plan4 = plan_from_cpu([prepare_unions(c.topk, None, offsets, 4) for c in caps], n, 4, offsets)
    perm_gpu = {key: torch.from_numpy(np.stack(ps).astype(np.int32)).cuda()
                for key, ps in perms.items()}
    f8 = Fp8UnionAttention(q, cache, cpos, lens, "union8")
    f4 = Fp8UnionAttention(q, cache, cpos, lens, "union4")
    f8s3 = Fp8UnionAttention(q, cache, cpos, lens, "union8", slots=3)
    b8 = UnionAttention(q, k, v, cpos, lens, "union8")
    b4 = UnionAttention(q, k, v, cpos, lens, "union4")
    rg = regroup_plan(n, heads, kk, 128, 8, 512, offsets, None, cap.page_size)

    # ---- correctness (outputs poisoned with NaN before every run)
    def fresh(fn):
        for att in (f8, f4, f8s3, b8):
            att.out.fill_(float("nan"))
        out = fn()
        torch.cuda.synchronize()
        return out.clone()

    base = fresh(lambda: f8.run(plans["original"]))
    rows = np.sort(rng.choice(n, min(n, args.check_rows), replace=False))
    lg = cache.logical
    kv = Fp8KV(lg.k8.cpu(), lg.v8.cpu(), lg.k_scale.cpu(), lg.v_scale.cpu())
    qs, ts = q[torch.from_numpy(rows).cuda()].cpu(), topk[:, rows]
    cs = None if cap.causal_pos is None else cap.causal_pos[rows]
    ls = None if cap.lengths is None else cap.lengths[rows]
    got = base[torch.from_numpy(rows).cuda()].float().cpu()
    t0 = time.perf_counter()
    emu = fp8_union_attention(qs, kv, ts, cs, ls).float()
    emu_s = time.perf_counter() - t0
    ref_cache = reference_on_cache(qs, kv, ts, cs, ls)
    ref_bf16 = np.concatenate([reference_attention(
        qs[:, h * 16:(h + 1) * 16].double(), k[:, h].double().cpu(), v[:, h].double().cpu(),
        ts[h], lengths=ls, causal_pos=cs) for h in range(heads)], axis=1)
    bf16_out = fresh(lambda: b8.run(plans["original"]))
    check = {"nrms_vs_float64": nrms(got, ref_cache),
             "nrms_vs_emulation": nrms(got, emu),
             "emulation_nrms_vs_float64": nrms(emu, ref_cache),
             "nrms_vs_float64_bf16_kv": nrms(got, ref_bf16),
             "nrms_vs_bf16_union8": nrms(base.float().cpu(), bf16_out.float().cpu()),
             "checked_rows": len(rows), "emulation_s": round(emu_s, 2),
             "all_rows_written": not bool(torch.isnan(base).any())}
    same = {key: bool(torch.equal(base, fresh(lambda key=key: f8.run(plans[key]))))
            for key in plans}
    same["online_w128"] = bool(torch.equal(base, fresh(lambda: f8.run(gpu_prepare_plan(
        t32, rg.run(t32, lens64), 8, offsets)))))
    same["union4"] = bool(torch.equal(base, fresh(lambda: f4.run(plan4))))
    same["union8_3slots"] = bool(torch.equal(base, fresh(lambda: f8s3.run(plans["w128"]))))
    check["bitwise_identical"] = same
    print(f"  check: nrms vs float64 {check['nrms_vs_float64']:.3e}, vs emulation "
          f"{check['nrms_vs_emulation']:.3e}, bitwise {all(same.values())}", flush=True)

    # ---- timings
    results = []

    def add(rname, fn, reps=args.reps, c4=None, **extra):
        r = bench_gpu(fn, reps=reps, warmup=3, spin_us=args.spin_us)
        row = {"name": rname, "median_us": round(r["median_us"], 2),
               "p10_us": round(r["p10_us"], 2), "p90_us": round(r["p90_us"], 2), "reps": reps}
        if c4 is not None:
            tf = c4 * FLOP_PER_C4_ROUND / (r["median_us"] * 1e6)
            row["tflops_c4"] = round(tf, 1)
            row["fraction_of_fp8_peak_c4"] = round(tf / FP8_DENSE_PEAK_TFLOPS, 3)
        row.update(extra)
        results.append(row)
        print(f"  {rname:34s} {row['median_us']:11.1f} us", flush=True)
        return row["median_us"]

    ident, p128 = perm_gpu["original"], perm_gpu["w128"]
    c4o, c4w, c4u4 = stats["original"]["c4"], stats["w128"]["c4"], stats["original_g4"]["c4"]
    t = {}
    t["T0"] = add("union8_fp8_original", lambda: f8.run(gpu_prepare_plan(t32, ident, 8, offsets)),
                  c4=c4o)
    add("union8_fp8_original_attn", lambda: f8.run(plans["original"]), c4=c4o)
    t["u4"] = add("union4_fp8_original", lambda: f4.run(gpu_prepare_plan(t32, ident, 4, offsets)),
                  c4=c4u4)
    add("union4_fp8_original_attn", lambda: f4.run(plan4), c4=c4u4)
    t["fixed"] = add("union8_fp8_fixed_w128",
                     lambda: f8.run(gpu_prepare_plan(t32, p128, 8, offsets)), c4=c4w)
    add("union8_fp8_fixed_w128_attn", lambda: f8.run(plans["w128"]), c4=c4w)
    add("union8_fp8_fixed_w128_3slots_attn", lambda: f8s3.run(plans["w128"]), c4=c4w)
    t["online"] = add("union8_fp8_online_w128", lambda: f8.run(gpu_prepare_plan(
        t32, rg.run(t32, lens64), 8, offsets)), c4=c4w)
    add("union8_fp8_random_ids", lambda: f8.run(gpu_prepare_plan(
        t32, perm_gpu["random"], 8, offsets)), c4=stats["random"]["c4"])
    add("gpu_regroup_w128", lambda: rg.run(t32, lens64))
    # BF16 kernels of the same run (for the ratios; names as in the BF16 result files)
    t["bf16_T0"] = add("union8_original",
                       lambda: b8.run(gpu_prepare_plan(t32, ident, 8, offsets)), c4=c4o)
    t["bf16_fixed"] = add("union8_fixed_w128",
                          lambda: b8.run(gpu_prepare_plan(t32, p128, 8, offsets)), c4=c4w)
    t["bf16_online"] = add("union8_online_w128", lambda: b8.run(gpu_prepare_plan(
        t32, rg.run(t32, lens64), 8, offsets)), c4=c4w)
    add("union4_original", lambda: b4.run(gpu_prepare_plan(t32, ident, 4, offsets)), c4=c4u4)

    # ---- baselines
    ids = dedup_topk(t32)
    gout = torch.empty_like(q)

    def gather():
        return gather_reference(q, k, v, ids, cpos, lens, chunk=args.gather_chunk, out=gout)

    t["gather"] = add("gather_reference", gather, reps=args.baseline_reps, chunk=args.gather_chunk)
    if name in args.flex_presets and heads == 1:
        for block in args.flex_blocks:
            try:
                fx = FlexPageAttention(q, k, v, ids, cpos, lens, block=block)
                t.setdefault("flex", []).append(add(
                    f"flex_attention_q{block[0]}_kv{block[1]}", fx, reps=args.baseline_reps,
                    mask_build_s=round(fx.mask_build_s, 3), compile_s=round(fx.compile_s, 2)))
                del fx
            except Exception as exc:  # report and carry on
                check[f"flex_{block[0]}x{block[1]}_error"] = f"{type(exc).__name__}: {exc}"[:500]

    # ---- accounting (§8) and targets
    acct = {"w128": {"S_exec_us": round(t["T0"] - t["fixed"], 2),
                     "C_online_us": round(t["online"] - t["fixed"], 2),
                     "S_net_us": round(t["T0"] - t["online"], 2)}}
    best = min(t["T0"], t["fixed"], t["online"])
    best_bf16 = min(t["bf16_T0"], t["bf16_fixed"], t["bf16_online"])
    best_c4 = c4o if best == t["T0"] else c4w
    tf_best = best_c4 * FLOP_PER_C4_ROUND / (best * 1e6)
    summary = {"best_union8_fp8_us": best, "best_union8_bf16_us": best_bf16,
               "speedup_vs_bf16_union8": round(best_bf16 / best, 3),
               "speedup_vs_gather": round(t["gather"] / best, 2),
               "union8_over_union4_fp8": round(t["u4"] / t["T0"], 3),
               "tflops_c4_best": round(tf_best, 1),
               "fraction_of_fp8_peak_c4": round(tf_best / FP8_DENSE_PEAK_TFLOPS, 3),
               "T0_T_fixed_T_online_ms": [round(t["T0"] / 1e3, 4), round(t["fixed"] / 1e3, 4),
                                          round(t["online"] / 1e3, 4)],
               "paper_ms": PAPER_MS}
    if "flex" in t:
        summary["speedup_vs_flex"] = round(min(t["flex"]) / best, 2)
    return {**env, "kernel": "fp8_e4m3", "workload": name, "kv_heads": heads, "queries": n,
            "pages": pages, "stats": stats, "accounting": acct, "summary": summary,
            "targets": FP8_TARGETS, "check": check, "results": results}


def smoke_fp8() -> int:
    """Tiny FP8 end-to-end call (2 KV heads, tail groups, causal + lengths, Union8 / Union4,
    CPU and GPU plans) for compute-sanitizer and as a hang check."""
    import torch

    from pageweaver_edu.fp8_emulation import Fp8KV, fp8_union_attention, reference_on_cache
    from pageweaver_edu.gpu import gpu_greedy_regroup
    from pageweaver_edu.union8_fp8_launch import fp8_cache_from_bf16
    from pageweaver_edu.union8_fp8_launch import fp8_union_attention as run_fp8
    from pageweaver_edu.union8_launch import gpu_prepare_plan, plan_from_cpu

    rng = np.random.default_rng(0)
    n, pages, heads = 37, 9, 2
    topk = rng.integers(-1, pages, size=(heads, n, 5))
    cpos = rng.integers(0, pages * 128, size=n)
    lens = rng.integers(1, pages * 128, size=n)
    q = torch.randn((n, heads * 16, 128), device="cuda").to(torch.bfloat16)
    k = torch.randn((pages, heads, 128, 128), device="cuda").to(torch.bfloat16)
    v = torch.randn((pages, heads, 128, 128), device="cuda").to(torch.bfloat16)
    cache = fp8_cache_from_bf16(k, v)
    c, ln = torch.from_numpy(cpos).cuda(), torch.from_numpy(lens).cuda()
    outs = []
    for g in (8, 4):
        plan = plan_from_cpu([prepare_unions(topk[h], None, None, g) for h in range(heads)], n, g)
        out = torch.full_like(q, float("nan"))
        outs.append(run_fp8(q, cache, plan, c, ln, out=out))
    t32 = torch.from_numpy(topk).to(torch.int32).cuda().contiguous()
    out = torch.full_like(q, float("nan"))
    outs.append(run_fp8(q, cache, gpu_prepare_plan(t32, gpu_greedy_regroup(t32, 8, 8)), c, ln,
                        out=out))
    torch.cuda.synchronize()
    lg = cache.logical
    kv = Fp8KV(lg.k8.cpu(), lg.v8.cpu(), lg.k_scale.cpu(), lg.v_scale.cpu())
    ref = reference_on_cache(q.cpu(), kv, topk, cpos, lens)
    emu = fp8_union_attention(q.cpu(), kv, topk, cpos, lens).float()
    errs = [nrms(o.float().cpu(), ref) for o in outs]
    e_emu = nrms(outs[0].float().cpu(), emu)
    same = all(torch.equal(outs[0], o) for o in outs[1:])
    print(f"smoke fp8: nrms vs float64 {[f'{e:.2e}' for e in errs]}, vs emulation {e_emu:.2e}, "
          f"bitwise identical {same}, NaN {any(bool(torch.isnan(o).any()) for o in outs)}",
          flush=True)
    return 0 if max(errs) < 0.04 and e_emu < 0.01 and same else 1


def print_fp8_table(records) -> None:
    print("\nFP8 preset        H  T0_us  fixed128  online128  S_net  U8/U4  xBF16  xflex  "
          "TF/s(C4) peak%  nrms     vs_emu   bitwise")
    for r in records:
        try:
            m = {x["name"]: x for x in r["results"]}
            s, c = r["summary"], r["check"]
            flex = s.get("speedup_vs_flex", float("nan"))
            print(f"{r['workload']:17s} {r['kv_heads']:2d} "
                  f"{m['union8_fp8_original']['median_us']:6.0f} "
                  f"{m['union8_fp8_fixed_w128']['median_us']:8.0f} "
                  f"{m['union8_fp8_online_w128']['median_us']:9.0f} "
                  f"{r['accounting']['w128']['S_net_us']:6.1f} {s['union8_over_union4_fp8']:6.3f} "
                  f"{s['speedup_vs_bf16_union8']:5.2f} {flex:6.1f}"
                  f"  {s['tflops_c4_best']:7.1f} {100 * s['fraction_of_fp8_peak_c4']:5.1f}  "
                  f"{c['nrms_vs_float64']:.2e} {c['nrms_vs_emulation']:.2e} "
                  f"{all(c['bitwise_identical'].values())}")
        except KeyError as exc:
            print(r["workload"], r["kv_heads"], "incomplete:", exc)
    print("paper (different inputs, arXiv:2610.11201): T0 1.366, T_fixed 1.270, T_online "
          "1.308 ms; Union8/Union4 1.075x; NRMS 2.2-4.0%")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="cap64k,cap16k-high-overlap,interleaved-64k")
    ap.add_argument("--heads", default="1", help="KV-head counts for every preset")
    ap.add_argument("--more-heads", default="cap64k:8", help="extra PRESET:H runs, comma list")
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--baseline-reps", type=int, default=8)
    ap.add_argument("--spin-us", type=float, default=150.0)
    ap.add_argument("--check-rows", type=int, default=128)
    ap.add_argument("--gather-chunk", type=int, default=2048)
    ap.add_argument("--flex-presets", default="cap64k")
    ap.add_argument("--flex-blocks", default="128x128")
    ap.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--smoke", action="store_true", help="tiny check only (for the sanitizer)")
    ap.add_argument("--fp8", action="store_true",
                    help="run the FP8 E4M3 kernels (union8_fp8.cu) and write union8_fp8_*.json")
    args = ap.parse_args(argv)
    if args.smoke:
        return smoke_fp8() if args.fp8 else smoke()
    args.flex_presets = [p for p in args.flex_presets.split(",") if p]
    args.flex_blocks = [tuple(int(x) for x in b.split("x")) for b in args.flex_blocks.split(",")
                        if b]
    from pageweaver_edu.device import require_gpu

    require_gpu()
    env = result_environment(ROOT)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    records = []
    runs = [(p, int(h)) for p in args.presets.split(",") if p for h in args.heads.split(",")]
    runs += [(x.split(":")[0], int(x.split(":")[1])) for x in args.more_heads.split(",") if x]
    for name, heads in runs:
        print(f"== {name}, {heads} KV head(s)", flush=True)
        try:
            rec = (run_preset_fp8 if args.fp8 else run_preset)(name, heads, args, env)
        except Exception:
            traceback.print_exc()
            continue
        stem = (f"union8{'_fp8' if args.fp8 else ''}_{name}"
                + ("" if heads == 1 else f"_h{heads}") + "_h200")
        path = out_dir / f"{stem}.json"
        path.write_text(json.dumps(rec, indent=1) + "\n", encoding="utf-8")
        if os.environ.get("OUT"):
            shutil.copy(path, Path(os.environ["OUT"]) / path.name)
        records.append(rec)
    if args.fp8:
        print_fp8_table(records)
        return 0
    print("\npreset            H  T0_us  fixed128  online128  S_exec  C_onl  S_net  "
          "TF/s(C4)  gather_x  flex_x  nrms    bitwise")
    for r in records:
        try:
            m = {x["name"]: x for x in r["results"]}
            a = r["accounting"]["w128"]
            best = min((x for x in r["results"] if x["name"].startswith("union8_")
                        and not x["name"].endswith("_attn") and "tflops_c4" in x),
                       key=lambda x: x["median_us"])
            ok = all(r["check"]["bitwise_identical"].values())
            print(f"{r['workload']:17s} {r['kv_heads']:2d} "
                  f"{m['union8_original']['median_us']:7.0f} "
                  f"{m['union8_fixed_w128']['median_us']:8.0f} "
                  f"{m['union8_online_w128']['median_us']:9.0f}"
                  f" {a['S_exec_us']:7.1f} {a['C_online_us']:6.1f} {a['S_net_us']:6.1f} "
                  f"{best['tflops_c4']:8.1f}  {r['summary']['speedup_vs_gather']:7.1f}  "
                  f"{r['summary'].get('speedup_vs_flex', float('nan')):6.1f}  "
                  f"{r['check']['nrms_vs_float64']:.2e}  {ok}")
        except KeyError as exc:
            print(r["workload"], r["kv_heads"], "incomplete:", exc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
