"""The fused online regroup (regroup_plan_pairs_w<W>, pageweaver_edu.gpu.regroup_plan) against
the CPU reference: π bit-identical to greedy_regroup and, group for group, the union plan of
prepare_unions for that π (pages, membership bytes, counts, CTA flags), on random inputs with
packed requests, chunks, ties, empty rows, duplicates, the capacity fallback (also through the
counted chunk path, launch after launch) and several KV heads; and the Union kernels give the
same bits on the fused plan as on the CPU plan. Runs only with a GPU (tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from pageweaver_edu import PageWeaverInputError, greedy_regroup, prepare_unions
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.inputs import as_request_offsets
from pageweaver_edu.workloads import make_preset, preset_names
from tests.gpu.test_regroup_and_union_prep import assert_same_plan
from tests.gpu.test_regroup_and_union_prep import random_case as regroup_case


def fused_vs_cpu(topk, grouping, **kw):
    """π and plan of the fused launch against the CPU regroup and union preparation."""
    from pageweaver_edu.gpu import gpu_regroup_plan

    ref_perm = greedy_regroup(topk, grouping, **kw)
    plan = gpu_regroup_plan(topk, grouping, **kw)
    assert plan.row_capacity == grouping.group * topk.shape[1]
    got = plan.to_cpu()
    assert np.array_equal(got.perm, ref_perm), np.flatnonzero(got.perm != ref_perm)[:5]
    offsets = kw.get("request_offsets")
    assert_same_plan(prepare_unions(topk, ref_perm, offsets, grouping.group), got)
    return plan


def fused_case(rng):
    """regroup_case limited to what the fused kernels hold: K <= 16, W <= 128, g <= 8."""
    topk, window, group, kw = regroup_case(rng)
    return topk, Grouping(min(window, 128 // group * group), group, kw.pop("capacity"),
                          kw.pop("chunk_size")), kw


@pytest.mark.parametrize("seed", range(40))
def test_random_inputs_match_cpu(seed):
    rng = np.random.default_rng(1000 + seed)
    topk, grouping, kw = fused_case(rng)
    fused_vs_cpu(topk, grouping, **kw)


@pytest.mark.parametrize("name", preset_names())
@pytest.mark.parametrize("window", [64, 128])
def test_presets_match_cpu(name, window):
    cap = make_preset(name)
    fused_vs_cpu(cap.topk, Grouping(window), **cap.regroup_kwargs())


def test_ties_empty_rows_and_small_windows():
    topk = np.array([[1, 2], [1, 2], [-1, -1], [3, 4], [1, 2], [-1, -7], [3, 4], [5, 5]] * 20)
    for group in (1, 2, 4, 8):
        for window in (8, 16, 32, 64, 128):
            if window % group == 0:
                fused_vs_cpu(topk, Grouping(window, group))


def test_fallback_chunks_are_the_identity_with_their_plan():
    rng = np.random.default_rng(7)
    topk = rng.integers(0, 200, size=(1000, 16))
    topk[700, 3] = 600  # chunk [512, 768) of request 0 needs > B pages
    kw = dict(request_offsets=[0, 900, 1000])
    for _ in range(3):  # the per-chunk scratch must be clean again after every launch
        plan = fused_vs_cpu(topk, Grouping(64, chunk_size=256), **kw).to_cpu()
    assert np.array_equal(plan.perm[512:768], np.arange(512, 768))
    assert 600 in plan.pages.tolist()  # the fallback's groups keep their page ids >= B
    lengths = np.full(1000, 100)
    lengths[950] = 512 * 128 + 1  # request 1 by length
    fused_vs_cpu(topk, Grouping(128, chunk_size=256), lengths=lengths, **kw)


@pytest.mark.parametrize("window", [64, 128])
def test_counted_chunk_path_rewrites_the_plan(window):
    """Every multi-window chunk through the counted path (a test build): a flagged chunk's
    plan is emitted again, whole, by the window that rewrites π."""
    import torch

    from pageweaver_edu.gpu import RegroupPlanLaunch

    rng = np.random.default_rng(11)
    topk = rng.integers(0, 300, size=(1000, 16))
    offsets, grouping = [0, 900, 1000], Grouping(window, chunk_size=256)
    flagged = topk.copy()
    flagged[700, 3] = 600
    launch = RegroupPlanLaunch(1000, 1, 16, grouping, as_request_offsets(offsets, 1000),
                               options=("-DPW_CHUNK_NEVER_CLEAN",))
    for ids in (topk, flagged, topk, flagged, flagged, topk):
        got = launch.run(torch.from_numpy(ids.astype(np.int32)).cuda()[None]).to_cpu()
        perm = greedy_regroup(ids, grouping, request_offsets=offsets)
        assert np.array_equal(got.perm, perm)
        assert_same_plan(prepare_unions(ids, perm, offsets), got)


def test_kv_heads_batch_matches_per_head():
    import torch

    from pageweaver_edu.gpu import gpu_regroup_plan

    cap = make_preset("cap64k")
    heads = np.stack([np.roll(cap.topk, 997 * h, axis=0) for h in range(3)])
    plans = gpu_regroup_plan(torch.from_numpy(heads).cuda(), Grouping(128)).to_cpu()
    for h in range(3):
        perm = greedy_regroup(heads[h], Grouping(128))
        assert np.array_equal(plans[h].perm, perm)
        assert_same_plan(prepare_unions(heads[h], perm), plans[h])


def test_union_kernels_read_the_row_plan():
    """Every Union8 kernel gives the same bits on the fused plan as on the CPU plan of its π."""
    import torch

    from pageweaver_edu.gpu import (
        UNION_KERNELS,
        Fp8UnionAttention,
        GpuUnionPlan,
        fp8_cache_from_bf16,
        gpu_regroup_plan,
    )
    from tests.helpers.gpu_cases import bf16_qkv
    from tests.helpers.gpu_cases import random_case as attention_case

    rng = np.random.default_rng(3)
    n, pages, heads = 517, 48, 2
    topk, cpos, _ = attention_case(rng, n, pages, 16, heads, True, False)
    q, k, v = bf16_qkv(rng, n, pages, heads)
    fused = gpu_regroup_plan(torch.from_numpy(topk).to(torch.int32).cuda(), Grouping(128))
    cpu = GpuUnionPlan.from_cpu([prepare_unions(topk[h], p.perm)
                                 for h, p in enumerate(fused.to_cpu())])
    fp8 = fp8_cache_from_bf16(k, v)
    for cls in UNION_KERNELS:
        kv = fp8 if issubclass(cls, Fp8UnionAttention) else (k, v)
        outs = []
        for plan in (fused, cpu):
            att = cls(q, kv, torch.from_numpy(cpos).cuda())
            att.out.fill_(float("nan"))
            outs.append(att.run(plan).clone())
        assert not torch.isnan(outs[0]).any(), cls.__name__
        assert torch.equal(outs[0], outs[1]), cls.__name__


def test_input_errors():
    from pageweaver_edu.gpu import gpu_regroup_plan

    topk = np.zeros((16, 4), dtype=np.int64)
    with pytest.raises(PageWeaverInputError, match="K <= 16"):
        gpu_regroup_plan(np.zeros((16, 17), dtype=np.int64), Grouping(64))
    with pytest.raises(PageWeaverInputError, match="W <= 128"):
        gpu_regroup_plan(topk, Grouping(256))
    from pageweaver_edu.gpu import regroup_plan_launch

    with pytest.raises(PageWeaverInputError, match="out is not taken"):
        regroup_plan_launch(16, 1, 4, Grouping(8)).run(None, None, out=object())
