"""The ``--fp8`` path of ``bench_union8.py`` (see its docstring): FP8 E4M3 Union8 / Union4
(``kernels/union8_fp8.cu``) on a preset's inputs, checked against the CPU emulation and
float64, timed beside the BF16 kernels and the baselines of the same run; the smoke test and
the table. A sibling module of the script, like ``union8_bench_common.py``.
"""

from __future__ import annotations

import time

import numpy as np
import peers_flashinfer as peers
import union8_bench_common as common
from union8_bench_common import nrms

from pageweaver_edu.core.attention import reference_attention
from pageweaver_edu.core.grouping import Grouping

FP8_DENSE_PEAK_TFLOPS = 1979.0  # H100/H200 SXM dense FP8 tensor-core peak (datasheet)
FP8_TARGETS = {"vs_bf16_union8": 1.5, "vs_flex": 25.0, "fraction_of_fp8_peak_c4": 0.40,
               "s_net_w128_us": 0.0}
ONLINE_WINDOWS = (64, 128)  # W of the online and fixed union8ws rows
PAPER_MS = {"T0": 1.36633, "T_fixed": 1.27037, "T_online": 1.30792,
            "note": "arXiv:2610.11201 §5 on its L43/r1 64K capture: different inputs"}


def run_preset_fp8(name: str, heads: int, args, env: dict) -> dict:
    """FP8 Union8 / Union4 on one preset: checks, then complete-call timings (see __doc__)."""
    import torch

    from pageweaver_edu.gpu import (
        Bf16UnionAttention,
        Bf16WsUnionAttention,
        Fp8UnionAttention,
        Fp8WsUnionAttention,
        fp8_cache_from_bf16,
        regroup_launch,
        regroup_plan_launch,
    )
    from pageweaver_edu.gpu.regroup import PAIRS_MAX_K
    from pageweaver_edu.gpu.timing import bench_gpu_difference
    from pageweaver_edu.replay.fp8 import fp8_union_attention, reference_on_cache

    x = common.preset_inputs(name, heads)
    cap, n, offsets, q, k, v = x.cap, x.n, x.offsets, x.q, x.k, x.v
    cpos, lens, t32, lens64 = x.cpos, x.lens, x.t32, x.lens64
    prepare = x.prepare
    cache = fp8_cache_from_bf16(k, v)
    rng = np.random.default_rng(0)
    o = common.prepare_orderings(x, ONLINE_WINDOWS, rng)
    stats, plans, plan4, perm_gpu = o.stats, o.plans, o.plan4, o.perm_gpu
    f8 = Fp8UnionAttention(q, cache, cpos, lens)
    f4 = Fp8UnionAttention(q, cache, cpos, lens)  # run with g = 4 plans: Union4
    f8s3 = Fp8UnionAttention(q, cache, cpos, lens, slots=3)
    b8 = Bf16UnionAttention(q, (k, v), cpos, lens)
    b4 = Bf16UnionAttention(q, (k, v), cpos, lens)
    ws = Fp8WsUnionAttention(q, cache, cpos, lens)
    wss = Fp8WsUnionAttention(q, cache, cpos, lens, overlap=False)
    wsa = Fp8WsUnionAttention(q, cache, cpos, lens, accurate=True)
    wsb = Bf16WsUnionAttention(q, (k, v), cpos, lens)
    # the online plan: the fused regroup (one launch, docs/definitions.md#fused-online-plan);
    # "twopass": the regroup, then the union preparation (two more launches), as before it.
    # The fused kernel takes K <= 16; beyond it the online plan is the two launches.
    fusable = x.kk <= PAIRS_MAX_K
    fused = {w: regroup_plan_launch(n, heads, x.kk, Grouping(w), offsets, cap.page_size)
             for w in ONLINE_WINDOWS if fusable}
    regroups = {w: regroup_launch(n, heads, x.kk, Grouping(w), offsets, cap.page_size)
                for w in ONLINE_WINDOWS}

    def fixed(w):  # the plan of the fixed ids at W, prepared in the call (T_fixed)
        return prepare(perm_gpu[f"w{w}"])

    def online(w):
        return fused[w].run(t32, lens64) if fusable else twopass(w)

    def twopass(w):
        return prepare(regroups[w].run(t32, lens64))

    # ---- correctness (outputs poisoned with NaN before every run)
    fresh = common.poisoned(f8, f4, f8s3, b8, ws, wss, wsa)
    base = fresh(lambda: f8.run(plans["original"]))
    rows = np.sort(rng.choice(n, min(n, args.check_rows), replace=False))
    kv = cache.logical.to("cpu")
    qs, ts, cs, ls = x.check_rows(rows)
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
             "all_rows_written": not bool(torch.isnan(base).any()),
             "online_plan": "fused" if fusable else f"two launches (K = {x.kk} > {PAIRS_MAX_K})"}
    same = {key: bool(torch.equal(base, fresh(lambda key=key: f8.run(plans[key]))))
            for key in plans}
    same["online_w128"] = bool(torch.equal(base, fresh(lambda: f8.run(online(128)))))
    same["union4"] = bool(torch.equal(base, fresh(lambda: f4.run(plan4))))
    same["union8_3slots"] = bool(torch.equal(base, fresh(lambda: f8s3.run(plans["w128"]))))
    # the warp-specialized kernel: the cluster kernel's bits under every ordering and schedule
    ws_base = fresh(lambda: ws.run(plans["original"]))
    same["union8ws_original"] = bool(torch.equal(base, ws_base))
    for key in (k for k in plans if k != "original"):
        same[f"union8ws_{key}"] = bool(torch.equal(
            base, fresh(lambda key=key: ws.run(plans[key]))))
    for w in ONLINE_WINDOWS:
        same[f"union8ws_online_w{w}"] = bool(torch.equal(base, fresh(lambda w=w: ws.run(
            online(w)))))
        same[f"union8ws_online_w{w}_twopass"] = bool(torch.equal(base, fresh(lambda w=w: ws.run(
            twopass(w)))))
    same["union8ws_serial_w128"] = bool(torch.equal(base, fresh(lambda: wss.run(plans["w128"]))))
    check["bitwise_identical"] = same
    ws_got = ws_base[torch.from_numpy(rows).cuda()].float().cpu()
    check["union8ws_nrms_vs_float64"] = nrms(ws_got, ref_cache)
    check["union8ws_nrms_vs_emulation"] = nrms(ws_got, fp8_union_attention(
        qs, kv, ts, cs, ls, **ws.emulation_options()).float())
    check["union8ws_all_rows_written"] = not bool(torch.isnan(ws_base).any())
    check["union8ws_build"] = {"tc_sum": ws.tc_sum, "lazy": ws.lazy}
    # the accurate mode: its own bits, the same under every ordering
    acc_base = fresh(lambda: wsa.run(plans["original"]))
    acc_same = {key: bool(torch.equal(acc_base, fresh(lambda key=key: wsa.run(plans[key]))))
                for key in plans if key != "original"}
    acc_same["online_w128"] = bool(torch.equal(acc_base, fresh(lambda: wsa.run(online(128)))))
    acc_got = acc_base[torch.from_numpy(rows).cuda()].float().cpu()
    acc_emu = fp8_union_attention(qs, kv, ts, cs, ls, **wsa.emulation_options()).float()
    check.update({"union8ws_fp8acc_nrms_vs_float64": nrms(acc_got, ref_cache),
                  "union8ws_fp8acc_nrms_vs_emulation": nrms(acc_got, acc_emu),
                  "union8ws_fp8acc_emulation_nrms_vs_float64": nrms(acc_emu, ref_cache),
                  "union8ws_fp8acc_all_rows_written": not bool(torch.isnan(acc_base).any()),
                  "union8ws_fp8acc_bitwise_identical": acc_same})
    print(f"  check: nrms vs float64 {check['nrms_vs_float64']:.3e}, vs emulation "
          f"{check['nrms_vs_emulation']:.3e}; union8ws {check['union8ws_nrms_vs_float64']:.3e} / "
          f"{check['union8ws_nrms_vs_emulation']:.3e}; bitwise {all(same.values())}; accurate "
          f"{check['union8ws_fp8acc_nrms_vs_float64']:.3e} / "
          f"{check['union8ws_fp8acc_nrms_vs_emulation']:.3e}, bitwise {all(acc_same.values())}",
          flush=True)

    # ---- timings
    timings = common.Timings(args, fp8_peak_tflops=FP8_DENSE_PEAK_TFLOPS)
    add = timings.add
    ident = perm_gpu["original"]
    c4o, c4w, c4u4 = stats["original"]["c4"], stats["w128"]["c4"], stats["original_g4"]["c4"]
    t = {}
    t["T0"] = add("union8_fp8_original", lambda: f8.run(prepare(ident)),
                  c4=c4o)
    add("union8_fp8_original_attn", lambda: f8.run(plans["original"]), c4=c4o)
    t["u4"] = add("union4_fp8_original", lambda: f4.run(prepare(ident, 4)),
                  c4=c4u4)
    add("union4_fp8_original_attn", lambda: f4.run(plan4), c4=c4u4)
    t["fixed"] = add("union8_fp8_fixed_w128",
                     lambda: f8.run(fixed(128)), c4=c4w)
    add("union8_fp8_fixed_w128_attn", lambda: f8.run(plans["w128"]), c4=c4w)
    add("union8_fp8_fixed_w128_3slots_attn", lambda: f8s3.run(plans["w128"]), c4=c4w)
    t["online"] = add("union8_fp8_online_w128", lambda: f8.run(online(128)), c4=c4w)
    add("union8_fp8_random_ids", lambda: f8.run(prepare(perm_gpu["random"])),
        c4=stats["random"]["c4"])
    for w in ONLINE_WINDOWS:
        add(f"gpu_regroup_w{w}", lambda w=w: regroups[w].run(t32, lens64))
        if fusable:
            add(f"gpu_regroup_plan_w{w}", lambda w=w: fused[w].run(t32, lens64))
    # the warp-specialized kernels (kernels/union8ws.cu), same calls
    t["ws_T0"] = add("union8ws_fp8_original", lambda: ws.run(prepare(ident)), c4=c4o)
    add("union8ws_fp8_original_attn", lambda: ws.run(plans["original"]), c4=c4o)
    t["ws_fixed"] = add("union8ws_fp8_fixed_w128", lambda: ws.run(fixed(128)), c4=c4w)
    add("union8ws_fp8_fixed_w128_attn", lambda: ws.run(plans["w128"]), c4=c4w)
    add("union8ws_fp8_fixed_w128_attn_serial", lambda: wss.run(plans["w128"]), c4=c4w)
    for w in ONLINE_WINDOWS:
        c4 = stats[f"w{w}"]["c4"]
        if w != 128:
            t[f"ws_fixed{w}"] = add(f"union8ws_fp8_fixed_w{w}",
                                    lambda w=w: ws.run(fixed(w)), c4=c4)
        t[f"ws_online{w}"] = add(f"union8ws_fp8_online_w{w}", lambda w=w: ws.run(online(w)),
                                 c4=c4)
        fused_plan = online(w)  # attention alone on the fused plan's rows
        add(f"union8ws_fp8_online_w{w}_attn", lambda p=fused_plan: ws.run(p), c4=c4)
        t[f"ws_twopass{w}"] = add(f"union8ws_fp8_online_w{w}_twopass",
                                  lambda w=w: ws.run(twopass(w)), c4=c4)
    t["ws_fixed128"], t["ws_online"] = t["ws_fixed"], t["ws_online128"]
    t["wsa_T0"] = add("union8ws_fp8acc_original", lambda: wsa.run(prepare(ident)), c4=c4o)
    t["wsa_fixed"] = add("union8ws_fp8acc_fixed_w128", lambda: wsa.run(fixed(128)), c4=c4w)
    add("union8ws_fp8acc_fixed_w128_attn", lambda: wsa.run(plans["w128"]), c4=c4w)
    t["wsa_online"] = add("union8ws_fp8acc_online_w128", lambda: wsa.run(online(128)), c4=c4w)
    t["wsb_T0"] = add("union8ws_bf16_original", lambda: wsb.run(prepare(ident)), c4=c4o)
    t["wsb_fixed"] = add("union8ws_bf16_fixed_w128", lambda: wsb.run(fixed(128)), c4=c4w)
    # BF16 kernels of the same run (for the ratios; names as in the BF16 result files)
    t["bf16_T0"] = add("union8_original",
                       lambda: b8.run(prepare(ident)), c4=c4o)
    t["bf16_fixed"] = add("union8_fixed_w128",
                          lambda: b8.run(fixed(128)), c4=c4w)
    t["bf16_online"] = add("union8_online_w128", lambda: b8.run(online(128)), c4=c4w)
    add("union4_original", lambda: b4.run(prepare(ident, 4)), c4=c4u4)

    # ---- baselines (timed only)
    common.time_baselines(x, name, heads, args, add, check, t)
    if getattr(args, "peers", False):  # FlashInfer rows (benchmarks/peers_flashinfer.py)
        peers.time_flashinfer(x, args, add, check, t, against=base)

    # ---- accounting (docs/definitions.md#cost-accounting) and targets
    acct = {"w128": {"S_exec_us": round(t["T0"] - t["fixed"], 2),
                     "C_online_us": round(t["online"] - t["fixed"], 2),
                     "S_net_us": round(t["T0"] - t["online"], 2)}}
    for w in ONLINE_WINDOWS:  # the fastest kernel: the fused online plan, and before it
        tf, to, tp = t[f"ws_fixed{w}"], t[f"ws_online{w}"], t[f"ws_twopass{w}"]
        # the same difference from interleaved pairs (fixed call, online call), timed after
        # the rows: the rows' medians come from runs seconds apart
        pair = bench_gpu_difference(lambda w=w: ws.run(fixed(w)), lambda w=w: ws.run(online(w)),
                                    reps=args.reps, warmup=3, spin_us=args.spin_us)
        acct[f"union8ws_w{w}"] = {
            "S_exec_us": round(t["ws_T0"] - tf, 2), "C_online_us": round(to - tf, 2),
            "S_net_us": round(t["ws_T0"] - to, 2), "C_online_twopass_us": round(tp - tf, 2),
            "S_net_twopass_us": round(t["ws_T0"] - tp, 2),
            "C_online_paired_us": round(pair["median_us"], 2),
            "C_online_paired_p10_p90_us": [round(pair["p10_us"], 2), round(pair["p90_us"], 2)],
            "S_net_paired_us": round(t["ws_T0"] - tf - pair["median_us"], 2)}
        print(f"  C_online union8ws W{w} from {args.reps} pairs: {pair['median_us']:.2f} us "
              f"(p10 {pair['p10_us']:.2f}, p90 {pair['p90_us']:.2f})", flush=True)
    best = min(t["T0"], t["fixed"], t["online"])
    best_bf16 = min(t["bf16_T0"], t["bf16_fixed"], t["bf16_online"])
    best_c4 = c4o if best == t["T0"] else c4w
    tf_best = best_c4 * common.FLOP_PER_C4_ROUND / (best * 1e6)
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
    summary["union8ws_T0_T_fixed_T_online_us"] = [t["ws_T0"], t["ws_fixed"], t["ws_online"]]
    summary["union8ws_over_union4_fp8"] = round(t["ws_T0"] / t["u4"], 3)
    summary["union8ws_fp8_over_bf16_fixed_w128"] = round(t["ws_fixed"] / t["wsb_fixed"], 3)
    summary["union8ws_fp8acc_T0_T_fixed_T_online_us"] = [t["wsa_T0"], t["wsa_fixed"],
                                                         t["wsa_online"]]
    summary["union8ws_fp8acc_over_fp8_fixed_w128"] = round(t["wsa_fixed"] / t["ws_fixed"], 3)
    summary.update(peers.summary_ratios(
        t, best, "best_union8_fp8_us: our best Union8 (cluster), FP8 KV",
        "best of union8ws_fp8_original/fixed_w128/online_w128",
        "best of union8ws_fp8acc_original/fixed_w128/online_w128"))
    return {**env, "kernel": "fp8_e4m3", "workload": name, "kv_heads": heads, "queries": n,
            "pages": x.pages, "stats": stats, "accounting": acct, "summary": summary,
            "targets": FP8_TARGETS, "check": check, "results": timings.results}


def smoke_fp8(kernels: str = "all") -> int:
    """Tiny FP8 end-to-end call (2 KV heads, tail groups, causal + lengths, Union8 / Union4,
    CPU and GPU plans) for compute-sanitizer and as a hang check. ``kernels``: ``all``, or only
    the ``cluster`` kernels (union8_fp8 / union4_fp8), or only the warp-specialized ``ws`` ones
    (shipped, lazy and accurate builds)."""

    from pageweaver_edu.gpu import Fp8UnionAttention, Fp8WsUnionAttention, fp8_cache_from_bf16
    from pageweaver_edu.replay.fp8 import fp8_union_attention, reference_on_cache

    s = common.smoke_case()
    cache = fp8_cache_from_bf16(s.k, s.v)
    outs, lazy, acc = [], [], []
    if kernels in ("all", "cluster"):
        outs += common.smoke_outputs(
            s, lambda plan, out: Fp8UnionAttention(s.q, cache, s.c, s.ln, out=out).run(plan))
    if kernels in ("all", "ws"):
        outs += common.smoke_outputs(  # the warp-specialized kernel: the same bits
            s, lambda plan, out: Fp8WsUnionAttention(s.q, cache, s.c, s.ln, out=out).run(plan),
            groups=(8,))
        lazy = common.smoke_outputs(  # the lazy build: its own bits, any order
            s, lambda plan, out: Fp8WsUnionAttention(s.q, cache, s.c, s.ln, out=out, lazy=True,
                                                     tc_sum=True).run(plan), groups=(8,))
        acc = common.smoke_outputs(  # the accurate mode: its own bits, any order
            s, lambda plan, out: Fp8WsUnionAttention(s.q, cache, s.c, s.ln, out=out,
                                                     accurate=True).run(plan), groups=(8,))
    kv = cache.logical.to("cpu")
    ref = reference_on_cache(s.q.cpu(), kv, s.topk, s.cpos, s.lens)
    emu = fp8_union_attention(s.q.cpu(), kv, s.topk, s.cpos, s.lens).float()
    errs, same, nan = common.smoke_summary(outs, ref)
    errs_ws, same_ws, nan_ws = common.smoke_summary(lazy, ref) if lazy else ([], True, False)
    errs_acc, same_acc, nan_acc = common.smoke_summary(acc, ref) if acc else ([], True, False)
    e_emu = nrms(outs[0].float().cpu(), emu)
    print(f"smoke fp8 ({kernels}): nrms vs float64 {[f'{e:.2e}' for e in errs + errs_ws]}, "
          f"accurate {[f'{e:.2e}' for e in errs_acc]}, vs emulation {e_emu:.2e}, bitwise "
          f"identical {same} / {same_ws} / {same_acc}, NaN {nan or nan_ws or nan_acc}",
          flush=True)
    ok = (max(errs) < 0.04 and max(errs_ws, default=0.0) < 0.045 and e_emu < 0.01 and same
          and same_ws and max(errs_acc, default=0.0) < 0.003 and same_acc)
    return 0 if ok and not (nan or nan_ws or nan_acc) else 1


def _fp8_row(r) -> str:
    m = {x["name"]: x for x in r["results"]}
    s, c = r["summary"], r["check"]
    flex = s.get("speedup_vs_flex", float("nan"))
    return (f"{r['workload']:17s} {r['kv_heads']:2d} "
            f"{m['union8_fp8_original']['median_us']:6.0f} "
            f"{m['union8_fp8_fixed_w128']['median_us']:8.0f} "
            f"{m['union8_fp8_online_w128']['median_us']:9.0f} "
            f"{r['accounting']['w128']['S_net_us']:6.1f} {s['union8_over_union4_fp8']:6.3f} "
            f"{s['speedup_vs_bf16_union8']:5.2f} {flex:6.1f}"
            f"  {s['tflops_c4_best']:7.1f} {100 * s['fraction_of_fp8_peak_c4']:5.1f}  "
            f"{c['nrms_vs_float64']:.2e} {c['nrms_vs_emulation']:.2e} "
            f"{all(c['bitwise_identical'].values())}")


def _ws_row(r) -> str:
    m = {x["name"]: x["median_us"] for x in r["results"]}
    s = r["summary"]
    return (f"{r['workload']:17s} {r['kv_heads']:2d} FP8 T0/fixed/online "
            f"{'/'.join(f'{v:.0f}' for v in s['union8ws_T0_T_fixed_T_online_us'])}  attn "
            f"{m['union8ws_fp8_fixed_w128_attn']:.0f} "
            f"(serial {m['union8ws_fp8_fixed_w128_attn_serial']:.0f})  BF16 T0/fixed "
            f"{m['union8ws_bf16_original']:.0f}/{m['union8ws_bf16_fixed_w128']:.0f}  U8ws/U4 "
            f"{s['union8ws_over_union4_fp8']:.3f}  accurate T0/fixed/online "
            f"{'/'.join(f'{v:.0f}' for v in s['union8ws_fp8acc_T0_T_fixed_T_online_us'])} "
            f"(nrms {r['check']['union8ws_fp8acc_nrms_vs_float64']:.2e})")


def print_fp8_table(records) -> None:
    common.print_rows(records, "\nunion8ws (warp-specialized) rows, us", _ws_row)
    common.print_rows(records, "\nFP8 preset        H  T0_us  fixed128  online128  S_net  U8/U4  "
                      "xBF16  xflex  TF/s(C4) peak%  nrms     vs_emu   bitwise", _fp8_row)
    print("paper (different inputs, arXiv:2610.11201): T0 1.366, T_fixed 1.270, T_online "
          "1.308 ms; Union8/Union4 1.075x; NRMS 2.2-4.0%")
