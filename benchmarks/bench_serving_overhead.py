"""Host overhead of one serving call: eager vs CUDA-graph replay, on cap16k-high-overlap.

The call is :func:`pageweaver_edu.gpu.sparse_union_attention` (fused W128 plan + the one-SM
FP8 Union8) on the preset's 4,096 queries, for 1 and 8 KV heads. Three ways to run it:

* ``eager_default`` — the call on torch's default stream (launches go straight there);
* ``eager_side`` — the call on another torch stream (the paired PyCUDA stream, forked and
  joined with one event each way);
* ``graph_replay`` — the call captured once with ``torch.cuda.graph``, then ``replay()``.

``median_us`` (with ``p10_us`` / ``p90_us``) is the host time of one call: from entering it
to its return, with the GPU left running (nothing waits for it inside the loop). ``wall_us``
is the time per call of ``reps`` back-to-back calls and one final synchronisation: the larger
of the host and the GPU time per call. Before timing, each way's output is checked bitwise
against the eager call on the same inputs.

    python3 benchmarks/bench_serving_overhead.py            # -> results/serving_overhead_<gpu>.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pageweaver_edu.gpu import fp8_cache_from_bf16, sparse_union_attention  # noqa: E402
from pageweaver_edu.gpu.device import require_gpu  # noqa: E402
from pageweaver_edu.records import result_environment  # noqa: E402
from pageweaver_edu.workloads import make_preset  # noqa: E402

PRESET = "cap16k-high-overlap"


def device_slug(name: str) -> str:
    """``h100`` / ``h200`` for those GPUs, else the device name in lowercase word characters."""
    found = re.search(r"\b([HB]\d{3})\b", name)
    return found.group(1).lower() if found else re.sub(r"\W+", "_", name).strip("_").lower()


def inputs(heads: int):
    """q, the FP8 cache, Top-K, c_i and L_i of the preset for ``heads`` KV heads."""
    import torch

    cap = make_preset(PRESET)
    pages = int(cap.topk.max()) + 1
    gen = torch.Generator(device="cuda").manual_seed(heads)
    q = torch.randn((cap.num_queries, 16 * heads, 128), generator=gen, device="cuda")
    kv = torch.randn((2, pages, heads, 128, 128), generator=gen, device="cuda")
    topk = torch.from_numpy(np.stack([np.roll(cap.topk, h, 0) for h in range(heads)]))
    pos = torch.from_numpy(cap.causal_pos).to(torch.int32).cuda()
    return (q.to(torch.bfloat16), fp8_cache_from_bf16(kv[0].bfloat16(), kv[1].bfloat16()),
            topk.to(torch.int32).cuda().contiguous(), pos, pos + 1)


def timed(fn, reps: int) -> dict:
    """Host time per call (median, p10, p90) and wall time per call of ``reps`` calls."""
    import torch

    host = np.empty(reps)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(reps):
        t0 = time.perf_counter()
        fn()
        host[i] = time.perf_counter() - t0
    torch.cuda.synchronize()
    wall = (time.perf_counter() - start) / reps
    p10, p50, p90 = (1e6 * float(np.percentile(host, p)) for p in (10, 50, 90))
    return {"median_us": p50, "p10_us": p10, "p90_us": p90, "wall_us": 1e6 * wall, "reps": reps}


def measure(heads: int, reps: int) -> list[dict]:
    """The three rows of one KV-head count, each checked against the eager output first."""
    import torch

    args = inputs(heads)
    want = sparse_union_attention(*args).clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())

    def on_side():
        with torch.cuda.stream(side):
            return sparse_union_attention(*args)

    got_side = on_side()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        out = sparse_union_attention(*args)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(got_side, want) and torch.equal(out, want), "outputs differ"
    rows = []
    for name, fn in (("eager_default", lambda: sparse_union_attention(*args)),
                     ("eager_side", on_side), ("graph_replay", graph.replay)):
        for _ in range(20):
            fn()
        rows.append({"name": f"{name}_h{heads}", "kv_heads": heads, **timed(fn, reps)})
        torch.cuda.current_stream().wait_stream(side)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="default: results/serving_overhead_<gpu>.json")
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--heads", default="1,8")
    args = ap.parse_args(argv)
    require_gpu()
    import torch

    rows = [r for h in map(int, args.heads.split(",")) for r in measure(h, args.reps)]
    env = result_environment()
    out = Path(args.out or ROOT / "benchmarks" / "results"
               / f"serving_overhead_{device_slug(torch.cuda.get_device_name())}.json")
    record = {**env, "workload": PRESET, "window": 128, "cache": "fp8", "results": rows}
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"{'row':<22} {'host us/call':>13} {'p10':>8} {'p90':>8} {'wall us/call':>13}")
    for r in rows:
        print(f"{r['name']:<22} {r['median_us']:>13.1f} {r['p10_us']:>8.1f} {r['p90_us']:>8.1f} "
              f"{r['wall_us']:>13.1f}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
