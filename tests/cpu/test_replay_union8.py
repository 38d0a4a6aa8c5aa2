"""The CPU emulation of one Union8 group (kernels/union8.cu step by step) and the kernel's
shared-memory geometry: stages of half a page, conflict-free n-tiles, two CTAs per SM."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pageweaver_edu.core.attention import reference_attention
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.union_plan import prepare_unions
from pageweaver_edu.regroup.bitmap import greedy_regroup

torch = pytest.importorskip("torch")
from pageweaver_edu.gpu.union8 import BLOCK_STRIDE, STAGE, Bf16UnionAttention  # noqa: E402
from pageweaver_edu.gpu.union_attention import DIM, PAGE  # noqa: E402
from pageweaver_edu.replay.union8 import emulate_union_group  # noqa: E402

SM_SHARED_BYTES = 228 * 1024  # H200: shared memory per SM (1 KiB of it reserved per CTA)


def bf16(shape, rng):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(
        torch.bfloat16).float().numpy()


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([None, 1, 64, 65, 200]))
def test_emulation_matches_float64_and_is_order_independent(seed, cut):
    """Every slot of every group matches the float64 reference (NRMS < 1%: BF16 P), and a
    query's output is bitwise the same in its original-order and regrouped groups. `cut` puts
    causal limits inside a stage (1, 65, 200: partial stages) and on a stage boundary (64)."""
    rng = np.random.default_rng(seed)
    n, pages, dim = 16, 6, 16
    topk = rng.integers(-1, pages, (n, 3))
    causal = None if cut is None else rng.integers(0, pages * PAGE, n)
    if cut is not None:
        causal[: n // 2] = topk[: n // 2].max(axis=1).clip(0) * PAGE + cut - 1
    lengths = rng.integers(0, pages * PAGE + 1, n)
    q, k, v = bf16((n, 2, dim), rng), bf16((pages, PAGE, dim), rng), bf16((pages, PAGE, dim), rng)
    ref = reference_attention(q, k, v, topk, lengths=lengths, causal_pos=causal)
    plans = [prepare_unions(topk), prepare_unions(topk, greedy_regroup(topk, Grouping(16)))]
    outs = []
    for plan in plans:
        got = {}
        for g in range(len(plan.group_slots)):
            got |= emulate_union_group(q, k, v, plan, g, causal, lengths)
        assert sorted(got) == list(range(n))
        outs.append(got)
    emu = np.stack([outs[0][i] for i in range(n)])
    err = np.linalg.norm(emu - ref) / max(np.linalg.norm(ref), 1e-30)
    assert err < 1e-2
    assert not np.any(emu[np.abs(ref).sum(axis=(1, 2)) == 0])  # empty A_i gives 0
    for i in range(n):
        assert np.array_equal(outs[0][i], outs[1][i])


def test_trace_steps_are_the_kernels_stages():
    """A query whose causal limit falls in the first stage of its page runs one stage there;
    a limit past the page runs both (the trace lists (slot, page, stage) steps)."""
    rng = np.random.default_rng(0)
    topk = np.array([[0, 2], [1, 2]])
    causal = np.array([2 * PAGE + 5, 3 * PAGE])  # query 0: page 2 cut at token 5
    q, k, v = bf16((2, 2, DIM), rng), bf16((3, PAGE, DIM), rng), bf16((3, PAGE, DIM), rng)
    trace = []
    emulate_union_group(q, k, v, prepare_unions(topk), 0, causal, trace=trace)
    steps = [(s["slot"], s["page"], s["stage"]) for s in trace]
    assert steps == [(0, 0, 0), (0, 0, 1), (0, 2, 0), (1, 1, 0), (1, 1, 1), (1, 2, 0), (1, 2, 1)]


def test_stage_layout_is_conflict_free_and_fits_two_ctas_per_sm():
    """n-tile j of a stage = tokens {j, j+8, ..., j+56}: each token in one tile, the 8 row
    addresses of every ldmatrix phase in 8 distinct 16-byte bank groups; two slots of a CTA
    fit twice into an SM's shared memory."""
    row = 2 * DIM
    tiles = np.arange(8)[:, None] + 8 * np.arange(8)[None, :]
    assert sorted(tiles.ravel()) == list(range(STAGE))
    for j in range(8):
        for d in range(0, DIM, 8):
            addr = (tiles[j] // 8) * BLOCK_STRIDE + (tiles[j] % 8) * row + 2 * d
            assert len({int(a) % 128 // 16 for a in addr}) == 8
    smem = Bf16UnionAttention.smem_bytes(2)
    assert 2 * (smem + 1024) <= SM_SHARED_BYTES < 2 * (2 * 2 * PAGE * row + 1024)
