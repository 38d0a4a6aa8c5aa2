"""Inputs and launches shared by the Union8 / Union4 GPU tests (tests/gpu/test_union8.py
for BF16, tests/gpu/test_union8_fp8.py for FP8).

Every launch writes into an output poisoned with NaN first, so a row the kernel forgot stays
NaN and fails the test. torch is imported inside the functions, like in the tests.
"""

from __future__ import annotations

import numpy as np

from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.union_plan import prepare_unions

HEADS, D, P = 16, 128, 128  # local Q heads per KV head, d, tokens per page


def random_case(rng, n, pages, k, heads=1, causal=False, lengths=False, pad=0.1, empty=0.05):
    """Top-K ``[heads, n, k]`` with padding and empty supports, plus c_i / L_i (or None)."""
    topk = rng.integers(0, pages, size=(heads, n, k))  # may repeat ids: duplicates count once
    topk[rng.random(topk.shape) < pad] = -1
    topk[:, rng.random(n) < empty] = -1  # empty supports
    cpos = rng.integers(0, pages * P, size=n) if causal else None
    lens = rng.integers(1, pages * P + 1, size=n) if lengths else None
    return topk, cpos, lens


def causal_tail_case(rng, n, pages):
    """(topk, cpos, lens) where every query's last page is cut by c_i or L_i somewhere inside
    it (or at its edge); some L_i are 0 (empty A_i although pages are selected)."""
    cpos = rng.integers(0, pages * P, size=n)
    cpos[:8] = np.arange(8) * P + np.array([0, 1, 63, 64, 65, 126, 127, 128])
    lens = np.minimum(cpos + 1 - rng.integers(0, 3, size=n), pages * P)
    lens[lens < 0] = 0  # L_i = 0: empty A_i although pages are selected
    topk = np.stack([np.r_[c // P, rng.choice(pages, 3)] for c in cpos])[None]
    return topk, cpos, lens


def bf16_qkv(rng, n, pages, heads):
    """Random BF16 q ``[n, heads*16, 128]``, k and v ``[pages, heads, 128, 128]`` on the GPU,
    from a torch generator seeded by ``rng``."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(int(rng.integers(1 << 30)))
    q = torch.randn((n, heads * HEADS, D), generator=gen, device="cuda").to(torch.bfloat16)
    k = torch.randn((pages, heads, P, D), generator=gen, device="cuda").to(torch.bfloat16)
    v = torch.randn((pages, heads, P, D), generator=gen, device="cuda").to(torch.bfloat16)
    return q, k, v


def _launch_poisoned(launch, q, plan, cpos, lens):
    import torch

    out = torch.full_like(q, float("nan"))
    c = None if cpos is None else torch.from_numpy(cpos).cuda()
    ln = None if lens is None else torch.from_numpy(lens).cuda()
    launch(plan, c, ln, out)
    torch.cuda.synchronize()
    return out


def run_cpu_plan(launch, q, topk, cpos, lens, perms=None, group=8, offsets=None):
    """Upload every KV head's CPU plan (π = ``perms[h]``, the identity when None), call
    ``launch(plan, causal_pos, lengths, out)`` with the positions on the GPU and ``out`` like
    ``q`` poisoned with NaN, synchronise and return ``out``."""
    from pageweaver_edu.gpu import GpuUnionPlan

    plans = [prepare_unions(topk[h], None if perms is None else perms[h], offsets, group)
             for h in range(topk.shape[0])]
    return _launch_poisoned(launch, q, GpuUnionPlan.from_cpu(plans), cpos, lens)


def run_gpu_plan(launch, q, topk, cpos, lens, window=128):
    """The online path: π and the plan from the fused regroup (window ``window``, g = 8, the
    plan in rows of g·K), launched like :func:`run_cpu_plan`. Returns (out, π int32
    ``[H, N]``)."""
    import torch

    from pageweaver_edu.gpu import gpu_regroup_plan

    t32 = torch.from_numpy(topk).to(torch.int32).cuda().contiguous()
    plan = gpu_regroup_plan(t32, Grouping(window))
    perm = plan.perm.reshape(topk.shape[0], -1)
    return _launch_poisoned(launch, q, plan, cpos, lens), perm
