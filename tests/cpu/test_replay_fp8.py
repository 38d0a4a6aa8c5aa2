"""CPU emulation of the FP8 Union8 arithmetic (pageweaver_edu/replay/fp8.py).

NRMS is measured against the float64 reference on the dequantized FP8 cache (the values the
kernel receives); the cache quantization itself is reported separately by error_budget
(pageweaver_edu/replay/fp8_budget.py).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from pageweaver_edu.replay.e4m3 import quantize_kv, quantize_q_rows, to_e4m3  # noqa: E402
from pageweaver_edu.replay.fp8 import fp8_union_attention, nrms, reference_on_cache  # noqa: E402
from pageweaver_edu.replay.fp8_budget import STAGES, error_budget, stage_nrms  # noqa: E402
from pageweaver_edu.workloads import make_preset  # noqa: E402

NRMS_MAX = 0.04  # the project's bound (the paper: 2.2-4.0% against its reference)


def _inputs(seed, n, pages, k, heads=1, causal=False, lengths=False, pad=0.1):
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn((n, 16 * heads, 128), generator=gen).to(torch.bfloat16)
    kk = torch.randn((pages, heads, 128, 128), generator=gen).to(torch.bfloat16)
    v = torch.randn((pages, heads, 128, 128), generator=gen).to(torch.bfloat16)
    topk = rng.integers(0, pages, size=(heads, n, k))
    topk[rng.random(topk.shape) < pad] = -1
    cpos = rng.integers(0, pages * 128, size=n) if causal else None
    lens = rng.integers(1, pages * 128 + 1, size=n) if lengths else None
    return q, kk, v, topk, cpos, lens


def test_e4m3_rounding_and_saturation():
    x = torch.tensor([500.0, -1000.0, 448.0, 1.0625, 1.1875, 2.0**-10, 3 * 2.0**-11, 0.0])
    got = to_e4m3(x).float().tolist()
    # 1.0625 is a tie between 1.0 and 1.125 (even: 1.0); 2^-10 ties to 0; 1.5 * 2^-10 -> 2^-9.
    assert got == [448.0, -448.0, 448.0, 1.0, 1.25, 0.0, 2.0**-9, 0.0]


def test_cache_moves_whole():
    kv = quantize_kv(torch.randn(3, 2, 128, 128), torch.randn(3, 2, 128, 128))
    moved = kv.to("cpu")
    assert moved is not kv
    for name in ("k8", "v8", "k_scale", "v_scale"):
        a, b = getattr(kv, name), getattr(moved, name)
        assert b.device.type == "cpu" and b.dtype == a.dtype and torch.equal(
            a.float(), b.float())


def test_q_rows_quantize_to_full_range_and_zero_rows_stay_zero():
    q = torch.randn((3, 16, 128)).to(torch.bfloat16)
    q[1, 5] = 0
    q8, qs = quantize_q_rows(q)
    assert q8.dtype == torch.float8_e4m3fn and qs.shape == (3, 16)
    amax = q8.float().abs().amax(dim=-1)
    assert torch.all(amax[qs > 0] == 448.0)
    assert qs[1, 5] == 0 and torch.all(q8[1, 5].float() == 0)
    err = (q8.float() * qs[..., None] - q.float()).abs().max() / q.float().abs().max()
    assert err < 2.0**-4


@pytest.mark.parametrize("n,pages,k,heads,causal,lengths", [
    (1, 3, 2, 1, False, False), (40, 12, 8, 1, True, False), (64, 24, 16, 2, True, True),
    (96, 40, 16, 1, False, True)])
def test_emulation_close_to_float64(n, pages, k, heads, causal, lengths):
    q, kk, v, topk, cpos, lens = _inputs(n + pages, n, pages, k, heads, causal, lengths)
    kv = quantize_kv(kk, v)
    out = fp8_union_attention(q, kv, topk, cpos, lens)
    assert out.dtype == torch.bfloat16 and out.shape == q.shape
    ref = reference_on_cache(q, kv, topk, cpos, lens)
    assert nrms(out, ref) <= NRMS_MAX


@pytest.mark.parametrize("name", ["cap64k", "cap16k-high-overlap", "interleaved-64k"])
def test_presets_prefix_close_to_float64(name):
    cap = make_preset(name)
    rows = slice(0, 48)
    topk = cap.topk[rows]
    pages = int(cap.topk.max()) + 1
    gen = torch.Generator().manual_seed(1)
    q = torch.randn((48, 16, 128), generator=gen).to(torch.bfloat16)
    kk = torch.randn((pages, 128, 128), generator=gen).to(torch.bfloat16)
    v = torch.randn((pages, 128, 128), generator=gen).to(torch.bfloat16)
    cpos = None if cap.causal_pos is None else cap.causal_pos[rows]
    lens = None if cap.lengths is None else cap.lengths[rows]
    kv = quantize_kv(kk, v)
    out = fp8_union_attention(q, kv, topk, cpos, lens)
    assert nrms(out, reference_on_cache(q, kv, topk, cpos, lens)) <= NRMS_MAX


def test_empty_supports_and_invisible_pages_give_exact_zero():
    q, kk, v, _, _, _ = _inputs(3, 6, 5, 3)
    topk = np.array([[-1, -1, -1], [2, 2, -1], [4, -1, 0], [-1, -1, -1], [1, 3, -1],
                     [3, -1, -1]])
    lens = np.array([10, 300, 0, 7, 129, 5])  # row 2: L = 0 (nothing visible)
    cpos = np.array([0, 1000, 600, 3, 200, 383])  # row 5: page 3 starts at 384 > c_i
    kv = quantize_kv(kk, v)
    out = fp8_union_attention(q, kv, topk, cpos, lens).float()
    for i in (0, 2, 3, 5):
        assert torch.all(out[i] == 0)
    assert torch.all(out[[1, 4]].abs().sum(dim=-1) > 0)
    # A page seen through one token: the output is that token's V row, up to E4M3 of V only.
    one = fp8_union_attention(q[:1], kv, np.array([[2]]), np.array([256]), None)
    vrow = (kv.v8[2, 0, 0].float() * kv.v_scale[0]).expand(16, -1)
    assert torch.allclose(one[0].float(), vrow, rtol=8e-3, atol=1e-6)


def test_stage_budgets_sum_in_quadrature():
    q, kk, v, topk, cpos, lens = _inputs(7, 32, 16, 10, 1, True, False)
    b = error_budget(q, kk[:, 0], v[:, 0], topk[0], cpos, lens)
    assert set(STAGES) <= set(b)
    assert 5e-3 < b["q_quantization"] < NRMS_MAX and 5e-3 < b["p_quantization"] < NRMS_MAX
    assert b["fp32_accumulation"] < 1e-4       # FP32 online softmax: far below the FP8 steps
    assert 1e-4 < b["bf16_output"] < 5e-3      # BF16 rounding of the output, about 2^-9
    assert b["total"] <= NRMS_MAX
    assert 0.8 * b["rss"] <= b["total"] <= 1.25 * b["rss"]  # independent errors add in quadrature
    assert b["total"] <= sum(b[s] for s in STAGES)
    assert b["kv_cache"] > 5e-3  # the storage format's own error, not counted in `total`
    kv = quantize_kv(kk, v)
    assert stage_nrms("q_quantization", q, kv, topk, cpos, lens) == pytest.approx(
        b["q_quantization"])


def test_single_stages():
    q, kk, v, topk, cpos, lens = _inputs(5, 8, 6, 4, 1, False, True)
    kv = quantize_kv(kk, v)
    assert 0 < stage_nrms("p_quantization", q, kv, topk, cpos, lens) < NRMS_MAX
    assert stage_nrms("fp32_accumulation", q, kv, topk, cpos, lens) < 1e-4


def test_deterministic_and_grouping_free():
    q, kk, v, topk, cpos, lens = _inputs(11, 37, 16, 8, 2, True, True)
    kv = quantize_kv(kk, v)
    a = fp8_union_attention(q, kv, topk, cpos, lens)
    b = fp8_union_attention(q, kv, topk, cpos, lens)
    assert torch.equal(a, b)
    # Padding and duplicates in a row do not change the result (a page counts once).
    t2 = np.concatenate([topk, topk[:, :, :2], -np.ones_like(topk[:, :, :1])], axis=2)
    assert torch.equal(a, fp8_union_attention(q, kv, t2, cpos, lens))


def test_lazy_rescale_with_tau_zero_is_the_eager_step():
    """tau = 0 moves the reference maximum on every increase: the eager online softmax."""
    q, kk, v, topk, cpos, lens = _inputs(7, 40, 24, 8, 1, True, True)
    kv = quantize_kv(kk, v)
    eager = fp8_union_attention(q, kv, topk, cpos, lens, bf16_out=False)
    assert torch.equal(eager, fp8_union_attention(q, kv, topk, cpos, lens, bf16_out=False,
                                                  lazy_tau=0.0))


@pytest.mark.parametrize("p8_sums", [False, True])
def test_lazy_rescale_close_to_float64(p8_sums):
    """The warp-specialized kernel's lazy build (P at 2^6, tau = 2) within the FP8 budget."""
    q, kk, v, topk, cpos, lens = _inputs(8, 60, 30, 12, 1, True, True)
    kv = quantize_kv(kk, v)
    ref = reference_on_cache(q, kv, topk, cpos, lens)
    eager = nrms(fp8_union_attention(q, kv, topk, cpos, lens), ref)
    lazy = nrms(fp8_union_attention(q, kv, topk, cpos, lens, p_shift=6, lazy_tau=2.0,
                                    p8_sums=p8_sums), ref)
    assert lazy < 0.04 and lazy < 1.5 * eager
