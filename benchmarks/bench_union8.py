"""Union8 / Union4 attention on the H200: check, then time against the baselines.

Definitions: docs/definitions.md#union8-execution and docs/definitions.md#cost-accounting.

Per workload (``--presets``, default ``cap64k``, ``cap16k-high-overlap``, ``interleaved-64k``:
any preset, or one of the capture-like settings that are not presets,
``union8_bench_common.SETTINGS``: ``cap24k-top16``, ``cap48k-top16``, ``cap32k-top24``,
``cap56k-top32``) and KV-head count (each
head its own Top-K: seeds 0..H-1 of the workload), on random BF16 Q/K/V:

1. correctness: Union8 (original order) vs the float64 reference on sampled rows (NRMS), and
   bitwise equality of every ordering (original, fixed W64/W128/W512, online, random ids,
   Union4) — the outputs are poisoned with NaN before each run;
2. times (CUDA events, L2 flushed and the stream kept busy ahead of every repetition:
   :func:`pageweaver_edu.gpu.timing.bench_gpu`; median of ``--reps``):
   complete calls (docs/definitions.md#cost-accounting) — ``union8_original`` (T0: union
   preparation of the identity π + attention), ``union8_fixed_wW`` (T_fixed: preparation of
   precomputed ids + attention),
   ``union8_online_wW`` (T_online: the fused online regroup, π and the plan in one launch, +
   attention; docs/definitions.md#fused-online-plan), ``union8_random_ids``,
   ``union4_original``; ``*_attn`` rows are the attention kernel alone; baselines
   ``gather_reference`` (torch BF16 gather + SDPA, chunked) and ``flex_attention``
   (torch.compile'd, page-membership mask_mod + BlockMask; compile and mask build reported
   separately);
3. derived: union visits, C4, S_exec = T0 - T_fixed, C_online = T_online - T_fixed,
   S_net = T0 - T_online, TFLOP/s on the C4 work (C4 x 64 rows x 128 tokens x 128 dims x 4).

Writes ``benchmarks/results/union8_<preset>[_hH]_<device>.json`` (the device that ran it:
``h100``, ``h200``; copied to $OUT when set) and prints a compact table last.

    python benchmarks/bench_union8.py [--presets cap64k,...] [--heads 1,8] [--reps 30]

The files' ``commit`` is ``$PAGEWEAVER_COMMIT`` when set, else git's HEAD (``+worktree`` when
tracked files differ), else "uncommitted" (:func:`pageweaver_edu.records.source_commit`).

``--fp8`` runs the FP8 E4M3 kernels (``kernels/union8_fp8.cu``) instead: per preset the same
inputs, K/V quantized once to the paged FP8 cache (per-head scales), checks against the CPU
emulation (:mod:`pageweaver_edu.replay.fp8`, sampled rows) and float64, bitwise equality of
every ordering, then ``union8_fp8_original`` / ``_fixed_w128`` / ``_online_w128`` /
``union4_fp8_original`` (+ ``_attn`` rows) beside the BF16 ``union8_*`` rows, FlexAttention and
the gather reference of the same run, and the warp-specialized FP8 kernel at W64 and W128 with
the fused online plan (``union8ws_fp8_online_wW``) and with the two launches before it
(``_twopass``: the regroup, then the union preparation), their accounting under
``accounting["union8ws_wW"]``; writes ``union8_fp8_<preset>[_hH]_<device>.json``.
``--smoke --fp8`` is the FP8 smoke test (for compute-sanitizer; ``--smoke-kernels cluster`` or
``ws`` runs one kernel family only).

``--peers`` / ``--no-peers``: FlashInfer rows (``flashinfer_decode_{bf16,fp8}[_tc]``,
``flashinfer_msa_fp8[_programs]``: ``benchmarks/peers_flashinfer.py``) beside ours in both runs,
each checked like ours; on by default when ``import flashinfer`` works. The summary gains
``speedup_vs_<row>`` (peer median / our best Union8) and ``speedup_union8ws_vs_<row>`` (peer
median / the best warp-specialized row), and a peer table is printed last.
"""

from __future__ import annotations

import argparse
import traceback
from pathlib import Path

import numpy as np
import peers_flashinfer as peers
import union8_bench_common as common
from union8_bench_common import nrms
from union8_bench_fp8 import print_fp8_table, run_preset_fp8, smoke_fp8

from pageweaver_edu.core.attention import reference_attention
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.progress import progress
from pageweaver_edu.records import device_tag, result_environment

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"vs_flex": 15.0, "vs_gather": 10.0, "tflops_c4": 300.0}
WINDOWS = (64, 128, 512)
ONLINE = (64, 128)


def run_preset(name: str, heads: int, args, env: dict) -> dict:
    import torch

    from pageweaver_edu.gpu import (
        Bf16UnionAttention,
        Bf16WsUnionAttention,
        regroup_launch,
        regroup_plan_launch,
    )

    x = common.preset_inputs(name, heads)
    cap, n, offsets, q, k, v = x.cap, x.n, x.offsets, x.q, x.k, x.v
    cpos, lens, t32, lens64 = x.cpos, x.lens, x.t32, x.lens64
    prepare = x.prepare

    # ---- orderings (CPU greedy = GPU greedy bit for bit, as tests/gpu checks)
    rng = np.random.default_rng(0)
    o = common.prepare_orderings(x, WINDOWS, rng)
    stats, plans, plan4, perm_gpu = o.stats, o.plans, o.plan4, o.perm_gpu

    u8 = Bf16UnionAttention(q, (k, v), cpos, lens)
    u4 = Bf16UnionAttention(q, (k, v), cpos, lens)  # run with g = 4 plans: Union4
    u8s3 = Bf16UnionAttention(q, (k, v), cpos, lens, slots=3)
    ws = Bf16WsUnionAttention(q, (k, v), cpos, lens)
    regroupers = {w: regroup_launch(n, heads, x.kk, Grouping(w), offsets, cap.page_size)
                  for w in ONLINE}
    fused = {w: regroup_plan_launch(n, heads, x.kk, Grouping(w), offsets, cap.page_size)
             for w in ONLINE}  # the online plan in one launch (docs/definitions.md)

    # ---- correctness
    fresh = common.poisoned(u8, u4, u8s3, ws)
    base = fresh(lambda: u8.run(plans["original"]))
    rows = np.sort(rng.choice(n, min(n, args.check_rows), replace=False))
    ref = np.concatenate([reference_attention(
        q[rows, h * 16:(h + 1) * 16].float().cpu(), k[:, h].float().cpu(), v[:, h].float().cpu(),
        x.topk[h, rows], lengths=None if cap.lengths is None else cap.lengths[rows],
        causal_pos=None if cap.causal_pos is None else cap.causal_pos[rows])
        for h in range(heads)], axis=1)
    check = {"nrms_vs_float64": nrms(base[torch.from_numpy(rows).cuda()].float().cpu(), ref),
             "all_rows_written": not bool(torch.isnan(base).any())}
    same = {}
    for key in plans:
        same[key] = bool(torch.equal(base, fresh(lambda key=key: u8.run(plans[key]))))
    for w in ONLINE:
        same[f"online_w{w}"] = bool(torch.equal(base, fresh(lambda w=w: u8.run(
            fused[w].run(t32, lens64)))))
    same["union4"] = bool(torch.equal(base, fresh(lambda: u4.run(plan4))))
    same["union8_3slots"] = bool(torch.equal(base, fresh(lambda: u8s3.run(plans["w128"]))))
    check["bitwise_identical"] = same
    # the warp-specialized BF16 kernel: its own arithmetic (PV accumulated in FP32 into O), so
    # its own float64 check and its own bitwise identity over the orderings
    wbase = fresh(lambda: ws.run(plans["original"]))
    check["union8ws_bf16_nrms_vs_float64"] = nrms(
        wbase[torch.from_numpy(rows).cuda()].float().cpu(), ref)
    check["union8ws_bf16_all_rows_written"] = not bool(torch.isnan(wbase).any())
    check["union8ws_bf16_bitwise_identical"] = {
        key: bool(torch.equal(wbase, fresh(lambda key=key: ws.run(plans[key])))) for key in plans}

    # ---- timings
    timings = common.Timings(args)
    add = timings.add
    ident = perm_gpu["original"]
    t = {}
    t["T0"] = add("union8_original", lambda: u8.run(prepare(ident)), c4=stats["original"]["c4"])
    add("union8_original_attn", lambda: u8.run(plans["original"]), c4=stats["original"]["c4"])
    add("union4_original", lambda: u4.run(prepare(ident, 4)), c4=stats["original_g4"]["c4"])
    add("union4_original_attn", lambda: u4.run(plan4), c4=stats["original_g4"]["c4"])
    for w in WINDOWS:
        pw = perm_gpu[f"w{w}"]
        c4 = stats[f"w{w}"]["c4"]
        t[f"fixed{w}"] = add(f"union8_fixed_w{w}",
                             lambda pw=pw: u8.run(prepare(pw)), c4=c4,
                             **({"cpu_regroup_s": round(o.cpu_s[512], 3)} if w == 512 else {}))
        add(f"union8_fixed_w{w}_attn", lambda w=w: u8.run(plans[f"w{w}"]), c4=c4)
    add("union8_fixed_w128_3slots_attn", lambda: u8s3.run(plans["w128"]), c4=stats["w128"]["c4"])
    for w in ONLINE:
        rg, fz = regroupers[w], fused[w]
        t[f"online{w}"] = add(f"union8_online_w{w}", lambda fz=fz: u8.run(fz.run(t32, lens64)),
                              c4=stats[f"w{w}"]["c4"])
        add(f"gpu_regroup_w{w}", lambda rg=rg: rg.run(t32, lens64))
        add(f"gpu_regroup_plan_w{w}", lambda fz=fz: fz.run(t32, lens64))
    add("gpu_union_prepare", lambda: prepare(ident))
    c4o, c4w = stats["original"]["c4"], stats["w128"]["c4"]
    t["ws_T0"] = add("union8ws_bf16_original", lambda: ws.run(prepare(ident)), c4=c4o)
    add("union8ws_bf16_original_attn", lambda: ws.run(plans["original"]), c4=c4o)
    t["ws_fixed"] = add("union8ws_bf16_fixed_w128", lambda: ws.run(prepare(perm_gpu["w128"])),
                        c4=c4w)
    add("union8ws_bf16_fixed_w128_attn", lambda: ws.run(plans["w128"]), c4=c4w)
    t["ws_online"] = add("union8ws_bf16_online_w128",
                         lambda: ws.run(fused[128].run(t32, lens64)), c4=c4w)
    add("union8_random_ids", lambda: u8.run(prepare(perm_gpu["random"])), c4=stats["random"]["c4"])

    # ---- baselines (checked against Union8, then timed)
    common.time_baselines(x, name, heads, args, add, check, t, against=base)
    if args.peers:  # FlashInfer paged decode and MSA (benchmarks/peers_flashinfer.py)
        peers.time_flashinfer(x, args, add, check, t, against=base)

    # ---- accounting (docs/definitions.md#cost-accounting) and targets
    acct = {}
    for w in ONLINE:
        acct[f"w{w}"] = {"S_exec_us": round(t["T0"] - t[f"fixed{w}"], 2),
                         "C_online_us": round(t[f"online{w}"] - t[f"fixed{w}"], 2),
                         "S_net_us": round(t["T0"] - t[f"online{w}"], 2)}
    best = min(t[f"fixed{w}"] for w in WINDOWS)
    best = min(best, t["T0"], *(t[f"online{w}"] for w in ONLINE))
    summary = {"best_union8_us": best, "speedup_vs_gather": round(t["gather"] / best, 2),
               "union8ws_bf16_T0_T_fixed_T_online_us": [t["ws_T0"], t["ws_fixed"],
                                                        t["ws_online"]],
               "union8ws_bf16_over_union8_fixed_w128": round(t["ws_fixed"] / t["fixed128"], 3)}
    if "flex" in t:
        summary["speedup_vs_flex"] = round(min(t["flex"]) / best, 2)
    summary.update(peers.summary_ratios(
        t, best, "best_union8_us: our best Union8 (cluster), BF16 KV",
        "best of union8ws_bf16_original/fixed_w128/online_w128"))
    return {**env, "workload": name, "kv_heads": heads, "queries": n, "pages": x.pages,
            "stats": stats, "accounting": acct, "summary": summary, "targets": TARGETS,
            "check": check, "results": timings.results}


def smoke() -> int:
    """A tiny end-to-end call (2 KV heads, tail groups, causal + lengths, Union8 and Union4,
    CPU and GPU plans) for compute-sanitizer and as a hang check before the long runs."""

    from pageweaver_edu.gpu import Bf16UnionAttention, Bf16WsUnionAttention

    s = common.smoke_case()
    outs = common.smoke_outputs(
        s, lambda plan, out: Bf16UnionAttention(s.q, (s.k, s.v), s.c, s.ln, out=out).run(plan))
    ws = common.smoke_outputs(  # the warp-specialized BF16 kernel: its own arithmetic
        s, lambda plan, out: Bf16WsUnionAttention(s.q, (s.k, s.v), s.c, s.ln, out=out).run(plan),
        groups=(8,))
    heads = s.topk.shape[0]
    ref = np.concatenate([reference_attention(
        s.q[:, h * 16:(h + 1) * 16].float().cpu(), s.k[:, h].float().cpu(),
        s.v[:, h].float().cpu(), s.topk[h], lengths=s.lens, causal_pos=s.cpos)
        for h in range(heads)], axis=1)
    errs, same, nan = common.smoke_summary(outs, ref)
    ws_errs, ws_same, ws_nan = common.smoke_summary(ws, ref)
    print(f"smoke: nrms {[f'{e:.2e}' for e in errs]}, bitwise identical {same}, NaN {nan}; "
          f"warp-specialized nrms {[f'{e:.2e}' for e in ws_errs]}, bitwise identical "
          f"{ws_same}, NaN {ws_nan}", flush=True)
    return 0 if max(errs + ws_errs) < 1e-2 and same and ws_same else 1


def _row(r) -> str:
    m = {x["name"]: x for x in r["results"]}
    a = r["accounting"]["w128"]
    best = min((x for x in r["results"] if x["name"].startswith("union8_")
                and not x["name"].endswith("_attn") and "tflops_c4" in x),
               key=lambda x: x["median_us"])
    ok = all(r["check"]["bitwise_identical"].values())
    return (f"{r['workload']:17s} {r['kv_heads']:2d} "
            f"{m['union8_original']['median_us']:7.0f} "
            f"{m['union8_fixed_w128']['median_us']:8.0f} "
            f"{m['union8_online_w128']['median_us']:9.0f}"
            f" {a['S_exec_us']:7.1f} {a['C_online_us']:6.1f} {a['S_net_us']:6.1f} "
            f"{best['tflops_c4']:8.1f}  {r['summary']['speedup_vs_gather']:7.1f}  "
            f"{r['summary'].get('speedup_vs_flex', float('nan')):6.1f}  "
            f"{r['check']['nrms_vs_float64']:.2e}  {ok}")


def print_table(records) -> None:
    common.print_rows(records, "\npreset            H  T0_us  fixed128  online128  S_exec  C_onl  "
                      "S_net  TF/s(C4)  gather_x  flex_x  nrms    bitwise", _row)


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
    ap.add_argument("--smoke-kernels", choices=("all", "cluster", "ws"), default="all",
                    help="FP8 smoke test: only the cluster kernels or only the warp-specialized "
                         "ones (racecheck with a kernel filter runs one family per process)")
    ap.add_argument("--peers", action=argparse.BooleanOptionalAction, default=None,
                    help="FlashInfer rows (default: on when `import flashinfer` works)")
    ap.add_argument("--fp8", action="store_true",
                    help="run the FP8 E4M3 kernels (union8_fp8.cu) and write union8_fp8_*.json")
    args = ap.parse_args(argv)
    if args.smoke:
        return smoke_fp8(args.smoke_kernels) if args.fp8 else smoke()
    args.flex_presets = [p for p in args.flex_presets.split(",") if p]
    args.flex_blocks = [tuple(int(x) for x in b.split("x")) for b in args.flex_blocks.split(",")
                        if b]
    from pageweaver_edu.gpu.device import require_gpu

    require_gpu()
    if args.peers is None:
        args.peers, why = peers.available()
        print(f"FlashInfer peers: {'on, ' if args.peers else 'off: '}{why}", flush=True)
    env = result_environment(ROOT)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    records = []
    runs = [(p, int(h)) for p in args.presets.split(",") if p for h in args.heads.split(",")]
    runs += [(x.split(":")[0], int(x.split(":")[1])) for x in args.more_heads.split(",") if x]
    for name, heads in progress(runs, desc="bench_union8", unit="run"):
        print(f"== {name}, {heads} KV head(s)", flush=True)
        try:
            rec = (run_preset_fp8 if args.fp8 else run_preset)(name, heads, args, env)
        except Exception:
            traceback.print_exc()
            continue
        stem = (f"union8{'_fp8' if args.fp8 else ''}_{name}"
                + ("" if heads == 1 else f"_h{heads}") + f"_{device_tag(env['device'])}")
        common.write_result(rec, out_dir / f"{stem}.json")
        records.append(rec)
    if args.fp8:
        print_fp8_table(records)
    else:
        print_table(records)
    peers.print_peer_table(records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
