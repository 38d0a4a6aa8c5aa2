"""FP8 Union8 / Union4 kernels (kernels/union8_fp8.cu) against the CPU emulation and float64.

Every run poisons the output with NaN first, so a row the kernel forgot stays NaN and fails.
Checks per case: kernel vs the float64 reference on the dequantized FP8 cache (NRMS <= 4%),
kernel vs the CPU emulation of the same arithmetic (far below that: <= 1/4 of it and <= 1%),
empty A_i rows exactly 0, and bitwise equality of original, regrouped, random-order and Union4
runs (and of the 3-slot build). Skipped without a GPU (with the reason) unless
PAGEWEAVER_REQUIRE_GPU=1, which makes them fail. A protocol bug cannot hang the device: every
mbarrier wait in the kernel faults after PW_WAIT_TIMEOUT_NS (the launch then fails).
"""

from __future__ import annotations

import numpy as np
import pytest

from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.union_plan import prepare_unions
from pageweaver_edu.regroup.bitmap import greedy_regroup
from pageweaver_edu.replay.fp8 import fp8_union_attention, nrms, reference_on_cache
from pageweaver_edu.workloads import make_preset
from tests.helpers.gpu_cases import (
    HEADS,
    D,
    P,
    bf16_qkv,
    causal_tail_case,
    random_case,
    run_cpu_plan,
    run_gpu_plan,
)

NRMS_MAX = 0.04      # kernel vs float64 (the paper: 2.2-4.0% against its reference)
EMU_FRACTION = 0.25  # kernel vs emulation <= this x kernel vs float64 ...
EMU_MAX = 1e-2       # ... and <= 1% absolute
# The warp-specialized kernel's lazy build (P at 2^6, O accumulated in the tensor core)
# measured 4.2 % on the 64K presets: over the FP8 budget, which is why it is not the default.
NRMS_MAX_LAZY = 0.045
# The accurate mode (two-level E4M3 Q and P; emulated: 0.19 % on every preset): at most
# FlashInfer's sparse kernel's 0.27 % against float64. Its distance to the emulation is not
# small next to that: the emulation multiplies in exact FP32 and the FP8 tensor core does not,
# and with the low parts carrying the last bits the difference is as large as the error
# itself (measured on an H100: 0.16-0.25 % against 0.19-0.24 % from float64; the reference
# record is docs/verification.md). The bound catches a missing or misplaced part, which costs
# whole percent.
NRMS_MAX_ACCURATE = 0.003
EMU_MAX_ACCURATE = 3.5e-3
EMU_FRACTION_ACCURATE = 1.5


def _tensors(rng, n, pages, heads):
    from pageweaver_edu.gpu import fp8_cache_from_bf16

    q, k, v = bf16_qkv(rng, n, pages, heads)
    return q, fp8_cache_from_bf16(k, v)


def _run(q, cache, topk, cpos, lens, perms=None, group=8, offsets=None, slots=2):
    from pageweaver_edu.gpu import Fp8UnionAttention

    def launch(plan, c, ln, out):
        Fp8UnionAttention(q, cache, c, ln, slots=slots, out=out).run(plan)

    return run_cpu_plan(launch, q, topk, cpos, lens, perms, group, offsets)


def _check(out, q, cache, topk, cpos, lens, rows=None, emulation=None):
    """Kernel rows ``rows`` (all by default) vs the emulation (with the keyword arguments
    ``emulation`` of the kernel's build) and the float64 reference.

    A lazy build's reference maximum jumps where a page maximum crosses it by ``lazy_tau``:
    the tensor core's S and the emulation's differ in the last bits, so near that threshold
    they can take different references and round P to E4M3 differently from then on. Its bound
    against the emulation is therefore 2.5 times as wide (measured: 1.5-2.1 % against 3.9-4.2 %),
    and against float64 it is NRMS_MAX_LAZY. The accurate mode (``operands="two_level"``) has
    its own bounds (NRMS_MAX_ACCURATE, EMU_MAX_ACCURATE, EMU_FRACTION_ACCURATE)."""
    import torch

    assert not torch.isnan(out).any(), "some output rows were never written"
    n = q.shape[0]
    rows = np.arange(n) if rows is None else np.asarray(rows)
    kv = cache.logical.to("cpu")
    qs, ts = q[torch.from_numpy(rows).cuda()].cpu(), topk[:, rows]
    cs = None if cpos is None else cpos[rows]
    ls = None if lens is None else lens[rows]
    got = out[torch.from_numpy(rows).cuda()].float().cpu()
    ref = reference_on_cache(qs, kv, ts, cs, ls)
    emu = fp8_union_attention(qs, kv, ts, cs, ls, **(emulation or {})).float()
    e_ref, e_emu = nrms(got, ref), nrms(got, emu)
    lazy = (emulation or {}).get("lazy_tau") is not None
    if (emulation or {}).get("operands") == "two_level":
        nrms_max, emu_bound = NRMS_MAX_ACCURATE, min(EMU_MAX_ACCURATE,
                                                     EMU_FRACTION_ACCURATE * e_ref)
    else:
        nrms_max = NRMS_MAX_LAZY if lazy else NRMS_MAX
        emu_bound = (2.5 if lazy else 1.0) * min(EMU_MAX, EMU_FRACTION * e_ref)
    assert e_ref <= nrms_max, f"kernel vs float64 NRMS {e_ref:.3e}"
    assert e_emu <= emu_bound or e_emu == 0, (
        f"kernel vs emulation NRMS {e_emu:.3e} (vs float64 {e_ref:.3e})")
    empty = ~np.any(ref != 0, axis=(1, 2))
    assert torch.all(got[torch.from_numpy(empty)] == 0), "rows with an empty A_i must be 0"
    return e_ref, e_emu


@pytest.mark.parametrize(
    "n,pages,k,heads,causal,lengths",
    [(1, 3, 2, 1, False, False), (5, 8, 4, 1, True, False), (13, 40, 16, 1, True, True),
     (64, 40, 16, 2, False, True), (203, 24, 8, 1, True, True), (300, 64, 16, 1, False, False)],
)
def test_random_inputs_match_emulation_reference_and_order(n, pages, k, heads, causal, lengths):
    import torch

    rng = np.random.default_rng(n * 7 + pages)
    topk, cpos, lens = random_case(rng, n, pages, k, heads, causal, lengths)
    q, cache = _tensors(rng, n, pages, heads)
    orig = _run(q, cache, topk, cpos, lens)
    _check(orig, q, cache, topk, cpos, lens)
    perms = [greedy_regroup(topk[h], Grouping(64 if n >= 64 else 8)) for h in range(heads)]
    assert torch.equal(orig, _run(q, cache, topk, cpos, lens, perms)), "regrouped differs"
    assert torch.equal(orig, _run(q, cache, topk, cpos, lens, group=4)), "Union4 differs"
    rand = [rng.permutation(n) for _ in range(heads)]
    assert torch.equal(orig, _run(q, cache, topk, cpos, lens, rand)), "random order differs"


def test_three_slot_build_is_bitwise_identical():
    """PW_UNION_SLOTS=3 (one test only: one process compiles that build)."""
    import torch

    rng = np.random.default_rng(21)
    topk, cpos, lens = random_case(rng, 150, 40, 16, 1, True, True)
    q, cache = _tensors(rng, 150, 40, 1)
    orig = _run(q, cache, topk, cpos, lens)
    perm = [greedy_regroup(topk[0], Grouping(64))]
    assert torch.equal(orig, _run(q, cache, topk, cpos, lens, perm, slots=3))
    assert torch.equal(orig, _run(q, cache, topk, cpos, lens, group=4, slots=3))


def test_causal_tail_pages_and_lengths():
    """Every query's last page is cut by c_i or L_i somewhere inside it (or at its edge)."""
    rng = np.random.default_rng(3)
    n, pages = 96, 12
    topk, cpos, lens = causal_tail_case(rng, n, pages)
    q, cache = _tensors(rng, n, pages, 1)
    _check(_run(q, cache, topk, cpos, lens), q, cache, topk, cpos, lens)


def test_empty_supports_give_zero():
    rng = np.random.default_rng(5)
    topk = -np.ones((1, 11, 4), dtype=np.int64)
    topk[0, 3] = [2, 2, -1, 5]
    q, cache = _tensors(rng, 11, 6, 1)
    out = _run(q, cache, topk, None, None)
    assert np.all(out.float().cpu().numpy()[np.arange(11) != 3] == 0)
    _check(out, q, cache, topk, None, None)


def test_packed_requests_tail_groups():
    import torch

    rng = np.random.default_rng(9)
    offsets = np.array([0, 5, 17, 30, 31])
    topk, cpos, lens = random_case(rng, 31, 16, 6, 1, True, False)
    q, cache = _tensors(rng, 31, 16, 1)
    out = _run(q, cache, topk, cpos, lens, offsets=offsets)
    _check(out, q, cache, topk, cpos, lens)
    perm = greedy_regroup(topk[0], Grouping(8), request_offsets=offsets)
    assert torch.equal(out, _run(q, cache, topk, cpos, lens, [perm], offsets=offsets))
    assert torch.equal(out, _run(q, cache, topk, cpos, lens, group=4, offsets=offsets))


@pytest.mark.parametrize("name", ["cap64k", "cap16k-high-overlap", "interleaved-64k",
                                  "beyond-capacity"])
def test_presets(name):
    """Whole preset on the GPU; emulation and float64 on 128 rows spread over it."""
    import torch

    cap = make_preset(name)
    topk = cap.topk[None]
    n, pages = cap.num_queries, int(cap.topk.max()) + 1
    rng = np.random.default_rng(1)
    q, cache = _tensors(rng, n, pages, 1)
    cpos, lens = cap.causal_pos, cap.lengths
    out = _run(q, cache, topk, cpos, lens)
    rows = np.sort(rng.choice(n, 128, replace=False))
    _check(out, q, cache, topk, cpos, lens, rows)
    perm = greedy_regroup(cap.topk, Grouping(128), **cap.regroup_kwargs())
    assert torch.equal(out, _run(q, cache, topk, cpos, lens, [perm]))
    assert torch.equal(out, _run(q, cache, topk, cpos, lens, group=4))


def test_gpu_prepared_plan_matches_cpu_plan():
    """The online path: π from the GPU regroup and the plan from union_prepare.cu."""
    import torch

    from pageweaver_edu.gpu import Fp8UnionAttention

    rng = np.random.default_rng(11)
    topk, cpos, lens = random_case(rng, 517, 48, 16, 2, True, True)
    q, cache = _tensors(rng, 517, 48, 2)
    out, _ = run_gpu_plan(
        lambda plan, c, ln, o: Fp8UnionAttention(q, cache, c, ln, out=o).run(plan),
        q, topk, cpos, lens)
    cpu_perm = [greedy_regroup(topk[h], Grouping(128)) for h in range(2)]
    assert torch.equal(out, _run(q, cache, topk, cpos, lens, cpu_perm))
    _check(out, q, cache, topk, cpos, lens, rows=np.arange(0, 517, 4))


def test_close_to_the_bf16_kernel():
    """Same inputs through the BF16 Union8 (K/V in BF16): the FP8 path stays within ~5% of it."""
    import torch

    from pageweaver_edu.gpu import Bf16UnionAttention, GpuUnionPlan, fp8_cache_from_bf16

    rng = np.random.default_rng(17)
    topk, cpos, lens = random_case(rng, 120, 30, 16, 1, True, True)
    gen = torch.Generator(device="cuda").manual_seed(4)
    q = torch.randn((120, HEADS, D), generator=gen, device="cuda").to(torch.bfloat16)
    k = torch.randn((30, 1, P, D), generator=gen, device="cuda").to(torch.bfloat16)
    v = torch.randn((30, 1, P, D), generator=gen, device="cuda").to(torch.bfloat16)
    fp8 = _run(q, fp8_cache_from_bf16(k, v), topk, cpos, lens)
    plan = GpuUnionPlan.from_cpu([prepare_unions(topk[0], None, None, 8)])
    bf16 = Bf16UnionAttention(q, (k, v), torch.from_numpy(cpos).cuda(),
                              torch.from_numpy(lens).cuda()).run(plan)
    torch.cuda.synchronize()
    assert nrms(fp8.float().cpu(), bf16.float().cpu().numpy()) < 0.07  # + cache quantization
