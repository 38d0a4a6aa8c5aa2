"""Launch the Union8 / Union4 attention kernels (``kernels/union8.cu``) on torch CUDA tensors.

Shapes (H = KV heads, 16 local Q heads per KV head, d = 128, P = 128):

* ``q`` ``[N, H*16, 128]`` bf16, ``k``/``v`` ``[pages, H, 128, 128]`` bf16 (``[pages, 128, 128]``
  when H = 1), output ``o`` ``[N, H*16, 128]`` bf16;
* ``causal_pos`` / ``lengths`` ``[N]`` (any int dtype, converted to int32 once);
* the union plan of every KV head (:class:`DevicePlan`), built on the host from
  :func:`pageweaver_edu.core.union_plan.prepare_unions` (:func:`plan_from_cpu`) or on the GPU by
  ``kernels/union_prepare.cu`` (:func:`gpu_prepare_plan`, no host synchronisation).

Compile and launch go through :mod:`pageweaver_edu.gpu.loader` like every other kernel: the
kernel needs ``sm_90a`` (multicast bulk copies), so :func:`get_union_kernel` asks the loader
for ``arch="compute_90a", code="sm_90a"`` with ``-DPW_UNION_SLOTS=<slots>`` and raises the
functions' dynamic shared-memory limit to :func:`smem_bytes`; every launch passes that size
(``launch(..., shared_size=)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.inputs import PageWeaverInputError, as_request_offsets
from .device import require_gpu
from .loader import get_kernel, launch
from .tables import union_group_table

HEADS, DIM, PAGE = 16, 128, 128
THREADS = 128
STAGE = 64  # tokens per KV stage (half a page): one slot holds a stage of K and of V
BLOCK_STRIDE = 8 * DIM * 2 + 16  # 8-token K/V copy block + 16 B padding in shared memory
KERNELS = {"union8": ("union8_bf16", 8, 2), "union4": ("union4_bf16", 4, 1)}  # name, g, CTAs
ARG_FORMAT = "PPPPPPPPPPPiiiifi"  # the fields of union8::Args, 112 bytes


def smem_bytes(slots: int = 2) -> int:
    """Dynamic shared memory of one CTA: ``slots`` KV slots (a stage of K and of V in padded
    8-token blocks) + 16 B of barriers per slot; 66,080 B for two slots (two CTAs per SM)."""
    return slots * 2 * (STAGE // 8) * BLOCK_STRIDE + 16 * slots


def get_union_kernel(kind: str = "union8", slots: int = 2):
    """(prepared function, dynamic smem bytes) for ``kind`` in {"union8", "union4"} (cached by
    :func:`pageweaver_edu.gpu.loader.get_kernel`)."""
    if kind not in KERNELS:
        raise PageWeaverInputError(f"unknown kernel {kind!r}; choose from {sorted(KERNELS)}")
    smem = smem_bytes(slots)
    func = get_kernel("union8.cu", KERNELS[kind][0], ARG_FORMAT, arch="compute_90a",
                      code="sm_90a", options=(f"-DPW_UNION_SLOTS={slots}",),
                      max_dynamic_shared=smem)
    return func, smem


@dataclass
class DevicePlan:
    """Union plan of H KV heads on the GPU (the layout of ``kernels/union_prepare.cu``).

    ``groups`` int32 ``[H*G, 4]`` (first slot in ``perm``, slots, h*N, 0); ``perm`` int32
    ``[H*N]`` head-local π; ``page_offsets`` int32 ``[H*G + 1]``; ``pages`` int32 and ``masks``
    uint8 (at least ``page_offsets[-1]`` entries); ``group`` g; ``heads`` H; ``n`` N.
    """

    groups: object
    perm: object
    page_offsets: object
    pages: object
    masks: object
    group: int
    heads: int
    n: int

    @property
    def num_groups(self) -> int:
        """G per KV head."""
        return int(self.groups.shape[0]) // self.heads


def plan_from_cpu(plans, n: int, group: int = 8, request_offsets=None) -> DevicePlan:
    """Upload CPU plans (one :class:`~pageweaver_edu.core.union_plan.UnionPlan` per KV head, all
    built with the same g and request offsets)."""
    import torch

    plans = list(plans) if isinstance(plans, (list, tuple)) else [plans]
    g_sizes = {int(p.group_slots.shape[0]) for p in plans}
    if len(g_sizes) != 1:
        raise PageWeaverInputError("every KV head's plan must have the same group table")
    groups = union_group_table(n, len(plans), as_request_offsets(request_offsets, n), group)
    if len(groups) != len(plans) * g_sizes.pop():
        raise PageWeaverInputError("plan group table does not match N, g and the requests")
    offs, base = [], 0
    for p in plans:
        offs.append(p.page_offsets[:-1].astype(np.int64) + base)
        base += int(p.page_offsets[-1])
    offs.append(np.array([base]))

    def up(x, dtype):
        return torch.from_numpy(np.ascontiguousarray(x).astype(dtype)).cuda()

    return DevicePlan(
        groups=up(groups, np.int32),
        perm=up(np.concatenate([p.perm for p in plans]), np.int32),
        page_offsets=up(np.concatenate(offs), np.int32),
        pages=up(np.concatenate([p.pages for p in plans] + [np.zeros(1)]), np.int32),
        masks=up(np.concatenate([p.masks for p in plans] + [np.zeros(1)]), np.uint8),
        group=group, heads=len(plans), n=n,
    )


def gpu_prepare_plan(topk32, perm32, group: int = 8, request_offsets=None) -> DevicePlan:
    """Union plan built on the GPU by ``kernels/union_prepare.cu`` (two launches, no host
    synchronisation), through :func:`pageweaver_edu.gpu.unions.union_plan`.

    ``topk32`` int32 CUDA ``[H, N, K]`` contiguous; ``perm32`` int32 CUDA ``[H, N]`` or
    ``[H*N]`` (head-local π, e.g. from :func:`pageweaver_edu.gpu.regroup_plan`'s ``run``).
    """
    from .unions import union_plan

    heads, n, k = topk32.shape
    prep = union_plan(n, heads, k, as_request_offsets(request_offsets, n), group)
    perm32 = perm32.reshape(-1).contiguous()
    _, offsets, pages, masks, _ = prep.run(topk32, perm32)
    return DevicePlan(prep.groups, perm32, offsets, pages, masks, group, heads, n)


def _positions(x, n, name):
    import torch

    if x is None:
        return None
    t = x if isinstance(x, torch.Tensor) else torch.from_numpy(np.asarray(x))
    if tuple(t.shape) != (n,):
        raise PageWeaverInputError(f"{name} must have shape [N] = ({n},), got {tuple(t.shape)}")
    return t.to(device="cuda", dtype=torch.int32).contiguous()


def _ptr(t) -> int:
    return 0 if t is None else t.data_ptr()


class UnionAttention:
    """A prepared Union8 / Union4 launch for fixed q/k/v and position tensors."""

    def __init__(self, q, k, v, causal_pos=None, lengths=None, kind="union8", slots=2,
                 scale=None, out=None):
        import torch

        require_gpu()
        if k.dim() == 3:
            k, v = k.unsqueeze(1), v.unsqueeze(1)
        n, qh, d = q.shape
        heads = k.shape[1]
        if d != DIM or qh != HEADS * heads or tuple(k.shape[2:]) != (PAGE, DIM):
            raise PageWeaverInputError(
                f"need q [N, H*16, 128] and k/v [pages, H, 128, 128]; got {tuple(q.shape)}, "
                f"{tuple(k.shape)}")
        if k.shape != v.shape:
            raise PageWeaverInputError("k and v must have the same shape")
        for name, x in (("q", q), ("k", k), ("v", v)):
            if x.dtype != torch.bfloat16 or not x.is_cuda or not x.is_contiguous():
                raise PageWeaverInputError(f"{name} must be a contiguous bf16 CUDA tensor")
        self.q, self.k, self.v, self.n, self.heads = q, k, v, n, heads
        self.causal = _positions(causal_pos, n, "causal_pos")
        self.lengths = _positions(lengths, n, "lengths")
        self.kind, (self.func, self.smem) = kind, get_union_kernel(kind, slots)
        self.ctas = KERNELS[kind][2]
        self.scale_log2 = float((scale or DIM**-0.5) * np.log2(np.e))
        self.out = torch.empty_like(q) if out is None else out

    def run(self, plan: DevicePlan):
        """Launch over ``plan`` (its g must match the kernel) and return ``self.out``."""
        if plan.group != KERNELS[self.kind][1] or plan.heads != self.heads or plan.n != self.n:
            raise PageWeaverInputError(
                f"{self.kind} needs a plan with g = {KERNELS[self.kind][1]}, H = {self.heads}, "
                f"N = {self.n}; got g = {plan.group}, H = {plan.heads}, N = {plan.n}")
        g = plan.num_groups
        launch(self.func, (g * self.ctas, self.heads), (THREADS, 1, 1),
               self.q.data_ptr(), self.k.data_ptr(), self.v.data_ptr(), self.out.data_ptr(),
               plan.perm.data_ptr(), plan.groups.data_ptr(), plan.page_offsets.data_ptr(),
               plan.pages.data_ptr(), plan.masks.data_ptr(), _ptr(self.causal),
               _ptr(self.lengths), self.n, g, self.heads, int(self.k.shape[0]),
               self.scale_log2, 0, shared_size=self.smem)
        return self.out


def union_attention(q, k, v, plan: DevicePlan, causal_pos=None, lengths=None, kind=None,
                    out=None, scale=None):
    """Sparse attention of every query over its pages, executed by group unions (§6).

    ``kind`` defaults to "union8" for a g = 8 plan and "union4" for g = 4. Returns ``out``
    (``[N, H*16, 128]`` bf16); rows of queries that the plan does not run stay untouched.
    """
    kind = kind or ("union8" if plan.group == 8 else "union4")
    return UnionAttention(q, k, v, causal_pos, lengths, kind, scale=scale, out=out).run(plan)
