"""The warp-specialized FP8 Union8 (kernels/union8ws.cu) against the cluster kernel, the CPU
emulation and float64.

As shipped (``tc_sum=False, lazy=False``) the kernel runs the cluster kernel's arithmetic op for
op, so the two outputs must be bitwise equal on every input. The measured alternatives (l from
the tensor core; O accumulated in the tensor core with a lazy rescale) and the accurate mode
(two-level E4M3 Q and P) are checked against the float64 reference on the FP8 cache and their
own emulation (test_union8_fp8's bounds; the accurate mode's: at most 0.30 %). Every
build: every row written (NaN-poisoned outputs), empty A_i rows exactly 0, and bitwise equality
of every ordering, ring depth and schedule, and of consecutive launches through one group
counter (0 again after each).
"""

from __future__ import annotations

import numpy as np
import pytest

from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.gpu.union8ws import emulation_options
from pageweaver_edu.regroup.bitmap import greedy_regroup
from pageweaver_edu.workloads import make_preset
from tests.gpu.test_union8 import _check as check_bf16
from tests.gpu.test_union8 import _reference
from tests.gpu.test_union8_fp8 import _check, _run, _tensors
from tests.helpers.gpu_cases import (
    bf16_qkv,
    causal_tail_case,
    random_case,
    run_cpu_plan,
    run_gpu_plan,
)

# The builds with their own arithmetic (keyword arguments of Fp8WsUnionAttention): the
# measured alternatives and the accurate mode (its bounds: test_union8_fp8._check); the build
# with none of them runs the cluster kernel's.
BUILDS = [{"tc_sum": True}, {"lazy": True}, {"tc_sum": True, "lazy": True}, {"accurate": True}]


def _ws(q, cache, topk, cpos, lens, perms=None, offsets=None, slots=6, overlap=True,
        **build):
    from pageweaver_edu.gpu import Fp8WsUnionAttention

    def launch(plan, c, ln, out):
        Fp8WsUnionAttention(q, cache, c, ln, slots=slots, out=out, overlap=overlap,
                            **build).run(plan)

    return run_cpu_plan(launch, q, topk, cpos, lens, perms, 8, offsets)


@pytest.mark.parametrize(
    "n,pages,k,heads,causal,lengths",
    [(1, 3, 2, 1, False, False), (5, 8, 4, 1, True, False), (13, 40, 16, 1, True, True),
     (64, 40, 16, 2, False, True), (203, 24, 8, 1, True, True), (300, 64, 16, 1, False, False),
     (1000, 80, 16, 8, True, True)],
)
def test_equals_cluster_kernel_on_random_inputs(n, pages, k, heads, causal, lengths):
    import torch

    rng = np.random.default_rng(n * 11 + pages)
    topk, cpos, lens = random_case(rng, n, pages, k, heads, causal, lengths)
    q, cache = _tensors(rng, n, pages, heads)
    assert torch.equal(_ws(q, cache, topk, cpos, lens),
                       _run(q, cache, topk, cpos, lens)), "eager build differs from union8_fp8"
    perms = [greedy_regroup(topk[h], Grouping(64 if n >= 64 else 8)) for h in range(heads)]
    rand = [rng.permutation(n) for _ in range(heads)]
    for kw in BUILDS:
        ws = _ws(q, cache, topk, cpos, lens, **kw)
        _check(ws, q, cache, topk, cpos, lens, rows=np.arange(0, n, max(1, n // 200)),
               emulation=emulation_options(**kw))
        assert torch.equal(ws, _ws(q, cache, topk, cpos, lens, perms, **kw)), f"regrouped {kw}"
        assert torch.equal(ws, _ws(q, cache, topk, cpos, lens, rand, **kw)), f"random {kw}"


@pytest.mark.parametrize("slots,overlap", [(2, True), (4, True), (6, False)])
def test_ring_depths_and_schedules_are_bitwise_identical(slots, overlap):
    import torch

    rng = np.random.default_rng(21 + slots)
    topk, cpos, lens = random_case(rng, 400, 40, 16, 1, True, True)
    q, cache = _tensors(rng, 400, 40, 1)
    assert torch.equal(_ws(q, cache, topk, cpos, lens),
                       _ws(q, cache, topk, cpos, lens, slots=slots, overlap=overlap))


def test_group_counter_returns_to_zero_after_every_launch():
    """One object, many launches: the last claim of each launch resets the counter on the
    device, so every launch starts from 0 and writes every row."""
    import torch

    from pageweaver_edu.core.union_plan import prepare_unions
    from pageweaver_edu.gpu import Fp8WsUnionAttention, GpuUnionPlan

    rng = np.random.default_rng(8)
    n, pages = 700, 50
    topk, cpos, lens = random_case(rng, n, pages, 16, 1, True, False)
    q, cache = _tensors(rng, n, pages, 1)
    ref = _ws(q, cache, topk, cpos, lens)
    att = Fp8WsUnionAttention(q, cache, torch.from_numpy(cpos).cuda(), None)
    plan = GpuUnionPlan.from_cpu([prepare_unions(topk[0], None, None, 8)])
    for _ in range(5):
        att.out.fill_(float("nan"))
        att.run(plan)
        torch.cuda.synchronize()
        assert torch.equal(att.out, ref) and int(att.counter.item()) == 0


@pytest.mark.parametrize("heads,n,k", [(1, 700, 16), (8, 3000, 40)])
def test_claim_order_is_every_group_largest_first(heads, n, k):
    """The claim order the launch writes before the kernel: a permutation of the H*G groups,
    |U_G| not increasing along it (counts past the sort's 1024 bins count as the largest)."""
    import torch

    from pageweaver_edu.core.union_plan import prepare_unions
    from pageweaver_edu.gpu import Fp8WsUnionAttention, GpuUnionPlan

    rng = np.random.default_rng(heads)
    pages = 400
    topk, cpos, lens = random_case(rng, n, pages, k, heads, True, False)
    q, cache = _tensors(rng, n, pages, heads)
    att = Fp8WsUnionAttention(q, cache, torch.from_numpy(cpos).cuda(), None)
    plan = GpuUnionPlan.from_cpu([prepare_unions(topk[h], None, None, 8) for h in range(heads)])
    att.run(plan)
    torch.cuda.synchronize()
    order = att.order.cpu().numpy()
    counts = np.minimum(plan.page_counts.cpu().numpy(), 1023)
    assert sorted(order.tolist()) == list(range(plan.num_groups * heads))
    assert (np.diff(counts[order]) <= 0).all() and counts.min() < counts.max()


def test_causal_tail_pages_and_lengths():
    import torch

    rng = np.random.default_rng(3)
    topk, cpos, lens = causal_tail_case(rng, 96, 12)
    q, cache = _tensors(rng, 96, 12, 1)
    assert torch.equal(_ws(q, cache, topk, cpos, lens), _run(q, cache, topk, cpos, lens))
    for kw in BUILDS:
        _check(_ws(q, cache, topk, cpos, lens, **kw), q, cache, topk, cpos, lens,
               emulation=emulation_options(**kw))


def test_empty_supports_and_empty_groups_give_zero():
    """Groups whose union is empty still write their rows (zeros)."""
    rng = np.random.default_rng(5)
    topk = -np.ones((1, 27, 4), dtype=np.int64)
    topk[0, 3] = [2, 2, -1, 5]
    topk[0, 20] = [1, -1, -1, -1]
    q, cache = _tensors(rng, 27, 6, 1)
    for kw in BUILDS:
        out = _ws(q, cache, topk, None, None, **kw)
        got = out.float().cpu().numpy()
        assert np.all(got[~np.isin(np.arange(27), [3, 20])] == 0)
        _check(out, q, cache, topk, None, None, emulation=emulation_options(**kw))


def test_packed_requests_tail_groups():
    import torch

    rng = np.random.default_rng(9)
    offsets = np.array([0, 5, 17, 30, 31])
    topk, cpos, lens = random_case(rng, 31, 16, 6, 1, True, False)
    q, cache = _tensors(rng, 31, 16, 1)
    assert torch.equal(_ws(q, cache, topk, cpos, lens, offsets=offsets),
                       _run(q, cache, topk, cpos, lens, offsets=offsets))
    perm = greedy_regroup(topk[0], Grouping(8), request_offsets=offsets)
    for kw in ({}, *BUILDS):
        out = _ws(q, cache, topk, cpos, lens, offsets=offsets, **kw)
        _check(out, q, cache, topk, cpos, lens, emulation=emulation_options(**kw))
        assert torch.equal(out, _ws(q, cache, topk, cpos, lens, [perm], offsets=offsets, **kw))


@pytest.mark.parametrize("name", ["cap64k", "interleaved-64k", "beyond-capacity"])
def test_presets(name):
    import torch

    cap = make_preset(name)
    topk = cap.topk[None]
    n, pages = cap.num_queries, int(cap.topk.max()) + 1
    rng = np.random.default_rng(1)
    q, cache = _tensors(rng, n, pages, 1)
    cpos, lens = cap.causal_pos, cap.lengths
    perm = greedy_regroup(cap.topk, Grouping(128), **cap.regroup_kwargs())
    for kw in BUILDS:
        out = _ws(q, cache, topk, cpos, lens, **kw)
        _check(out, q, cache, topk, cpos, lens, np.sort(rng.choice(n, 128, replace=False)),
               emulation=emulation_options(**kw))
        assert torch.equal(out, _ws(q, cache, topk, cpos, lens, [perm], **kw))


def test_gpu_prepared_plan():
    """The online path: π from the GPU regroup, the plan from union_prepare.cu."""
    import torch

    from pageweaver_edu.gpu import Fp8WsUnionAttention

    rng = np.random.default_rng(11)
    topk, cpos, lens = random_case(rng, 517, 48, 16, 2, True, True)
    q, cache = _tensors(rng, 517, 48, 2)
    out, _ = run_gpu_plan(
        lambda plan, c, ln, o: Fp8WsUnionAttention(q, cache, c, ln, out=o).run(plan),
        q, topk, cpos, lens)
    cpu_perm = [greedy_regroup(topk[h], Grouping(128)) for h in range(2)]
    assert torch.equal(out, _ws(q, cache, topk, cpos, lens, cpu_perm))


# ---- the BF16 kernel (union8ws_bf16): float64 reference, every ordering bitwise identical

def _ws_bf16(q, k, v, topk, cpos, lens, perms=None, offsets=None, slots=6):
    from pageweaver_edu.gpu import Bf16WsUnionAttention, bf16_half_pages

    cache = bf16_half_pages(k, v)

    def launch(plan, c, ln, out):
        Bf16WsUnionAttention(q, cache, c, ln, slots=slots, out=out).run(plan)

    return run_cpu_plan(launch, q, topk, cpos, lens, perms, 8, offsets)


@pytest.mark.parametrize(
    "n,pages,k,heads,causal,lengths",
    [(1, 3, 2, 1, False, False), (5, 8, 4, 1, True, False), (13, 40, 16, 1, True, True),
     (64, 40, 16, 2, False, True), (203, 24, 8, 1, True, True), (300, 64, 16, 1, False, False),
     (700, 80, 16, 8, True, True)],
)
def test_bf16_random_inputs_match_reference_and_order(n, pages, k, heads, causal, lengths):
    import torch

    rng = np.random.default_rng(n * 13 + pages)
    topk, cpos, lens = random_case(rng, n, pages, k, heads, causal, lengths)
    q, kk, v = bf16_qkv(rng, n, pages, heads)
    orig = _ws_bf16(q, kk, v, topk, cpos, lens)
    rows = np.arange(0, n, max(1, n // 150))
    ref = _reference(q[torch.from_numpy(rows).cuda()], kk, v, topk[:, rows],
                     None if cpos is None else cpos[rows], None if lens is None else lens[rows])
    check_bf16(orig[torch.from_numpy(rows).cuda()], ref)
    perms = [greedy_regroup(topk[h], Grouping(64 if n >= 64 else 8)) for h in range(heads)]
    assert torch.equal(orig, _ws_bf16(q, kk, v, topk, cpos, lens, perms)), "regrouped differs"
    rand = [rng.permutation(n) for _ in range(heads)]
    assert torch.equal(orig, _ws_bf16(q, kk, v, topk, cpos, lens, rand)), "random order differs"
    assert torch.equal(orig, _ws_bf16(q, kk, v, topk, cpos, lens, slots=3)), "3 stages differ"


def test_bf16_causal_tails_empty_rows_and_packed_requests():
    import torch

    rng = np.random.default_rng(4)
    topk, cpos, lens = causal_tail_case(rng, 96, 12)  # cuts inside pages, some L_i = 0
    q, kk, v = bf16_qkv(rng, 96, 12, 1)
    check_bf16(_ws_bf16(q, kk, v, topk, cpos, lens), _reference(q, kk, v, topk, cpos, lens))
    offsets = np.array([0, 5, 17, 30, 31])
    topk, cpos, lens = random_case(rng, 31, 16, 6, 1, True, False)
    q, kk, v = bf16_qkv(rng, 31, 16, 1)
    out = _ws_bf16(q, kk, v, topk, cpos, lens, offsets=offsets)
    check_bf16(out, _reference(q, kk, v, topk, cpos, lens, offsets))
    perm = greedy_regroup(topk[0], Grouping(8), request_offsets=offsets)
    assert torch.equal(out, _ws_bf16(q, kk, v, topk, cpos, lens, [perm], offsets=offsets))


def test_bf16_preset_and_online_plan():
    import torch

    from pageweaver_edu.gpu import Bf16WsUnionAttention, bf16_half_pages

    cap = make_preset("cap64k")
    topk = cap.topk[None]
    n, pages = cap.num_queries, int(cap.topk.max()) + 1
    rng = np.random.default_rng(2)
    q, kk, v = bf16_qkv(rng, n, pages, 1)
    out = _ws_bf16(q, kk, v, topk, cap.causal_pos, cap.lengths)
    rows = np.sort(rng.choice(n, 96, replace=False))
    check_bf16(out[torch.from_numpy(rows).cuda()],
               _reference(q[torch.from_numpy(rows).cuda()], kk, v, topk[:, rows],
                          cap.causal_pos[rows], cap.lengths[rows]))
    cache = bf16_half_pages(kk, v)
    online, _ = run_gpu_plan(
        lambda plan, c, ln, o: Bf16WsUnionAttention(q, cache, c, ln, out=o).run(plan),
        q, topk, cap.causal_pos, cap.lengths)
    assert torch.equal(out, online), "online W128 plan differs from the original order"


def test_shared_memory_size_matches_the_kernel():
    """The front end's smem_bytes() is the kernel's kSmemBytes (exported as a constant)."""
    import pycuda.driver as drv

    from pageweaver_edu.gpu import Bf16WsUnionAttention, Fp8WsUnionAttention
    from pageweaver_edu.gpu.loader import load_module

    for slots in (2, 6):
        mod = load_module("union8ws.cu", "compute_90a", "sm_90a", (f"-DPW_UNION_SLOTS={slots}",))
        ptr, size = mod.get_global("union8ws_smem_bytes")
        host = np.zeros(1, np.int32)
        drv.memcpy_dtoh(host, ptr)
        assert size == 4
        assert int(host[0]) == Fp8WsUnionAttention.smem_bytes(slots)
        assert int(host[0]) == Bf16WsUnionAttention.smem_bytes(slots)
