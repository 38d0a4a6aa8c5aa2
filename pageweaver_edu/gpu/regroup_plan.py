"""The fused online regroup (``regroup_plan_pairs_w<W>`` in ``kernels/regroup.cu``): Top-K to
π and the union plan in one launch (docs/definitions.md#fused-online-plan).

Each window's CTA runs the greedy of :mod:`.regroup` (π bit-identical to the CPU reference)
and then, from its π in shared memory, writes the union plan of its groups in rows of a fixed
capacity g·K: group G's pages and membership bytes at ``G * g * K``, its count beside. No
window waits for another (no prefix sum over the groups' counts) and no second launch reads π
back. :func:`gpu_regroup_plan` returns a :class:`~.union_plan.GpuUnionPlan` with
``row_capacity = g·K`` that every Union kernel takes, equal group for group to
:func:`pageweaver_edu.core.union_plan.prepare_unions` of the same π.
"""

from __future__ import annotations

from ..core.grouping import Grouping
from ..core.inputs import PageWeaverInputError, as_request_offsets
from .loader import cached_launch, get_kernel
from .regroup import ARG_FORMAT, PAIRS_MAX_K, VARIANTS, RegroupLaunch, regroup_inputs
from .tables import union_group_table
from .union_plan import GpuUnionPlan

#: The fused kernels' extra arguments: pages, masks, counts, G per KV head, row capacity.
PLAN_ARG_FORMAT = ARG_FORMAT + "PPPii"
#: Windows the fused kernels hold (their "pairs" regroup, one thread per query).
PLAN_WINDOWS = tuple(w for w, family in VARIANTS.values() if family == "pairs")


class RegroupPlanLaunch(RegroupLaunch):
    """A prepared fused launch for fixed shapes, grouping and boundaries.

    Parameters
    ----------
    n, heads, k : int
        N queries, H KV heads, K <= 16 ids per row.
    grouping : Grouping
        W <= 128, g <= 8, B <= 512 (W and the chunk size are multiples of g: every group lies
        inside one window).
    request_offsets : numpy.ndarray of int64, shape [R + 1]
    page_size : int
        P.
    options : tuple of str
        Extra nvcc flags (a test build).
    """

    def __init__(self, n, heads, k, grouping: Grouping, request_offsets, page_size=128,
                 options=()):
        import torch

        if k > PAIRS_MAX_K:
            raise PageWeaverInputError(f"the fused online plan needs K <= {PAIRS_MAX_K}, got {k}")
        table = union_group_table(n, heads, request_offsets, grouping.group)  # checks g <= 8
        fits = [w for w in PLAN_WINDOWS if w >= grouping.window]
        if not fits:
            raise PageWeaverInputError(
                f"the fused online plan holds W <= {max(PLAN_WINDOWS)}, got W = {grouping.window}")
        super().__init__(n, heads, k, grouping, request_offsets, page_size,
                         variant=f"pairs_w{min(fits)}", options=options)
        self.func = get_kernel("regroup.cu", "regroup_plan_" + self.variant, PLAN_ARG_FORMAT,
                               options=tuple(options))
        self.groups = torch.from_numpy(table).cuda()
        self.num_groups = len(table) // max(heads, 1)  # G per KV head
        self.capacity = grouping.group * k  # entries of a group's row: at most g·K pages
        self.page_offsets = torch.arange(0, (len(table) + 1) * self.capacity, self.capacity,
                                         dtype=torch.int32, device="cuda")

    def run(self, topk32, lengths64=None, out=None) -> GpuUnionPlan:
        """π and the union plan of every head, in fresh tensors.

        Parameters
        ----------
        topk32 : torch.Tensor of int32 on the GPU, shape [H, N, K], contiguous
        lengths64 : torch.Tensor of int64 on the GPU, shape [N], optional
        out : None
            Not taken (the plan's tensors are allocated per launch).

        Returns
        -------
        GpuUnionPlan
            ``row_capacity = g·K``, ``cta_any`` None.
        """
        import torch

        if out is not None:
            raise PageWeaverInputError("the fused launch allocates its plan; out is not taken")
        dev = topk32.device
        perm = torch.empty((self.heads, self.n), dtype=torch.int32, device=dev)
        rows = max(1, len(self.groups) * self.capacity)
        pages = torch.empty(rows, dtype=torch.int32, device=dev)
        masks = torch.empty(rows, dtype=torch.uint8, device=dev)
        counts = torch.empty(max(1, len(self.groups)), dtype=torch.int32, device=dev)
        if self.n:
            self.launch_regroup(topk32, lengths64, perm, pages.data_ptr(), masks.data_ptr(),
                                counts.data_ptr(), self.num_groups, self.capacity)
        return GpuUnionPlan(perm.reshape(-1), self.groups, self.page_offsets, pages, masks,
                            None, counts[:len(self.groups)], self.grouping.group, self.heads,
                            self.n, row_capacity=self.capacity)


def regroup_plan_launch(n, heads, k, grouping: Grouping, request_offsets=None,
                        page_size=128) -> RegroupPlanLaunch:
    """The cached :class:`RegroupPlanLaunch` of these shapes, grouping and boundaries (the 64
    most recently used are kept)."""
    offsets = as_request_offsets(request_offsets, n)
    return cached_launch("regroup_plan", (n, heads, k, grouping, offsets.tobytes(), page_size),
                         lambda: RegroupPlanLaunch(n, heads, k, grouping, offsets, page_size))


def gpu_regroup_plan(topk, grouping: Grouping, *, request_offsets=None, lengths=None,
                     page_size: int = 128) -> GpuUnionPlan:
    """π and the union plan of the greedy regroup in one launch.

    Parameters
    ----------
    topk : torch.Tensor or array_like of int, shape [N, K] or [H, N, K]
        Page ids (``< 0`` padding), K <= 16; as :func:`~.regroup.gpu_greedy_regroup` takes.
    grouping : Grouping
        W <= 128, g <= 8, B <= 512.
    request_offsets : array_like of int, shape [R + 1], optional
    lengths : torch.Tensor or array_like of int, shape [N], optional
        L_i (the capacity fallback).
    page_size : int
        P.

    Returns
    -------
    GpuUnionPlan
        Its π is :func:`~.regroup.gpu_greedy_regroup`'s; group for group its pages and masks
        are :func:`pageweaver_edu.core.union_plan.prepare_unions`'s for that π.
    """
    ids, lengths, page_size = regroup_inputs(topk, grouping, lengths, page_size)
    if ids.dim() == 2:
        ids = ids.unsqueeze(0)
    heads, n, k = ids.shape
    return regroup_plan_launch(n, heads, k, grouping, request_offsets, page_size).run(ids,
                                                                                     lengths)
