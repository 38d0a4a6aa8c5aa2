"""Union preparation on the GPU (``kernels/union_prepare.cu``): π and the group table to the
union plan, field for field the CPU reference's.

:func:`gpu_prepare_unions` takes the Top-K ids and π (CUDA tensors or arrays) of H KV heads and
returns a :class:`~pageweaver_edu.gpu.union_plan.GpuUnionPlan`. Two launches and no host
synchronisation; only ``trim=True`` (the default) reads the total page count back to cut the
page arrays to length, and ``validate=True`` reads π back to check it. A call inside a CUDA-graph
capture passes ``trim=False, validate=False`` (or uses :meth:`UnionPrepLaunch.run`): the
launches are sized from N, H, K and g alone. :class:`UnionPrepLaunch` is the prepared pair of
launches (its group table is uploaded once per shape).
"""

from __future__ import annotations

from ..core.inputs import PageWeaverInputError, as_permutation, as_request_offsets
from .device import require_gpu
from .loader import cached_launch, get_kernel, launch
from .tables import union_group_table
from .tensors import cuda_ids
from .union_plan import GpuUnionPlan

WARPS = 8  # groups in flight per CTA (kernels/union_prepare.cu: kWarps)
MAX_TILES = 1024


class UnionPrepLaunch:
    """The prepared union-preparation launches for fixed N, H, K, request offsets and g.

    Parameters
    ----------
    n, heads, k : int
        N queries, H KV heads, K ids per row.
    request_offsets : numpy.ndarray of int64, shape [R + 1]
    group : int
        g ≤ 8.
    """

    def __init__(self, n, heads, k, request_offsets, group):
        import torch

        self.n, self.heads, self.k, self.group = n, heads, k, group
        table = union_group_table(n, heads, request_offsets, group)
        self.num_groups = len(table)
        self.groups = torch.from_numpy(table).cuda()
        self.gpw = max(1, -(-self.num_groups // (WARPS * MAX_TILES)))
        self.tiles = -(-self.num_groups // (WARPS * self.gpw))
        self.capacity = max(1, heads * n * k)  # every valid entry adds at most one union page
        self.count_func = get_kernel("union_prepare.cu", "union_count", "PPPPPiiii")
        self.emit_func = get_kernel("union_prepare.cu", "union_emit", "PPPPPPPPPiiii")

    def count(self, topk32, perm32):
        """Only the counting launch (|U_G| per group, for timing it alone).

        Parameters
        ----------
        topk32 : torch.Tensor of int32 on the GPU, shape [H, N, K], contiguous
        perm32 : torch.Tensor of int32 on the GPU, shape [H, N] or [H*N], contiguous

        Returns
        -------
        (counts, tile_sums) : torch.Tensor of int32, shapes [H*G] and [tiles]
        """
        import torch

        counts = torch.empty(self.num_groups, dtype=torch.int32, device=topk32.device)
        tile_sums = torch.empty(max(1, self.tiles), dtype=torch.int32, device=topk32.device)
        if self.num_groups:
            launch(self.count_func, (self.tiles, 1), (32 * WARPS, 1, 1), topk32.data_ptr(),
                   perm32.data_ptr(), self.groups.data_ptr(), counts.data_ptr(),
                   tile_sums.data_ptr(), self.num_groups, self.k, self.gpw, self.n)
        return counts, tile_sums

    def run(self, topk32, perm32) -> GpuUnionPlan:
        """Both launches: the untrimmed union plan of ``perm32``.

        Parameters
        ----------
        topk32, perm32
            As :meth:`count`.

        Returns
        -------
        GpuUnionPlan
            Pages, masks and CTA flags hold spare room past ``page_offsets[-1]``.
        """
        import torch

        dev = topk32.device
        counts, tile_sums = self.count(topk32, perm32)
        offsets = torch.zeros(self.num_groups + 1, dtype=torch.int32, device=dev)
        pages = torch.empty(self.capacity, dtype=torch.int32, device=dev)
        masks = torch.empty(self.capacity, dtype=torch.uint8, device=dev)
        cta_any = torch.empty((self.capacity, 2), dtype=torch.bool, device=dev)
        if self.num_groups:
            launch(self.emit_func, (self.tiles, 1), (32 * WARPS, 1, 1), topk32.data_ptr(),
                   perm32.data_ptr(), self.groups.data_ptr(), counts.data_ptr(),
                   tile_sums.data_ptr(), offsets.data_ptr(), pages.data_ptr(), masks.data_ptr(),
                   cta_any.data_ptr(), self.num_groups, self.k, self.gpw, self.n)
        return GpuUnionPlan(perm32.reshape(-1), self.groups, offsets, pages, masks, cta_any,
                            counts, self.group, self.heads, self.n)


def union_prep_launch(n, heads, k, request_offsets=None, group=8) -> UnionPrepLaunch:
    """The cached :class:`UnionPrepLaunch` of these shapes, boundaries and g.

    Parameters
    ----------
    n, heads, k : int
        N rows per KV head, H KV heads, K ids per row.
    request_offsets : array_like of int, shape [R + 1], optional
    group : int
        g.
    """
    offsets = as_request_offsets(request_offsets, n)
    return cached_launch("union_prep", (n, heads, k, offsets.tobytes(), group),
                         lambda: UnionPrepLaunch(n, heads, k, offsets, group))


def gpu_prepare_unions(topk, perm=None, request_offsets=None, group: int = 8,
                       trim: bool = True, validate: bool = True) -> GpuUnionPlan:
    """Union preparation on the GPU; same fields and values as
    :func:`pageweaver_edu.core.union_plan.prepare_unions`.

    Parameters
    ----------
    topk : torch.Tensor or array_like of int, shape [N, K] or [H, N, K]
    perm : torch.Tensor or array_like of int, shape [N], [H, N] or [H*N], optional
        π per head (head-local ids); the identity when None.
    request_offsets : array_like of int, shape [R + 1], optional
    group : int
        g ≤ 8.
    trim : bool
        Cut pages, masks and CTA flags to their length (reads one int back: a host sync).
    validate : bool
        Check π on the host (a bijection inside every request) before launching. The kernels
        never read out of bounds either way: a π entry outside [0, N) selects nothing.

    Returns
    -------
    GpuUnionPlan
    """
    require_gpu()
    import torch

    ids = cuda_ids(topk, "topk", (2, 3))
    if ids.dim() == 2:
        ids = ids.unsqueeze(0)
    heads, n, k = ids.shape
    offsets = as_request_offsets(request_offsets, n)
    if perm is None:
        p = torch.arange(n, dtype=torch.int32, device=ids.device).repeat(heads, 1)
    else:
        p = cuda_ids(perm, "perm", (1, 2))
        if p.numel() != heads * n:
            raise PageWeaverInputError(
                f"perm must hold H x N = {heads} x {n} ids, got shape {tuple(p.shape)}")
        p = p.reshape(heads, n)
        if validate:
            host = p.cpu().numpy()
            for h in range(heads):
                as_permutation(host[h], offsets)
    plan = union_prep_launch(n, heads, k, offsets, group).run(ids, p.contiguous())
    return plan.trimmed() if trim else plan


