"""A/B of the lookahead walk, one run (H200): the FP16-score FP8 build and the BF16 lookahead
against the kernel before them. The earlier kernel is compiled from a copy of its source at
the commit before the experiment (``kernels/union8ws_head.cu``, made with
``git show 8c4652d:kernels/union8ws.cu > kernels/union8ws_head.cu``, not tracked).

Per build and ordering (cap64k, one KV head, original and fixed W128 ids), the attention
kernel alone (CUDA events, L2 flushed, median of 25); checked: the eager FP8 and the BF16
outputs bitwise equal to the earlier kernel's, the FP16-score output bitwise equal across the
two orderings, its NRMS against float64 and against its CPU emulation on 160 sampled rows.

    python3 benchmarks/bench_union8ws_scores16_ab.py cap64k
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import union8_bench_common as common

from pageweaver_edu.records import result_environment

ROOT = Path(__file__).resolve().parents[1]


def builds(x, cache, halves):
    from pageweaver_edu.gpu import Bf16WsUnionAttention, Fp8WsUnionAttention

    class Bf16Head(Bf16WsUnionAttention):
        source = "union8ws_head.cu"

    class Fp8Head(Fp8WsUnionAttention):
        source = "union8ws_head.cu"

        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            self.build_options = tuple(o for o in self.build_options if "S16" not in o)

    fp8 = lambda **kw: Fp8WsUnionAttention(x.q, cache, x.cpos, x.lens, **kw)  # noqa: E731
    return {"fp8_eager_head": Fp8Head(x.q, cache, x.cpos, x.lens), "fp8_eager": fp8(),
            "fp8_s16": fp8(scores16=True),
            "fp8_s16_no_softmax": fp8(scores16=True, ablate="no_softmax"),
            "fp8_s16_no_mma": fp8(scores16=True, ablate="no_mma"),
            "fp8_s16_ring": fp8(scores16=True, ablate="ring_only"),
            "bf16_head": Bf16Head(x.q, halves, x.cpos, x.lens),
            "bf16_lookahead": Bf16WsUnionAttention(x.q, halves, x.cpos, x.lens)}


def run_preset(preset: str, env: dict) -> dict:
    import torch

    from pageweaver_edu.gpu import bf16_half_pages, fp8_cache_from_bf16
    from pageweaver_edu.replay.fp8 import Fp8KV, fp8_union_attention, nrms, reference_on_cache

    x = common.preset_inputs(preset, 1)
    cache = fp8_cache_from_bf16(x.k, x.v)
    o = common.prepare_orderings(x, (128,), np.random.default_rng(0))
    atts = builds(x, cache, bf16_half_pages(x.k, x.v))
    fresh = common.poisoned(*atts.values())
    checked = ("fp8_eager_head", "fp8_eager", "fp8_s16", "bf16_head", "bf16_lookahead")
    res = {key: {k: fresh(lambda k=k, key=key: atts[k].run(o.plans[key])).clone()
                 for k in checked} for key in ("original", "w128")}
    chk = {"eager_eq_head": all(torch.equal(r["fp8_eager"], r["fp8_eager_head"])
                                for r in res.values()),
           "bf16_eq_head": all(torch.equal(r["bf16_lookahead"], r["bf16_head"])
                               for r in res.values()),
           "s16_orderings": torch.equal(res["original"]["fp8_s16"], res["w128"]["fp8_s16"])}
    rows = np.sort(np.random.default_rng(3).choice(x.n, 160, replace=False))
    kv = cache.logical
    kv = Fp8KV(kv.k8.cpu(), kv.v8.cpu(), kv.k_scale.cpu(), kv.v_scale.cpu())
    ridx = torch.from_numpy(rows).cuda()
    qs, ts = x.q[ridx].cpu(), x.topk[:, rows]
    cs = None if x.cpos is None else x.cpos.cpu().numpy()[rows]
    ls = None if x.lens is None else x.lens.cpu().numpy()[rows]
    ref = reference_on_cache(qs, kv, ts, cs, ls)
    for k, emu_kw in (("fp8_s16", {"scores16": True}), ("fp8_eager", {})):
        got = res["original"][k][ridx].float().cpu()
        emu = fp8_union_attention(qs, kv, ts, cs, ls, **emu_kw).float()
        chk[f"nrms_{k}_vs_float64"] = nrms(got, ref)
        chk[f"nrms_{k}_vs_emulation"] = nrms(got, emu)

    class Args:
        reps, spin_us = 25, 150.0

    t = common.Timings(Args(), fp8_peak_tflops=1979.0)
    for key in ("original", "w128"):
        for k, att in atts.items():
            t.add(f"{k}_{key}", lambda att=att, key=key: att.run(o.plans[key]),
                  c4=o.stats[key]["c4"])
    return {**env, "workload": preset, "kv_heads": 1, "queries": x.n, "check": chk,
            "results": t.results}


def main(argv=None) -> int:
    presets = (argv or sys.argv[1:] or ["cap64k"])[0]
    env = result_environment(ROOT)
    for preset in presets.split(","):
        rec = run_preset(preset, env)
        path = Path(os.environ.get("OUT", ROOT / "benchmarks" / "results"))
        (path / f"union8ws_scores16_ab_{preset}_h200.json").write_text(
            json.dumps(rec, indent=1) + "\n", encoding="utf-8")
        m = {r["name"]: r["median_us"] for r in rec["results"]}
        print(preset, json.dumps(rec["check"]))
        for k in dict.fromkeys(n.rsplit("_", 1)[0] for n in m):
            print(f"  {k:22s} original {m[k + '_original']:8.1f}  w128 {m[k + '_w128']:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
