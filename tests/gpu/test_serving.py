"""The kernels inside a serving step: torch's current stream, CUDA-graph capture replayed with
fresh inputs, and no host state that drifts between launches.

Every replay's inputs are new (Top-K with relabelled pages and fresh padding, q, the FP8 cache,
c_i and L_i, sometimes an L_i past B·P that sends the chunk to the capacity fallback) and
copied into the captured tensors; its output, poisoned with NaN before the replay, must equal
an eager call on the same inputs bit for bit. The group counter of the one-SM Union8 must be
0 after every launch, also after a capture that was never replayed or was aborted.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pageweaver_edu.workloads import make_preset

REPLAYS = 100  # fresh-input replays per captured call
README = Path(__file__).resolve().parents[2] / "README.md"


def _case(rng, heads, preset="cap16k-high-overlap"):
    """Fresh inputs of one call: (q, cache, topk, positions, lengths) on the GPU."""
    import torch

    from pageweaver_edu.gpu import fp8_cache_from_bf16

    cap = make_preset(preset)
    n, pages = cap.num_queries, int(cap.topk.max()) + 1
    topk = np.stack([rng.permutation(pages)[cap.topk] for _ in range(heads)])
    topk[:, cap.topk < 0] = -1
    topk[rng.random(topk.shape) < 0.05] = -1
    pos = np.minimum(cap.causal_pos + rng.integers(-200, 1, n), pages * 128 - 1).clip(0)
    lens = (pos + 1 - rng.integers(0, 64, n) * (rng.random(n) < 0.1)).clip(0)
    if rng.random() < 0.2:  # an L_i beyond B·P: the chunk keeps the identity order
        lens[rng.integers(n)] = 512 * 128 + 1
    gen = torch.Generator(device="cuda").manual_seed(int(rng.integers(1 << 30)))
    q = torch.randn((n, 16 * heads, 128), generator=gen, device="cuda").to(torch.bfloat16)
    k, v = (torch.randn((pages, heads, 128, 128), generator=gen, device="cuda")
            .to(torch.bfloat16) for _ in range(2))

    def i32(x):
        return torch.from_numpy(np.ascontiguousarray(x)).to(torch.int32).cuda()

    return q, fp8_cache_from_bf16(k, v), i32(topk if heads > 1 else topk[0]), i32(pos), i32(lens)


def _copy_into(static, fresh):
    """Copy a case's tensors into the captured ones (the cache field by field)."""
    for s, f in zip(static, fresh, strict=True):
        if hasattr(s, "k_tiles"):
            for name in ("k_tiles", "vt_tiles", "k_scale", "v_scale"):
                getattr(s, name).copy_(getattr(f, name))
        else:
            s.copy_(f)


def _capture(call, static):
    """Warm up on a side stream, then capture ``call(*static)`` on it; (graph, output)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            call(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        out = call(*static)
    return graph, out


@pytest.mark.parametrize("heads,window", [(1, 128), (8, 128), (1, None)],
                         ids=["online-h1", "online-h8", "original-h1"])
def test_graph_replays_with_fresh_inputs_equal_eager(heads, window):
    import torch

    from pageweaver_edu.gpu import sparse_union_attention

    def call(q, cache, topk, pos, lens):
        return sparse_union_attention(q, cache, topk, pos, lens, window=window)

    rng = np.random.default_rng(40 + heads)
    static = _case(rng, heads)
    graph, out = _capture(call, static)
    side = torch.cuda.Stream()
    for i in range(REPLAYS):
        fresh = _case(rng, heads)
        _copy_into(static, fresh)
        out.fill_(float("nan"))
        graph.replay()
        if i % 2:  # eager on another stream: ordered by events, no host wait
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                eager = call(*fresh)
            torch.cuda.current_stream().wait_stream(side)
        else:
            eager = call(*fresh)
        torch.cuda.synchronize()
        assert not torch.isnan(out).any(), f"replay {i}: a row was not written"
        assert torch.equal(out, eager), f"replay {i} differs from the eager call"
    if window is not None:  # every order gives the same bits (the one-SM Union8's property)
        assert torch.equal(eager, sparse_union_attention(*fresh, window=None))


def test_side_stream_order_without_host_wait():
    """Inputs written on a side stream behind a long spin: the call on that stream waits for
    them (a launch that did not would read the empty buffers), and no torch op inside the call
    synchronizes the host."""
    import torch

    from pageweaver_edu.gpu import sparse_union_attention

    rng = np.random.default_rng(7)
    q, cache, topk, pos, lens = _case(rng, 2)
    want = sparse_union_attention(q, cache, topk, pos, lens)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        late = [torch.empty_like(x) for x in (q, topk, pos, lens)]
        torch.cuda._sleep(50_000_000)
        for dst, src in zip(late, (q, topk, pos, lens), strict=True):
            dst.copy_(src)
        torch.cuda.set_sync_debug_mode("error")
        try:
            got = sparse_union_attention(late[0], cache, *late[1:])
        finally:
            torch.cuda.set_sync_debug_mode("default")
        got = got.clone()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    assert torch.equal(got, want)


def _one_sm_case():
    import torch

    from pageweaver_edu.core.grouping import Grouping
    from pageweaver_edu.gpu import Fp8WsUnionAttention, gpu_regroup_plan

    rng = np.random.default_rng(12)
    q, cache, topk, pos, lens = _case(rng, 1)
    plan = gpu_regroup_plan(topk, Grouping(128), lengths=lens)
    att = Fp8WsUnionAttention(q, cache, pos, lens, out=torch.full_like(q, float("nan")))
    ref = att.run(plan).clone()
    torch.cuda.synchronize()
    assert not torch.isnan(ref).any() and int(att.counter.item()) == 0
    return att, plan, ref


def _poisoned_run(att, plan, ref, what):
    import torch

    att.out.fill_(float("nan"))
    att.run(plan)
    torch.cuda.synchronize()
    assert torch.equal(att.out, ref), f"{what}: rows missing or different"
    assert int(att.counter.item()) == 0, f"{what}: the group counter was left non-zero"


def test_group_counter_survives_unreplayed_and_aborted_captures():
    """A captured launch that never runs, an aborted capture, replays between eager launches:
    every launch still writes every row, and the counter is 0 after each."""
    import torch

    att, plan, ref = _one_sm_case()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the warm-up on the capture stream
        att.run(plan)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        att.run(plan)
    _poisoned_run(att, plan, ref, "eager after a capture never replayed")
    with pytest.raises(RuntimeError, match="abort this capture"):
        with torch.cuda.graph(torch.cuda.CUDAGraph(), stream=side):
            att.run(plan)
            raise RuntimeError("abort this capture")
    _poisoned_run(att, plan, ref, "eager after an aborted capture")
    for i in range(20):
        att.out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(att.out, ref) and int(att.counter.item()) == 0, f"replay {i}"
        _poisoned_run(att, plan, ref, f"eager after replay {i}")


def test_readme_serving_example_runs():
    """The README's serving example, as printed there."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- serving-example -->\n```python\n(.*?)```", text, re.S)
    assert block, "README has no serving example"
    assert len(block.group(1).strip().splitlines()) <= 16
    exec(compile(block.group(1), str(README), "exec"), {})
