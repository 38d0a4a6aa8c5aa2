"""Union preparation on the GPU (``kernels/union_prepare.cu``): the CPU UnionPlan's fields.

:func:`gpu_prepare_unions` takes the Top-K ids and π (CUDA tensors or arrays) and returns a
:class:`GpuUnionPlan` of CUDA tensors with the fields of
:class:`pageweaver_edu.core.union_plan.UnionPlan`. Two launches, no host synchronisation; only
``trim=True`` (the default) reads the total page count back to cut the CSR arrays to length.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..core.inputs import as_permutation, as_request_offsets
from ..core.union_plan import UnionPlan
from .device import require_gpu
from .loader import get_kernel, launch
from .tables import union_group_table
from .tensors import cuda_ids

WARPS = 8  # groups in flight per CTA (kernels/union_prepare.cu: kWarps)
MAX_TILES = 1024


@dataclass
class GpuUnionPlan:
    """:class:`~pageweaver_edu.core.union_plan.UnionPlan` fields as CUDA tensors.

    With H KV heads the groups of head h are ``h*G … (h+1)*G - 1``; ``group_slots`` are
    head-local and ``page_offsets`` index the shared ``pages``/``masks``/``cta_any``. Untrimmed
    plans keep spare room at the end of those three (``page_offsets[-1]`` is the length).
    """

    perm: object
    group_slots: object
    page_offsets: object
    pages: object
    masks: object
    cta_any: object
    page_counts: object
    heads: int = 1

    def to_numpy(self):
        """The CPU :class:`UnionPlan` (a list of them, one per head, for H > 1)."""
        offsets = self.page_offsets.cpu().numpy()
        total = int(offsets[-1])
        fields = {
            "pages": self.pages[:total].cpu().numpy(),
            "masks": self.masks[:total].cpu().numpy(),
            "cta_any": self.cta_any[:total].cpu().numpy(),
        }
        perm = self.perm.cpu().numpy().reshape(self.heads, -1)
        slots = self.group_slots.cpu().numpy()
        counts = self.page_counts.cpu().numpy()
        g = len(counts) // self.heads if self.heads else 0
        plans = []
        for h in range(self.heads):
            lo, hi = offsets[h * g], offsets[(h + 1) * g]
            plans.append(UnionPlan(
                perm=perm[h].astype(np.int32),
                group_slots=slots[h * g:(h + 1) * g].astype(np.int32),
                page_offsets=(offsets[h * g:(h + 1) * g + 1] - lo).astype(np.int32),
                pages=fields["pages"][lo:hi].astype(np.int32),
                masks=fields["masks"][lo:hi].astype(np.uint8),
                cta_any=fields["cta_any"][lo:hi].astype(bool),
                page_counts=counts[h * g:(h + 1) * g].astype(np.int32),
            ))
        return plans if self.heads > 1 else plans[0]


class UnionPrepPlan:
    """Prepared union launches for fixed N, heads, K, boundaries and g."""

    def __init__(self, n, heads, k, request_offsets, group):
        import torch

        self.n, self.heads, self.k = n, heads, k
        table = union_group_table(n, heads, request_offsets, group)
        self.num_groups = len(table)
        self.groups = torch.from_numpy(table).cuda()
        slots = table[:, :2].astype(np.int64)
        slots[:, 0] -= table[:, 2]
        self.group_slots = torch.from_numpy(slots.astype(np.int32)).cuda()
        self.gpw = max(1, -(-self.num_groups // (WARPS * MAX_TILES)))
        self.tiles = -(-self.num_groups // (WARPS * self.gpw))
        self.capacity = max(1, heads * n * k)  # every valid entry adds at most one union page
        self.count = get_kernel("union_prepare.cu", "union_count", "PPPPPiiii")
        self.emit = get_kernel("union_prepare.cu", "union_emit", "PPPPPPPPPiiii")

    def run(self, topk32, perm32, emit: bool = True):
        """Launch both kernels (only the counting one with ``emit=False``, for timing);
        returns the untrimmed tensors."""
        import torch

        dev = topk32.device
        counts = torch.empty(self.num_groups, dtype=torch.int32, device=dev)
        tile_sums = torch.empty(max(1, self.tiles), dtype=torch.int32, device=dev)
        offsets = torch.zeros(self.num_groups + 1, dtype=torch.int32, device=dev)
        pages = torch.empty(self.capacity, dtype=torch.int32, device=dev)
        masks = torch.empty(self.capacity, dtype=torch.uint8, device=dev)
        cta_any = torch.empty((self.capacity, 2), dtype=torch.bool, device=dev)
        if self.num_groups:
            grid, block = (self.tiles, 1), (32 * WARPS, 1, 1)
            common = (topk32.data_ptr(), perm32.data_ptr(), self.groups.data_ptr())
            launch(self.count, grid, block, *common, counts.data_ptr(), tile_sums.data_ptr(),
                   self.num_groups, self.k, self.gpw, self.n)
            if not emit:
                return counts, offsets, pages, masks, cta_any
            launch(self.emit, grid, block, *common, counts.data_ptr(), tile_sums.data_ptr(),
                   offsets.data_ptr(), pages.data_ptr(), masks.data_ptr(), cta_any.data_ptr(),
                   self.num_groups, self.k, self.gpw, self.n)
        return counts, offsets, pages, masks, cta_any


_plans: OrderedDict = OrderedDict()


def union_plan(n, heads, k, request_offsets=None, group=8) -> UnionPrepPlan:
    """Cached :class:`UnionPrepPlan`."""
    offsets = as_request_offsets(request_offsets, n)
    key = (n, heads, k, offsets.tobytes(), group)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = UnionPrepPlan(n, heads, k, offsets, group)
        while len(_plans) > 64:
            _plans.popitem(last=False)
    _plans.move_to_end(key)
    return plan


def gpu_prepare_unions(topk, perm=None, request_offsets=None, group: int = 8,
                       trim: bool = True, validate: bool = True) -> GpuUnionPlan:
    """Union preparation (§5) on the GPU; same fields and values as the CPU reference.

    Parameters
    ----------
    topk : torch.Tensor or array_like of int, shape [N, K] or [H, N, K]
    perm : torch.Tensor or array_like of int, shape [N] (or [H, N]), optional
        π per head; the identity when None.
    request_offsets : array_like of int, shape [R + 1], optional
    group : int
        g ≤ 8.
    trim : bool
        Cut pages/masks/cta_any to their length (reads one int back: a host sync).
    validate : bool
        Check π on the host (bijection inside every request) before launching. The kernels
        never read out of bounds either way: a π entry outside [0, N) selects nothing.

    Returns
    -------
    GpuUnionPlan
    """
    require_gpu()
    import torch

    ids = cuda_ids(topk, "topk", (2, 3))
    batched = ids.dim() == 3
    if not batched:
        ids = ids.unsqueeze(0)
    heads, n, k = ids.shape
    offsets = as_request_offsets(request_offsets, n)
    if perm is None:
        p = torch.arange(n, dtype=torch.int32, device=ids.device).repeat(heads, 1)
    else:
        p = cuda_ids(perm, "perm", (2,) if batched else (1,)).reshape(heads, n)
        if validate:
            host = p.cpu().numpy()
            for h in range(heads):
                as_permutation(host[h], offsets)
    plan = union_plan(n, heads, k, offsets, group)
    counts, page_offsets, pages, masks, cta_any = plan.run(ids, p.contiguous())
    if trim:
        total = int(page_offsets[-1].item())
        pages, masks, cta_any = pages[:total], masks[:total], cta_any[:total]
    return GpuUnionPlan(p.reshape(-1) if batched else p[0], plan.group_slots, page_offsets,
                        pages, masks, cta_any, counts, heads)
