"""The warp-specialized FP8 Union8 built up step by step, every step timed in one run (H200).

Per preset (default ``cap64k``, one KV head) and ordering (original and fixed W128 ids), the
attention kernel alone (CUDA events, L2 flushed, median of ``--reps``):

* ``cluster``: the paper's two-CTA cluster kernel (``kernels/union8_fp8.cu``), and its Union4;
* ``ws_serial_4stages``: one SM per group, a producer warpgroup and two consumer warpgroups
  sharing a ring of 4 stages (no lockstep), QK / softmax / PV one after the other;
* ``ws_serial_6stages``: the same with 6 stages;
* ``ws_overlap_6stages``: the next page's QK and this page's PV in flight during the softmax,
  with the pages and the Q8 address read as warp-uniform values and no P = 0 written by a warp
  whose query does not see the page (the kernel ``union8ws_fp8`` as shipped);
* ``ws_overlap_6stages_tc_sum``: each page's sum p from the tensor core (P8 times a tile of
  ones) instead of FP32 FADD chains in the softmax step (pages read as they are, P = 0 written
  on unseen pages);
* ``ws_overlap_6stages_lazy``: O accumulates in the tensor core across pages and a row
  rescales only when its maximum grows by more than a factor 4 (no fold per page);
* ``ws_overlap_6stages_lazy_tc_sum``: both;
* ablations of the shipped kernel: ``no_softmax`` (P = 0), ``no_mma`` (S constant),
  ``ring_only`` (neither): their differences say what the softmax and the products cost;
  ``no_copies`` (all the work, no page copied into the ring): what the copies cost;
* the same ablations of the cluster kernel and its Union4 (``cluster_<ablation>_<order>``,
  ``union4_cluster_<ablation>_original``) and ``every_page`` (every warp works on every page
  of the union): chapter 07's table of what the two-CTA lockstep costs.

Every variant with the cluster arithmetic is first checked bitwise against the cluster kernel;
the options with their own arithmetic for bitwise equality across orderings and against the
cluster kernel's output by NRMS (NaN-poisoned outputs).
Writes ``benchmarks/results/union8ws_steps_<preset>_<device>.json`` (and a copy to $OUT) and
prints the table last.

    python3 benchmarks/bench_union8ws_steps.py [--presets cap64k] [--reps 30]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import union8_bench_common as common

from pageweaver_edu.records import device_tag, result_environment

ROOT = Path(__file__).resolve().parents[1]
STEPS = {  # name -> Fp8WsUnionAttention keyword arguments (default: the cluster's arithmetic)
    "ws_serial_4stages": {"slots": 4, "overlap": False},
    "ws_serial_6stages": {"slots": 6, "overlap": False},
    "ws_overlap_6stages": {},
    "ws_overlap_6stages_tc_sum": {"tc_sum": True},
    "ws_overlap_6stages_lazy": {"lazy": True},
    "ws_overlap_6stages_lazy_tc_sum": {"lazy": True, "tc_sum": True},
    "ws_ablate_no_softmax": {"ablate": "no_softmax"},
    "ws_ablate_no_mma": {"ablate": "no_mma"},
    "ws_ablate_ring_only": {"ablate": "ring_only"},
    "ws_ablate_no_copies": {"ablate": "no_copies"},
}
CLUSTER_ABLATIONS = ("ring_only", "no_softmax", "no_mma", "every_page")
CHECKED = ("ws_serial_4stages", "ws_serial_6stages", "ws_overlap_6stages")  # = cluster, bitwise
# Their own arithmetic: bitwise across orderings, NRMS against the cluster kernel.
OWN_BITS = ("ws_overlap_6stages_tc_sum", "ws_overlap_6stages_lazy",
            "ws_overlap_6stages_lazy_tc_sum")


def run_preset(name: str, args, env: dict) -> dict:
    import torch

    from pageweaver_edu.gpu import Fp8UnionAttention, Fp8WsUnionAttention, fp8_cache_from_bf16

    x = common.preset_inputs(name, 1)
    cache = fp8_cache_from_bf16(x.k, x.v)
    o = common.prepare_orderings(x, (128,), np.random.default_rng(0))
    c4 = {"original": o.stats["original"]["c4"], "w128": o.stats["w128"]["c4"]}
    cluster = Fp8UnionAttention(x.q, cache, x.cpos, x.lens)
    union4 = Fp8UnionAttention(x.q, cache, x.cpos, x.lens)  # run with the g = 4 plan
    atts = {k: Fp8WsUnionAttention(x.q, cache, x.cpos, x.lens, **kw) for k, kw in STEPS.items()}
    ablated = {ab: Fp8UnionAttention(x.q, cache, x.cpos, x.lens, ablate=ab)
               for ab in CLUSTER_ABLATIONS}  # g = 8 and g = 4 plans: Union8 and Union4
    fresh = common.poisoned(cluster, *atts.values())
    same, own = {}, {}
    for key in c4:
        base = fresh(lambda key=key: cluster.run(o.plans[key]))
        for v in CHECKED:
            same[f"{v}_{key}"] = bool(torch.equal(
                base, fresh(lambda v=v, key=key: atts[v].run(o.plans[key]))))
        for v in OWN_BITS:
            own[v, key] = fresh(lambda v=v, key=key: atts[v].run(o.plans[key]))
    nrms_cluster = {}
    for v in OWN_BITS:
        same[f"{v}_orderings"] = bool(torch.equal(own[v, "original"], own[v, "w128"]))
        nrms_cluster[v] = common.nrms(own[v, "w128"].float().cpu(), base.float().cpu())
    timings = common.Timings(args, fp8_peak_tflops=1979.0)
    for key in c4:
        timings.add(f"cluster_{key}", lambda key=key: cluster.run(o.plans[key]), c4=c4[key])
        for v, att in atts.items():
            timings.add(f"{v}_{key}", lambda att=att, key=key: att.run(o.plans[key]), c4=c4[key])
    timings.add("union4_cluster_original", lambda: union4.run(o.plan4),
                c4=o.stats["original_g4"]["c4"])
    for ab, att in ablated.items():  # timing only: the outputs of these builds are meaningless
        for key in c4:
            timings.add(f"cluster_{ab}_{key}", lambda att=att, key=key: att.run(o.plans[key]),
                        c4=c4[key])
        timings.add(f"union4_cluster_{ab}_original", lambda att=att: att.run(o.plan4),
                    c4=o.stats["original_g4"]["c4"])
    return {**env, "kernel": "fp8_e4m3", "workload": name, "kv_heads": 1, "queries": x.n,
            "stats": o.stats, "check": {"bitwise_identical": same,
                                        "nrms_vs_cluster": nrms_cluster},
            "results": timings.results}


def print_table(rec) -> None:
    m = {r["name"]: r for r in rec["results"]}
    print(f"\n{rec['workload']}: attention kernel alone, us (TF/s on the C4 work)")
    print(f"{'step':26s} {'original':>18s} {'fixed W128':>18s}")
    for v in ("cluster", *STEPS):
        cells = [f"{m[f'{v}_{k}']['median_us']:8.1f} ({m[f'{v}_{k}']['tflops_c4']:6.1f})"
                 for k in ("original", "w128")]
        print(f"{v:26s} {cells[0]:>18s} {cells[1]:>18s}")
    print(f"\ncluster kernel ablations, us: {'Union8 original':>16s} {'Union8 W128':>12s} "
          f"{'Union4 original':>16s}")
    for ab in ("", *(f"_{a}" for a in CLUSTER_ABLATIONS)):
        print(f"{ab.strip('_') or 'full':28s} {m[f'cluster{ab}_original']['median_us']:16.1f} "
              f"{m[f'cluster{ab}_w128']['median_us']:12.1f} "
              f"{m[f'union4_cluster{ab}_original']['median_us']:16.1f}")
    print(f"union4 cluster original: {m['union4_cluster_original']['median_us']:.1f} us; "
          f"bitwise: {rec['check']['bitwise_identical']}; NRMS vs cluster "
          f"{rec['check']['nrms_vs_cluster']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="cap64k")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--spin-us", type=float, default=150.0)
    ap.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    from pageweaver_edu.gpu.device import require_gpu

    require_gpu()
    env = result_environment(ROOT)
    for name in (p for p in args.presets.split(",") if p):
        rec = run_preset(name, args, env)
        common.write_result(rec, Path(args.out_dir) / (
            f"union8ws_steps_{name}_{device_tag(env['device'])}.json"))
        print_table(rec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
