"""The serving entry point and the launch guards, host side, on a CPU (fake PyCUDA).

What runs on the GPU (graph capture, fresh-input replays, the counter reset) is checked by
tests/gpu/test_serving.py; here: which launches one call makes and with what, the one-line
refusals of misaligned or mistyped operands, and the register-split guard of the
warp-specialized kernels.
"""

from __future__ import annotations

import numpy as np
import pytest

from pageweaver_edu import PageWeaverInputError
from pageweaver_edu.workloads import make_preset
from tests.helpers.fake_gpu import cpu_tensors_as_cuda, install_fake_pycuda

torch = pytest.importorskip("torch")


@pytest.fixture
def fake(monkeypatch):
    log = install_fake_pycuda(monkeypatch)
    cpu_tensors_as_cuda(monkeypatch)
    return log


def _misaligned(shape, dtype):
    """A contiguous tensor of ``shape`` that starts one element past an aligned buffer."""
    numel = int(np.prod(shape))
    return torch.zeros(numel + 16, dtype=dtype)[1:1 + numel].view(shape)


def _inputs(heads=1, n=203, pages=8):
    from pageweaver_edu.gpu import fp8_cache_from_bf16

    cap = make_preset("cap16k-high-overlap")
    q = torch.zeros((n, 16 * heads, 128), dtype=torch.bfloat16)
    k = torch.randn((pages, heads, 128, 128)).to(torch.bfloat16)
    topk = torch.from_numpy(np.stack([cap.topk[:n] % pages] * heads)).to(torch.int32)
    pos = torch.from_numpy(cap.causal_pos[:n]).to(torch.int32)
    return q, fp8_cache_from_bf16(k, k), topk, pos, pos + 1


@pytest.mark.parametrize("heads", [1, 8])
def test_one_call_is_plan_then_union8(fake, heads):
    """Online: a memset of the handshake words (the chunk has two windows), the fused plan, the
    warp-specialized Union8 over that plan; original order: count, emit, Union8."""
    from pageweaver_edu.gpu import sparse_union_attention

    q, cache, topk, pos, lens = _inputs(heads)
    out = sparse_union_attention(q, cache, topk, pos, lens)
    assert out.shape == q.shape and out.dtype == torch.bfloat16
    steps = [e[1] if e[0] == "launch" else e[0] for e in fake if e[0] in ("launch", "memset")]
    assert steps == ["memset", "regroup_plan_pairs_w128", "union8ws_claim_order", "union8ws_fp8"]
    plan_args = [e for e in fake if e[0] == "launch"][0][5]
    assert plan_args[1] != 0  # L_i reaches the capacity fallback
    fake.clear()
    sparse_union_attention(q, cache, topk, pos, lens, window=None, out=out)
    names = [e[1] for e in fake if e[0] == "launch"]
    assert names == ["union_count", "union_emit", "union8ws_claim_order", "union8ws_fp8"]
    union = [e for e in fake if e[0] == "launch"][-1][5]
    assert union[3] == out.data_ptr()


def test_serving_refuses_what_it_would_have_to_read_back(fake):
    from pageweaver_edu.gpu import sparse_union_attention

    q, cache, topk, pos, lens = _inputs()
    cases = [
        ((q, cache, topk.long(), pos, lens), "topk must be a contiguous torch.int32"),
        ((q, cache, topk, pos.long(), lens), "positions must be an int32 CUDA tensor"),
        ((q, cache, topk, pos, lens[:-1]), r"lengths must have shape \[N\] = \(203,\)"),
        ((q, cache, topk[:, :-1], pos, lens), "topk must be"),
        ((q, (q, q), topk, pos, lens), "cache must be an Fp8Cache"),
    ]
    for args, match in cases:
        with pytest.raises(PageWeaverInputError, match=match):
            sparse_union_attention(*args)
    assert not [e for e in fake if e[0] == "launch"]


def test_misaligned_operands_are_refused_in_one_line(fake):
    """q, out, the FP8 and BF16 tiles and the BF16 pages: a view 2 bytes off an aligned start
    is refused, naming the operand, before anything is launched."""
    import pageweaver_edu.gpu as g

    q, cache, *_ = _inputs()
    bad_q = _misaligned(tuple(q.shape), torch.bfloat16)
    checks = [
        (lambda: g.Fp8WsUnionAttention(bad_q, cache), "q starts at address"),
        (lambda: g.Fp8UnionAttention(q, cache, out=bad_q), "out starts at address"),
        (lambda: g.Fp8UnionAttention(q, cache, out=q[:, :8]), "out must be a contiguous"),
        (lambda: g.Fp8UnionAttention(q, cache, out=torch.zeros_like(q[:-1])),
         "out must have q's shape"),
    ]
    tiles = _misaligned(tuple(cache.k_tiles.shape), torch.uint8)
    shifted = g.Fp8Cache(tiles, cache.vt_tiles, cache.k_scale, cache.v_scale, cache.logical)
    checks.append((lambda: g.Fp8WsUnionAttention(q, shifted), "k_tiles starts at address"))
    k = torch.zeros((8, 1, 128, 128), dtype=torch.bfloat16)
    bad_k = _misaligned((8, 1, 128, 128), torch.bfloat16)
    checks.append((lambda: g.Bf16UnionAttention(q, (bad_k, k)), "k starts at address"))
    half = g.bf16_half_pages(k, k)
    bad_half = g.Bf16HalfPages(half.k_tiles, _misaligned(tuple(half.vt_tiles.shape),
                                                           torch.uint8))
    checks.append((lambda: g.Bf16WsUnionAttention(q, bad_half), "vt_tiles starts at address"))
    for make, match in checks:
        with pytest.raises(PageWeaverInputError, match=match) as err:
            make()
        assert "\n" not in str(err.value)


def test_register_split_guard(fake, monkeypatch):
    """An entry built with fewer registers than the producer / consumer split needs (168) is
    refused before its first launch; 168 passes."""
    import pageweaver_edu.gpu as g
    from pageweaver_edu.gpu.union8ws import min_entry_registers
    from tests.helpers import fake_gpu

    assert min_entry_registers() == 168
    q, cache, *_ = _inputs()
    g.Fp8WsUnionAttention.kernel(8, 6)
    monkeypatch.setattr(fake_gpu, "REGS", 160)
    with pytest.raises(g.GPULaunchError, match="160 registers per thread.*needs 168"):
        g.Bf16WsUnionAttention.kernel(8, 6)
