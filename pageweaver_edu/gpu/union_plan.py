"""The union plan on the GPU: what every GPU union preparation returns and every Union kernel
takes.

:class:`GpuUnionPlan` holds the plan of H KV heads in the layout of
``kernels/union_plan_args.cuh``: one group table for all heads, head-local π, and the pages,
membership bytes and CTA flags of every group (docs/definitions.md#union-preparation), either
packed one group after another (CSR) or one row of a fixed capacity per group (the fused online
plan, docs/definitions.md#fused-online-plan). It is built on the GPU, with no host
synchronisation, by :func:`pageweaver_edu.gpu.unions.gpu_prepare_unions` (CSR) or
:func:`pageweaver_edu.gpu.regroup_plan.gpu_regroup_plan` (rows), or uploaded from CPU plans by
:meth:`GpuUnionPlan.from_cpu`, and read back with :meth:`GpuUnionPlan.to_cpu`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..core.inputs import PageWeaverInputError
from ..core.union_plan import UnionPlan


@dataclass(frozen=True)
class GpuUnionPlan:
    """Union plan of H KV heads as CUDA tensors (the GPU form of
    :class:`~pageweaver_edu.core.union_plan.UnionPlan`).

    Attributes
    ----------
    perm : torch.Tensor of int32, shape [H*N]
        π of every head, head-local original ids, heads one after the other.
    groups : torch.Tensor of int32, shape [H*G, 4]
        ``(first slot in perm, slots, head row base h*N, 0)``; group j of head h is row h*G + j.
    page_offsets : torch.Tensor of int32, shape [H*G + 1]
        Group i's pages are ``pages[page_offsets[i]:page_offsets[i] + page_counts[i]]``; in a
        CSR plan ``page_offsets[i+1] = page_offsets[i] + page_counts[i]``, in a row plan
        ``page_offsets[i] = i * row_capacity``.
    pages : torch.Tensor of int32, shape [>= T]
        U_G per group, ascending (CSR: T = ``page_offsets[-1]``, an untrimmed plan has spare
        room; rows: T = H*G*row_capacity, each row's entries past its count are unused).
    masks : torch.Tensor of uint8, shape [>= T]
        Bit r set when slot r of the group selects the page.
    cta_any : torch.Tensor of bool, shape [>= T, 2], or None
        CTA0 (slots 0–3) / CTA1 (slots 4–7) has work on the page (None in a row plan: no
        kernel reads it; :meth:`to_cpu` derives it from the masks).
    page_counts : torch.Tensor of int32, shape [H*G]
        |U_G|.
    group : int
        g.
    heads : int
        H.
    n : int
        N, queries per head.
    row_capacity : int
        0 for a CSR plan; else the entries of every group's row (g·K).
    """

    perm: object
    groups: object
    page_offsets: object
    pages: object
    masks: object
    cta_any: object
    page_counts: object
    group: int
    heads: int
    n: int
    row_capacity: int = 0

    @property
    def num_groups(self) -> int:
        """G, groups per KV head."""
        return int(self.groups.shape[0]) // self.heads

    def trimmed(self) -> GpuUnionPlan:
        """The plan with pages, masks and CTA flags cut to their length T (reads T back: one
        host synchronisation); a row plan as it is."""
        if self.row_capacity:
            return self
        total = int(self.page_offsets[-1].item())
        return replace(self, pages=self.pages[:total], masks=self.masks[:total],
                       cta_any=self.cta_any[:total])

    @classmethod
    def from_cpu(cls, plans) -> GpuUnionPlan:
        """Upload CPU plans, one per KV head (all with the same g and group table).

        Parameters
        ----------
        plans : UnionPlan or sequence of UnionPlan
            Head h's plan, e.g. :func:`~pageweaver_edu.core.union_plan.prepare_unions` of
            head h's Top-K.

        Returns
        -------
        GpuUnionPlan
        """
        import torch

        plans = list(plans) if isinstance(plans, (list, tuple)) else [plans]
        first = plans[0]
        n, heads = len(first.perm), len(plans)
        for p in plans[1:]:
            if p.group != first.group or not np.array_equal(p.group_slots, first.group_slots):
                raise PageWeaverInputError(
                    "every KV head's plan must have the same g and group table")
        if heads * n >= 2**31:
            raise PageWeaverInputError(f"{heads} x {n} rows do not fit int32 indices")
        base = np.arange(heads, dtype=np.int64)[:, None] * n
        slots = first.group_slots.astype(np.int64)
        groups = np.zeros((heads, len(slots), 4), dtype=np.int64)
        groups[:, :, 0] = slots[None, :, 0] + base
        groups[:, :, 1] = slots[None, :, 1]
        groups[:, :, 2] = base
        starts = np.cumsum([0] + [int(p.page_offsets[-1]) for p in plans])
        offsets = np.concatenate([p.page_offsets[:-1].astype(np.int64) + s
                                  for p, s in zip(plans, starts, strict=False)] + [starts[-1:]])

        def up(parts, dtype, spare):  # a spare entry keeps every tensor non-empty
            return torch.from_numpy(np.ascontiguousarray(
                np.concatenate([*parts, spare]).astype(dtype))).cuda()

        return cls(
            perm=up([p.perm for p in plans], np.int32, np.zeros(0)),
            groups=up([groups.reshape(-1, 4)], np.int32, np.zeros((0, 4))),
            page_offsets=up([offsets], np.int32, np.zeros(0)),
            pages=up([p.pages for p in plans], np.int32, np.zeros(1)),
            masks=up([p.masks for p in plans], np.uint8, np.zeros(1)),
            cta_any=up([p.cta_any for p in plans], bool, np.zeros((1, 2))),
            page_counts=up([p.page_counts for p in plans], np.int32, np.zeros(0)),
            group=first.group, heads=heads, n=n,
        )

    def to_cpu(self):
        """The CPU :class:`~pageweaver_edu.core.union_plan.UnionPlan` of every head.

        Returns
        -------
        UnionPlan (one KV head) or list of UnionPlan (one per head)
        """
        counts = self.page_counts.cpu().numpy()
        if self.row_capacity:  # gather the rows into CSR
            starts = self.page_offsets.cpu().numpy()[:len(counts)].astype(np.int64)
            take = np.concatenate([np.arange(s, s + c) for s, c in zip(starts, counts,
                                                                      strict=True)]
                                  + [np.zeros(0, dtype=np.int64)])
            pages = self.pages.cpu().numpy()[take]
            masks = self.masks.cpu().numpy()[take]
            offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            cta_any = np.stack([(masks & 0x0F) != 0, (masks & 0xF0) != 0], axis=1)
        else:
            offsets = self.page_offsets.cpu().numpy()
            total = int(offsets[-1])
            pages = self.pages[:total].cpu().numpy()
            masks = self.masks[:total].cpu().numpy()
            cta_any = self.cta_any[:total].cpu().numpy()
        perm = self.perm.cpu().numpy().reshape(self.heads, -1)
        groups = self.groups.cpu().numpy()
        slots = np.stack([groups[:, 0] - groups[:, 2], groups[:, 1]], axis=1)
        g = self.num_groups
        plans = []
        for h in range(self.heads):
            lo, hi = offsets[h * g], offsets[(h + 1) * g]
            plans.append(UnionPlan(
                perm=perm[h].astype(np.int32),
                group_slots=slots[h * g:(h + 1) * g].astype(np.int32),
                page_offsets=(offsets[h * g:(h + 1) * g + 1] - lo).astype(np.int32),
                pages=pages[lo:hi].astype(np.int32),
                masks=masks[lo:hi].astype(np.uint8),
                cta_any=cta_any[lo:hi].astype(bool),
                page_counts=counts[h * g:(h + 1) * g].astype(np.int32),
                group=self.group,
            ))
        return plans if self.heads > 1 else plans[0]
