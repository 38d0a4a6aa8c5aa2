"""Union8 / Union4 attention kernels (kernels/union8.cu) against the float64 reference.

Every run poisons the output with NaN first, so a row the kernel forgot stays NaN and fails.
Skipped without a GPU (with the reason) unless PAGEWEAVER_REQUIRE_GPU=1, which makes them fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from pageweaver_edu.core.attention import reference_attention
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.regroup.bitmap import greedy_regroup
from pageweaver_edu.workloads import make_preset
from tests.helpers.gpu_cases import (
    HEADS,
    bf16_qkv,
    causal_tail_case,
    random_case,
    run_cpu_plan,
    run_gpu_plan,
)

NRMS_MAX = 1e-2


def _reference(q, k, v, topk, cpos, lens, offsets=None):
    heads = k.shape[1]
    out = []
    for h in range(heads):
        out.append(reference_attention(
            q[:, h * HEADS:(h + 1) * HEADS].float().cpu(), k[:, h].float().cpu(),
            v[:, h].float().cpu(), topk[h], lengths=lens, causal_pos=cpos,
            request_offsets=offsets))
    return np.concatenate(out, axis=1)


def _run(q, k, v, topk, cpos, lens, perms=None, group=8, offsets=None):
    from pageweaver_edu.gpu import Bf16UnionAttention

    def launch(plan, c, ln, out):
        Bf16UnionAttention(q, (k, v), c, ln, out=out).run(plan)

    return run_cpu_plan(launch, q, topk, cpos, lens, perms, group, offsets)


def _check(out, ref):
    got = out.float().cpu().numpy()
    assert not np.isnan(got).any(), "some output rows were never written"
    err = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)
    assert err <= NRMS_MAX, f"NRMS {err:.3e}"
    empty = ~np.any(ref != 0, axis=(1, 2))
    assert np.all(got[empty] == 0), "rows with an empty A_i must be exactly 0"
    return err


@pytest.mark.parametrize(
    "n,pages,k,heads,causal,lengths",
    [(1, 3, 2, 1, False, False), (5, 8, 4, 1, True, False), (13, 40, 16, 1, True, True),
     (64, 40, 16, 2, False, True), (203, 24, 8, 1, True, True), (300, 64, 16, 1, False, False)],
)
def test_random_inputs_match_reference_and_order(n, pages, k, heads, causal, lengths):
    import torch

    rng = np.random.default_rng(n * 7 + pages)
    topk, cpos, lens = random_case(rng, n, pages, k, heads, causal, lengths)
    q, kk, v = bf16_qkv(rng, n, pages, heads)
    ref = _reference(q, kk, v, topk, cpos, lens)
    orig = _run(q, kk, v, topk, cpos, lens)
    _check(orig, ref)
    perms = [greedy_regroup(topk[h], Grouping(64 if n >= 64 else 8)) for h in range(heads)]
    regrouped = _run(q, kk, v, topk, cpos, lens, perms)
    assert torch.equal(orig, regrouped), "original and regrouped order differ bitwise"
    u4 = _run(q, kk, v, topk, cpos, lens, group=4)
    assert torch.equal(orig, u4), "Union4 and Union8 differ bitwise"
    rand = [rng.permutation(n) for _ in range(heads)]
    assert torch.equal(orig, _run(q, kk, v, topk, cpos, lens, rand))


def test_causal_tail_pages_and_lengths():
    """Every query's last page is cut by c_i or L_i somewhere inside it (or at its edge)."""
    rng = np.random.default_rng(3)
    n, pages = 96, 12
    topk, cpos, lens = causal_tail_case(rng, n, pages)
    q, kk, v = bf16_qkv(rng, n, pages, 1)
    ref = _reference(q, kk, v, topk, cpos, lens)
    _check(_run(q, kk, v, topk, cpos, lens), ref)


def test_empty_supports_give_zero():
    rng = np.random.default_rng(5)
    topk = -np.ones((1, 11, 4), dtype=np.int64)
    topk[0, 3] = [2, 2, -1, 5]
    q, kk, v = bf16_qkv(rng, 11, 6, 1)
    out = _run(q, kk, v, topk, None, None).float().cpu().numpy()
    assert np.all(out[np.arange(11) != 3] == 0)
    ref = _reference(q, kk, v, topk, None, None)
    assert np.linalg.norm(out - ref) / np.linalg.norm(ref) <= NRMS_MAX


def test_packed_requests_tail_groups():
    import torch

    rng = np.random.default_rng(9)
    offsets = np.array([0, 5, 17, 30, 31])
    topk, cpos, lens = random_case(rng, 31, 16, 6, 1, True, False)
    q, kk, v = bf16_qkv(rng, 31, 16, 1)
    ref = _reference(q, kk, v, topk, cpos, lens, offsets)
    out = _run(q, kk, v, topk, cpos, lens, offsets=offsets)
    _check(out, ref)
    perm = greedy_regroup(topk[0], Grouping(8), request_offsets=offsets)
    assert torch.equal(out, _run(q, kk, v, topk, cpos, lens, [perm], offsets=offsets))


@pytest.mark.parametrize("name", ["cap64k", "cap16k-high-overlap", "interleaved-64k",
                                  "beyond-capacity"])
def test_presets(name):
    """Whole preset on the GPU; the float64 reference on 192 rows spread over it."""
    import torch

    cap = make_preset(name)
    topk = cap.topk[None]
    n, pages = cap.num_queries, int(cap.topk.max()) + 1
    rng = np.random.default_rng(1)
    q, kk, v = bf16_qkv(rng, n, pages, 1)
    cpos, lens = cap.causal_pos, cap.lengths
    out = _run(q, kk, v, topk, cpos, lens)
    rows = np.sort(rng.choice(n, 192, replace=False))
    ref = reference_attention(q[rows].float().cpu(), kk[:, 0].float().cpu(),
                              v[:, 0].float().cpu(), cap.topk[rows],
                              lengths=None if lens is None else lens[rows],
                              causal_pos=None if cpos is None else cpos[rows])
    assert not torch.isnan(out).any()
    _check(out[torch.from_numpy(rows).cuda()], ref)
    perm = greedy_regroup(cap.topk, Grouping(128), **cap.regroup_kwargs())
    assert torch.equal(out, _run(q, kk, v, topk, cpos, lens, [perm]))


def test_gpu_prepared_plan_matches_cpu_plan():
    """The online path: π from the GPU regroup and the plan from union_prepare.cu."""
    import torch

    from pageweaver_edu.gpu import Bf16UnionAttention

    rng = np.random.default_rng(11)
    topk, cpos, lens = random_case(rng, 517, 48, 16, 2, True, True)
    q, kk, v = bf16_qkv(rng, 517, 48, 2)
    out, perm = run_gpu_plan(
        lambda plan, c, ln, o: Bf16UnionAttention(q, (kk, v), c, ln, out=o).run(plan),
        q, topk, cpos, lens)
    cpu_perm = [greedy_regroup(topk[h], Grouping(128)) for h in range(2)]
    assert np.array_equal(perm.cpu().numpy(), np.stack(cpu_perm))
    assert torch.equal(out, _run(q, kk, v, topk, cpos, lens, cpu_perm))
    _check(out, _reference(q, kk, v, topk, cpos, lens))


def test_gather_baseline_matches_reference():
    import torch

    from pageweaver_edu.replay.baselines import dedup_topk, gather_reference

    rng = np.random.default_rng(13)
    topk, cpos, lens = random_case(rng, 70, 20, 8, 2, True, True)
    q, kk, v = bf16_qkv(rng, 70, 20, 2)
    ids = dedup_topk(torch.from_numpy(topk).cuda())
    out = gather_reference(q, kk, v, ids, torch.from_numpy(cpos).cuda(),
                           torch.from_numpy(lens).cuda(), chunk=32)
    _check(out, _reference(q, kk, v, topk, cpos, lens))
