"""A/B of builds of the warp-specialized FP8 Union8, checked and timed in one run.

A variant is a set of :class:`~pageweaver_edu.gpu.Fp8WsUnionAttention` keywords plus extra nvcc
``-D`` options (the switch under test). Every variant runs the same preset's inputs (one KV head,
the seeded Q/K/V of ``bench_union8.py``) on the original order and the fixed W128 order:

1. checks, outputs NaN-poisoned first: every row written; NRMS against float64 on the FP8 cache
   (``--check-rows`` sampled rows); bitwise equal to the first variant's output; the same bits
   under both orders;
2. the attention kernel alone (CUDA events, L2 flushed: ``gpu.timing.bench_gpu``), in
   ``--rounds`` rounds of ``--reps`` repetitions each, the variants in turn and the turn
   reversed every other round, so that a drift of the clocks falls on all of them alike; a
   row's time is the median of its rounds' medians.

Writes ``benchmarks/results/union8ws_ab_<label>_<preset>_<device>.json`` (copied to $OUT) and
prints the table last.

    python3 benchmarks/bench_union8ws_ab.py --label acc_trims \\
        --variant base:accurate=True:-DPW_ACC_UNI=0 --variant uniform:accurate=True
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np
import union8_bench_common as common

from pageweaver_edu.records import device_tag, result_environment

ROOT = Path(__file__).resolve().parents[1]
ORDERS = ("original", "w128")


def parse_variant(text: str) -> tuple[str, dict, tuple[str, ...]]:
    """``name:key=value,...:-DNAME=value,...`` -> (name, keywords, nvcc options); values
    ``True`` / ``False`` are booleans, digits integers, anything else a string."""
    name, _, rest = text.partition(":")
    kw_text, _, opt_text = rest.partition(":")
    kwargs = {}
    for item in (i for i in kw_text.split(",") if i):
        key, _, value = item.partition("=")
        kwargs[key] = {"True": True, "False": False}.get(
            value, int(value) if value.isdigit() else value)
    options = tuple(o for o in opt_text.split(",") if o)
    if not name or any(not o.startswith("-D") for o in options):
        raise SystemExit(f"bad --variant {text!r}: name:key=value,...:-DNAME=value,...")
    return name, kwargs, options


def run(args, env: dict) -> dict:
    import torch

    from pageweaver_edu.gpu import Fp8WsUnionAttention, fp8_cache_from_bf16
    from pageweaver_edu.gpu.timing import bench_gpu
    from pageweaver_edu.replay.fp8 import reference_on_cache

    x = common.preset_inputs(args.preset, 1)
    cache = fp8_cache_from_bf16(x.k, x.v)
    rng = np.random.default_rng(0)
    o = common.prepare_orderings(x, (128,), rng)
    variants = [parse_variant(v) for v in args.variant]
    atts = {}
    for name, kwargs, options in variants:
        att = Fp8WsUnionAttention(x.q, cache, x.cpos, x.lens, **kwargs)
        att.build_options = (*att.build_options, *options)
        atts[name] = att
    fresh = common.poisoned(*atts.values())
    rows = np.sort(rng.choice(x.n, min(x.n, args.check_rows), replace=False))
    kv = cache.logical.to("cpu")
    qs, ts, cs, ls = x.check_rows(rows)
    ref = reference_on_cache(qs, kv, ts, cs, ls)
    first = None
    check = {}
    for name, att in atts.items():
        outs = {key: fresh(lambda att=att, key=key: att.run(o.plans[key])) for key in ORDERS}
        base = outs["original"]
        first = base if first is None else first
        check[name] = {
            "all_rows_written": not bool(torch.isnan(base).any()),
            "nrms_vs_float64": common.nrms(
                base[torch.from_numpy(rows).cuda()].float().cpu(), ref),
            "bitwise_equal_to_first": bool(torch.equal(base, first)),
            "bitwise_same_orders": bool(torch.equal(base, outs["w128"]))}
        print(f"  check {name}: {check[name]}", flush=True)
    rounds = {(name, key): [] for name in atts for key in ORDERS}
    for r in range(args.rounds):
        turn = list(atts.items()) if r % 2 == 0 else list(atts.items())[::-1]
        for name, att in turn:
            for key in ORDERS:
                t = bench_gpu(lambda att=att, key=key: att.run(o.plans[key]), reps=args.reps,
                              warmup=3, spin_us=args.spin_us)
                rounds[name, key].append(round(t["median_us"], 2))
    results = [{"name": f"{name}_{key}_attn", "median_us": statistics.median(v),
                "round_medians_us": v, "reps_per_round": args.reps}
               for (name, key), v in rounds.items()]
    return {**env, "kernel": "fp8_e4m3", "workload": args.preset, "kv_heads": 1,
            "queries": x.n, "label": args.label,
            "variants": {n: {"keywords": kw, "nvcc_options": list(op)} for n, kw, op in variants},
            "check": check, "results": results}


def print_table(rec) -> None:
    m = {r["name"]: r["median_us"] for r in rec["results"]}
    names = list(rec["variants"])
    print(f"\n{rec['workload']} ({rec['device']}): attention kernel alone, median of round "
          f"medians, us")
    print(f"{'variant':22s} {'original':>10s} {'W128':>10s} {'vs first':>9s} {'NRMS':>9s}  bits")
    for n in names:
        c = rec["check"][n]
        ratio = m[f"{names[0]}_w128_attn"] / m[f"{n}_w128_attn"]
        print(f"{n:22s} {m[f'{n}_original_attn']:10.1f} {m[f'{n}_w128_attn']:10.1f} "
              f"{ratio:8.3f}x {c['nrms_vs_float64']:9.3e}  first={c['bitwise_equal_to_first']} "
              f"orders={c['bitwise_same_orders']} rows={c['all_rows_written']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", required=True, help="names the result file")
    ap.add_argument("--variant", action="append", required=True,
                    help="name:key=value,...:-DNAME=value,... (the first is the baseline)")
    ap.add_argument("--preset", default="cap64k")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--check-rows", type=int, default=64)
    ap.add_argument("--spin-us", type=float, default=150.0)
    ap.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    from pageweaver_edu.gpu.device import require_gpu

    require_gpu()
    env = result_environment(ROOT)
    rec = run(args, env)
    common.write_result(rec, Path(args.out_dir) / (
        f"union8ws_ab_{args.label}_{args.preset}_{device_tag(env['device'])}.json"))
    print_table(rec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
