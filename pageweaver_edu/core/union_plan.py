"""Union preparation: π and the group table → page lists and membership bytes.

For every group the kernel needs the sorted, de-duplicated page list U_G (CSR), and for
every (group, page) a membership byte whose bit r is set when the query in execution slot r
(original id ``π[base + r]``) selects the page. Bits address slots; Q rows, causal
positions and output rows address original ids through π (docs/definitions.md#union-preparation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .inputs import PageWeaverInputError, positive_int
from .union_metrics import CTA_SLOTS, slot_pages


@dataclass(frozen=True)
class UnionPlan:
    """What a Union kernel reads, on the host (:class:`pageweaver_edu.gpu.GpuUnionPlan` is the
    same plan on the GPU).

    Attributes
    ----------
    perm : numpy.ndarray of int32, shape [N]
        π.
    group_slots : numpy.ndarray of int32, shape [G, 2]
        (first slot, number of slots) per group.
    page_offsets : numpy.ndarray of int32, shape [G + 1]
        Group g's pages are ``pages[page_offsets[g]:page_offsets[g+1]]``.
    pages : numpy.ndarray of int32, shape [T]
        U_G per group, ascending.
    masks : numpy.ndarray of uint8, shape [T]
        Bit r set when slot r of the group selects the page.
    cta_any : numpy.ndarray of bool, shape [T, 2]
        ``masks & 0x0F`` and ``masks & 0xF0`` are non-zero: CTA0 / CTA1 has work on the page.
    page_counts : numpy.ndarray of int32, shape [G]
        |U_G|.
    group : int
        g, the slots of a full group.
    """

    perm: np.ndarray
    group_slots: np.ndarray
    page_offsets: np.ndarray
    pages: np.ndarray
    masks: np.ndarray
    cta_any: np.ndarray
    page_counts: np.ndarray
    group: int

    def group_pages(self, g: int) -> tuple[np.ndarray, np.ndarray]:
        """(U_G, membership bytes) of group ``g``."""
        lo, hi = self.page_offsets[g], self.page_offsets[g + 1]
        return self.pages[lo:hi], self.masks[lo:hi]

    def supports(self) -> list[frozenset[int]]:
        """Rebuild every S_i from the plan (used to check that nothing was lost)."""
        out: list[set[int]] = [set() for _ in range(len(self.perm))]
        for g, (base, size) in enumerate(self.group_slots):
            pages, masks = self.group_pages(g)
            for r in range(int(size)):
                out[int(self.perm[base + r])].update(int(p) for p in pages[(masks >> r) & 1 == 1])
        return [frozenset(s) for s in out]


def prepare_unions(topk, perm=None, request_offsets=None, group: int = 8) -> UnionPlan:
    """Build the union plan of ``topk`` executed in the order π.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
    perm : array_like of int, shape [N], optional
        π; identity when None.
    request_offsets : array_like of int, shape [R + 1], optional
    group : int
        g ≤ 8 (one membership bit per slot in a byte).

    Returns
    -------
    UnionPlan
    """
    if positive_int(group, "group size g") > 8:
        raise PageWeaverInputError(f"membership bytes hold at most 8 slots, got g = {group}")
    sp = slot_pages(topk, perm, request_offsets, group)
    n_groups = len(sp.groups)
    stride = int(sp.page_of_edge.max()) + 1 if sp.page_of_edge.size else 1
    keys = sp.group_of_edge * stride + sp.page_of_edge
    order = np.argsort(keys, kind="stable")
    keys, bits = keys[order], (1 << sp.slot_of_edge[order]).astype(np.uint8)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if keys.size else keys
    masks = np.bitwise_or.reduceat(bits, starts) if keys.size else bits
    unique_keys = keys[starts]
    counts = np.bincount(unique_keys // stride, minlength=n_groups).astype(np.int32)
    low = (1 << CTA_SLOTS) - 1
    return UnionPlan(
        perm=sp.perm.astype(np.int32),
        group_slots=sp.groups.astype(np.int32),
        page_offsets=np.r_[0, np.cumsum(counts)].astype(np.int32),
        pages=(unique_keys % stride).astype(np.int32),
        masks=masks.astype(np.uint8),
        cta_any=np.stack([(masks & low) != 0, (masks & (0xFF ^ low)) != 0], axis=1),
        page_counts=counts,
        group=int(group),
    )
