"""The GPU front ends' host code, run on a CPU with stand-ins for PyCUDA and CUDA tensors.

What is checked here is everything the host decides: the GpuUnionPlan layout and its round
trip to the CPU plan, which entry point a plan selects, launch grids and blocks, the argument
lists against the kernels' packed formats, dynamic shared memory and the input checks. What
the kernels compute is checked against the CPU reference by tests/gpu on an H200.
"""

from __future__ import annotations

import numpy as np
import pytest

from pageweaver_edu import Grouping, PageWeaverInputError, greedy_regroup, prepare_unions
from pageweaver_edu.gpu import UNION_KERNELS
from pageweaver_edu.workloads import make_preset
from tests.helpers.fake_gpu import cpu_tensors_as_cuda, install_fake_pycuda

torch = pytest.importorskip("torch")

PLAN_FIELDS = ("perm", "group_slots", "page_offsets", "pages", "masks", "cta_any", "page_counts")


@pytest.fixture
def fake(monkeypatch):
    log = install_fake_pycuda(monkeypatch)
    cpu_tensors_as_cuda(monkeypatch)
    return log


def _launches(log, name=None):
    return [e for e in log if e[0] == "launch" and (name is None or e[1] == name)]


def _plans(heads=3, group=8):
    cap = make_preset("cap16k-high-overlap")
    topk, offsets = cap.topk[:203], [0, 100, 100, 203]  # an empty request and tail groups
    perms = [None] + [greedy_regroup(np.roll(topk, h, axis=0), Grouping(16, group),
                                     request_offsets=offsets) for h in range(1, heads)]
    return [prepare_unions(np.roll(topk, h, axis=0), p, offsets, group)
            for h, p in enumerate(perms)], offsets


@pytest.mark.parametrize("heads", [1, 3])
def test_gpu_union_plan_round_trip(fake, heads):
    from pageweaver_edu.gpu import GpuUnionPlan
    from pageweaver_edu.gpu.tables import union_group_table

    plans, offsets = _plans(heads)
    gpu = GpuUnionPlan.from_cpu(plans)
    groups = 13 + 13  # requests of 100 and 103 queries: a short group each
    assert (gpu.heads, gpu.n, gpu.group, gpu.num_groups) == (heads, 203, 8, groups)
    assert np.array_equal(gpu.groups.numpy(), union_group_table(203, heads, offsets, 8))
    back = gpu.to_cpu() if heads > 1 else [gpu.to_cpu()]
    for ref, got in zip(plans, back, strict=True):
        assert got.group == ref.group
        for field in PLAN_FIELDS:
            a, b = getattr(ref, field), getattr(got, field)
            assert a.dtype == b.dtype and np.array_equal(a, b), field
    trimmed = gpu.trimmed()
    assert len(trimmed.pages) == sum(len(p.pages) for p in plans) == len(gpu.pages) - 1


def test_gpu_union_plan_needs_one_group_table(fake):
    from pageweaver_edu.gpu import GpuUnionPlan

    plans, _ = _plans(2)
    with pytest.raises(PageWeaverInputError, match="same g and group table"):
        GpuUnionPlan.from_cpu([plans[0], prepare_unions(make_preset("cap64k").topk[:203])])


def _kernel_inputs(cls, n, heads, pages=8):
    from pageweaver_edu.gpu import Fp8UnionAttention, fp8_cache_from_bf16

    q = torch.zeros((n, 16 * heads, 128), dtype=torch.bfloat16)
    k = torch.randn((pages, heads, 128, 128)).to(torch.bfloat16)
    if issubclass(cls, Fp8UnionAttention):
        return q, fp8_cache_from_bf16(k, k)
    return q, (k, k.clone())


def test_every_union_kernel_is_listed():
    import pageweaver_edu.gpu as g

    assert {g.Bf16UnionAttention, g.Fp8UnionAttention, g.Bf16WsUnionAttention,
            g.Fp8WsUnionAttention} <= set(UNION_KERNELS)


def test_cluster_kernels_launch_every_group_and_persistent_ones_one_cta_per_sm(fake):
    import pageweaver_edu.gpu as g
    from tests.helpers.fake_gpu import SMS

    plans, _ = _plans(3)
    plan = g.GpuUnionPlan.from_cpu(plans)
    q, kv = _kernel_inputs(g.Fp8UnionAttention, 203, 3)
    assert g.Fp8UnionAttention(q, kv).launch_grid(plan) == (2 * plan.num_groups, 3)
    ws = g.Fp8WsUnionAttention(q, kv)
    assert ws.launch_grid(plan) == (min(SMS, 3 * plan.num_groups), 1)
    for _ in range(3):  # no host state between launches: the same arguments every time
        ws.run(plan)
    launches = _launches(fake, "union8ws_fp8")
    assert len(launches) == 3 and len({e[5] for e in launches}) == 1
    assert launches[0][5][:8] == ws.operands()
    assert ws.operands()[-2:] == (ws.counter.data_ptr(), ws.order.data_ptr())
    # before each launch, on the same stream: the claim order of the plan's groups
    orders = _launches(fake, "union8ws_claim_order")
    names = [e[1] for e in fake if e[0] == "launch"]
    assert names == ["union8ws_claim_order", "union8ws_fp8"] * 3
    assert all(e[2:5] == ((1, 1), (1024, 1, 1), None) for e in orders)
    assert orders[0][5] == (plan.page_counts.data_ptr(), 3 * plan.num_groups,
                            ws.order.data_ptr())
    assert ws.order.shape == (3 * plan.num_groups,) and ws.order.dtype == torch.int32
    assert not hasattr(ws, "issued")


def test_ablation_builds_compile_with_their_flag(fake):
    """An FP8 kernel's timing-only build compiles with its PW_ABLATE value; the one-SM kernel
    has no every-page build, the cluster kernel no copy-free one, and an unknown name is
    refused before anything compiles."""
    import pageweaver_edu.gpu as g

    plans, _ = _plans(3)
    plan = g.GpuUnionPlan.from_cpu(plans)
    q, kv = _kernel_inputs(g.Fp8UnionAttention, 203, 3)
    g.Fp8UnionAttention(q, kv, ablate="every_page").run(plan)
    g.Fp8WsUnionAttention(q, kv, ablate="ring_only").run(plan)
    g.Fp8WsUnionAttention(q, kv, ablate="no_copies").run(plan)
    g.Fp8UnionAttention(q, kv).run(plan)
    flags = [[o for o in e[3] if "PW_ABLATE" in o] for e in fake if e[0] == "compile"]
    assert flags == [["-DPW_ABLATE=4"], ["-DPW_ABLATE=3"], ["-DPW_ABLATE=8"], []]
    with pytest.raises(PageWeaverInputError, match="ablate must be one of"):
        g.Fp8WsUnionAttention(q, kv, ablate="every_page")
    with pytest.raises(PageWeaverInputError, match="ablate must be one of"):
        g.Fp8UnionAttention(q, kv, ablate="no_copies")
    with pytest.raises(PageWeaverInputError, match="got 'fast'"):
        g.Fp8UnionAttention(q, kv, ablate="fast")


@pytest.mark.parametrize("cls", UNION_KERNELS, ids=lambda c: c.__name__)
def test_union_kernels_pick_the_entry_and_pack_the_arguments(fake, cls):
    import pageweaver_edu.gpu as g
    from pageweaver_edu.gpu.union_attention import PLAN_FORMAT

    n, heads = 203, 3
    q, kv = _kernel_inputs(cls, n, heads)
    att = cls(q, kv, causal_pos=np.arange(n), lengths=None)
    for group in sorted(cls.entries, reverse=True):
        plans, _ = _plans(heads, group)
        plan = g.GpuUnionPlan.from_cpu(plans)
        assert att.run(plan) is att.out
        operands = att.operands()
        entry = cls.entries[group]
        (_, name, grid, block, stream, args, smem), = _launches(fake, entry.name)
        assert grid == att.launch_grid(plan) and block == (cls.threads, 1, 1)
        assert stream is None and smem == cls.smem_bytes(att.slots) > 48 * 1024
        own = len(cls.operand_format)
        assert len(args) == own + len(PLAN_FORMAT) and args[:own] == operands
        assert args[own:own + 6] == (plan.perm.data_ptr(), plan.groups.data_ptr(),
                                     plan.page_offsets.data_ptr(), plan.page_counts.data_ptr(),
                                     plan.pages.data_ptr(), plan.masks.data_ptr())
        assert args[own + 7] == 0  # no lengths: nullptr
        assert args[own + 8:own + 12] == (n, plan.num_groups, heads, att.num_pages)
        assert args[own + 12] == pytest.approx(128**-0.5 * np.log2(np.e))
    compiles = [e for e in fake if e[0] == "compile"]
    assert compiles and all(e[1:3] == ("compute_90a", "sm_90a") for e in compiles)
    assert all(f"-DPW_UNION_SLOTS={att.slots}" in e[3] for e in compiles)
    with pytest.raises(PageWeaverInputError, match="no kernel for g = 2"):
        att.run(g.GpuUnionPlan.from_cpu(_plans(heads, 2)[0]))
    with pytest.raises(PageWeaverInputError, match="runs N = 203, H = 3"):
        att.run(g.GpuUnionPlan.from_cpu(_plans(1)[0]))
    with pytest.raises(PageWeaverInputError, match="H = 3"):
        cls(torch.zeros((n, 16, 128), dtype=torch.bfloat16), kv)


def test_gpu_prepare_unions_host_path(fake):
    import pageweaver_edu.gpu as g

    cap = make_preset("cap16k-high-overlap")
    topk = np.stack([cap.topk, cap.topk[::-1]])
    perm = np.stack([np.arange(cap.num_queries)] * 2)
    plan = g.gpu_prepare_unions(topk, perm, cap.request_offsets, 8, trim=False)
    assert isinstance(plan, g.GpuUnionPlan)
    assert (plan.heads, plan.n, plan.group, plan.num_groups) == (2, cap.num_queries, 8, 512)
    assert tuple(plan.perm.shape) == (2 * cap.num_queries,) and plan.perm.dtype == torch.int32
    count, emit = (_launches(fake, name)[0] for name in ("union_count", "union_emit"))
    assert count[2] == emit[2] and count[3] == (256, 1, 1)
    assert len(count[5]) == len("PPPPPiiii") and len(emit[5]) == len("PPPPPPPPPiiii")
    one = g.gpu_prepare_unions(cap.topk, torch.arange(cap.num_queries), trim=False)
    assert one.heads == 1 and tuple(one.groups.shape) == (512, 4)
    with pytest.raises(PageWeaverInputError, match="not a permutation"):
        g.gpu_prepare_unions(cap.topk, np.zeros(cap.num_queries, dtype=np.int64))
    with pytest.raises(PageWeaverInputError, match="H x N"):
        g.gpu_prepare_unions(topk, np.arange(cap.num_queries))
    with pytest.raises(PageWeaverInputError, match="at most 8 slots"):
        g.gpu_prepare_unions(cap.topk, None, group=16)


def test_gpu_regroup_host_path(fake):
    import pageweaver_edu.gpu as g

    cap = make_preset("cap64k")
    grouping = Grouping(128)
    out = g.gpu_greedy_regroup(cap.topk, grouping, **cap.regroup_kwargs())
    assert tuple(out.shape) == (cap.num_queries,) and out.dtype == torch.int32
    prepared = g.regroup_launch(cap.num_queries, 1, 16, grouping, None, cap.page_size)
    assert prepared.variant == "pairs_w128" and prepared.uniform == 128
    prepared.run(torch.zeros((1, cap.num_queries, 16), dtype=torch.int32))
    first, second = _launches(fake, "regroup_pairs_w128")[-2:]
    assert first[2] == (-(-cap.num_queries // 128), 1) and first[3] == (128, 1, 1)
    assert first[5][6:] == (512 * 128, cap.num_queries, 16, 1, 8, 512, 128)
    assert second[5][5:] == first[5][5:]  # same scratch and scalars every launch
    # a chunk of many windows: its handshake words are zeroed on the stream before each launch
    zeroed = [e for e in fake if e[0] in ("memset", "launch")][-4:]
    assert [e[0] for e in zeroed] == ["memset", "launch", "memset", "launch"]
    assert zeroed[0][1:] == (prepared.scratch.data_ptr(), 0, 4, None)
    with pytest.raises(PageWeaverInputError, match="B <= 512"):
        g.gpu_greedy_regroup(cap.topk, Grouping(128, capacity=1024))


def test_fused_plan_host_path(fake):
    """gpu_regroup_plan: the regroup's arguments, then pages, masks, counts, G and g·K, and a
    row plan that reads back (here from the fake launch's untouched buffers) as CSR."""
    import pageweaver_edu.gpu as g

    cap = make_preset("cap64k")
    plan = g.gpu_regroup_plan(cap.topk, Grouping(128), **cap.regroup_kwargs())
    (_, name, grid, block, _, args, _), = _launches(fake, "regroup_plan_pairs_w128")
    groups = -(-cap.num_queries // 8)
    assert grid == (-(-cap.num_queries // 128), 1) and block == (128, 1, 1)
    assert args[6:13] == (512 * 128, cap.num_queries, 16, 1, 8, 512, 128)
    assert args[13:16] == (plan.pages.data_ptr(), plan.masks.data_ptr(),
                           plan.page_counts.data_ptr()) and args[16:] == (groups, 128)
    assert plan.row_capacity == 128 and plan.cta_any is None
    assert plan.page_offsets.tolist() == list(range(0, (groups + 1) * 128, 128))
    assert tuple(plan.groups.shape) == (groups, 4) and plan.pages.numel() == groups * 128
    with pytest.raises(PageWeaverInputError, match="K <= 16"):
        g.gpu_regroup_plan(np.zeros((8, 17), dtype=np.int64), Grouping(8))


def test_fake_launches_do_not_outlive_the_fake():
    """The prepared launches made while the fake is in go with it: a fake launch left in a
    cache (the fused plan's, say) would turn a later real call of the same shapes into a
    launch that writes nothing, and its test would read whatever the buffers held before."""
    import pageweaver_edu.gpu as g
    from pageweaver_edu.gpu import loader

    real = loader._launches
    before = {family: dict(cache) for family, cache in real.items()}
    topk = np.arange(64 * 4).reshape(64, 4) % 50
    with pytest.MonkeyPatch.context() as mp:
        install_fake_pycuda(mp)
        cpu_tensors_as_cuda(mp)
        g.gpu_greedy_regroup(topk, Grouping(64))
        g.gpu_regroup_plan(topk, Grouping(64))
        assert {f: len(c) for f, c in loader._launches.items()} == {"regroup": 1,
                                                                    "regroup_plan": 1}
    assert loader._launches is real
    assert {family: dict(cache) for family, cache in real.items()} == before


def test_lazy_constants_match_the_kernel():
    """The emulation options of the lazy FP8 build use the kernel's own constants."""
    import re

    from pageweaver_edu.gpu.loader import kernel_dir
    from pageweaver_edu.gpu.union8ws import LAZY_SHIFT, LAZY_TAU

    src = (kernel_dir() / "union8ws_mainloop_fp8_lazy.cuh").read_text(encoding="utf-8")
    assert int(re.search(r"kLazyShift = (\d+);", src).group(1)) == LAZY_SHIFT
    assert float(re.search(r"kLazyTau = ([\d.]+)f;", src).group(1)) == LAZY_TAU


def test_wait_bound_from_the_environment(monkeypatch):
    """PAGEWEAVER_WAIT_TIMEOUT_NS becomes the kernels' PW_WAIT_TIMEOUT_NS; a bad value raises
    one line naming the variable."""
    import re

    from pageweaver_edu.gpu.loader import ENV_WAIT_TIMEOUT, kernel_dir, wait_bound_options

    monkeypatch.delenv(ENV_WAIT_TIMEOUT, raising=False)
    assert wait_bound_options() == ()
    monkeypatch.setenv(ENV_WAIT_TIMEOUT, " 600000000000 ")
    assert wait_bound_options() == ("-DPW_WAIT_TIMEOUT_NS=600000000000ull",)
    for bad in ("0", "-5", "1e9", "10s", str(2**64)):
        monkeypatch.setenv(ENV_WAIT_TIMEOUT, bad)
        with pytest.raises(PageWeaverInputError, match=ENV_WAIT_TIMEOUT):
            wait_bound_options()
    for name in ("union8ws_shared.cuh", "union8_fp8.cu"):  # the kernels whose waits it bounds
        src = (kernel_dir() / name).read_text(encoding="utf-8")
        assert re.search(r"#ifndef PW_WAIT_TIMEOUT_NS\n#define PW_WAIT_TIMEOUT_NS \d+ull", src)
