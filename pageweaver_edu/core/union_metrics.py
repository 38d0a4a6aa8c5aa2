"""Query unions, membership masks and reuse metrics (docs/definitions.md#unions).

For a group G of query positions, ``U_G = ∪_{i∈G} S_i`` is the page list the group walks
and ``M_{i,p} = 1[p ∈ S_i]`` masks the rows that do not select a page. Union visits
``Σ_G |U_G|`` count page rounds, ``C4`` counts the page rounds of the two four-query halves
(the two CTAs of a cluster kernel, the two consumer warpgroups of the warp-specialized
kernel), and ``ρ_Q = Σ_i |S_i| / Σ_G |U_G|`` is the logical reuse.
:func:`cta_balance` and :func:`window_visits` break these down per CTA half and per window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .grouping import Grouping
from .inputs import (
    PageWeaverInputError,
    as_permutation,
    as_query_ids,
    as_request_offsets,
    as_topk,
    integer_array,
    positive_int,
)
from .supports import canonical_rows
from .windows import chunk_table, group_table, split_spans

CTA_SLOTS = 4  # execution slots per CTA: CTA0 = slots 0–3, CTA1 = slots 4–7


@dataclass(frozen=True)
class SlotPages:
    """Every valid (execution slot, page) edge, keyed by group.

    Attributes
    ----------
    group_of_edge, slot_of_edge, page_of_edge : numpy.ndarray of int64, shape [E]
        Group index, slot inside the group (0..g-1) and page id of each edge.
    groups : numpy.ndarray of int64, shape [G, 2]
        The group table: (first slot, number of slots).
    perm : numpy.ndarray of int64, shape [N]
    """

    group_of_edge: np.ndarray
    slot_of_edge: np.ndarray
    page_of_edge: np.ndarray
    groups: np.ndarray
    perm: np.ndarray


def slot_pages(topk, perm=None, request_offsets=None, group: int = 8) -> SlotPages:
    """Lay the edges of ``topk`` out in execution order under π.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
    perm : array_like of int, shape [N], optional
        π; the identity (original order) when None.
    request_offsets : array_like of int, shape [R + 1], optional
    group : int
        g.

    Returns
    -------
    SlotPages
    """
    rows = canonical_rows(topk)
    n = rows.shape[0]
    offsets = as_request_offsets(request_offsets, n)
    perm = np.arange(n) if perm is None else as_permutation(perm, offsets)
    groups = group_table(offsets, positive_int(group, "group size g"))
    group_of_slot = np.repeat(np.arange(len(groups)), groups[:, 1])
    slot_in_group = np.arange(n) - np.repeat(groups[:, 0], groups[:, 1])
    executed = rows[perm]  # row r = S_{π[r]}
    slot_idx, col = np.nonzero(executed >= 0)
    return SlotPages(
        group_of_slot[slot_idx], slot_in_group[slot_idx], executed[slot_idx, col], groups, perm
    )


_DENSE_CELLS = 1 << 26  # largest buckets × pages table marked densely (64 MiB of bool)


def _distinct_count(keys: np.ndarray, pages: np.ndarray, buckets: int) -> np.ndarray:
    """Number of distinct pages per bucket key.

    Marks (bucket, page) cells in a dense boolean table when it is small enough (no sort),
    otherwise counts unique (bucket, page) pairs with a sort.
    """
    if keys.size == 0:
        return np.zeros(buckets, dtype=np.int64)
    stride = int(pages.max()) + 1
    if buckets * stride <= min(_DENSE_CELLS, 64 * keys.size):  # sparse tables: sort instead
        marks = np.zeros((buckets, stride), dtype=bool)
        marks[keys, pages] = True
        return marks.sum(axis=1, dtype=np.int64)
    distinct = np.unique(keys * stride + pages) // stride
    return np.bincount(distinct, minlength=buckets)


@dataclass(frozen=True)
class UnionStats:
    """Reuse metrics of one grouping.

    Attributes
    ----------
    edges : int
        Σ_i |S_i| (selected query–page pairs; the same for every π).
    union_visits : int
        Σ_G |U_G|.
    c4 : int
        Σ_G (|U_{G0}| + |U_{G1}|), the page rounds of the four-query halves.
    rho : float
        ρ_Q = edges / union_visits (NaN when there are no edges).
    union_sizes : numpy.ndarray of int64, shape [G]
        |U_G| per group.
    """

    edges: int
    union_visits: int
    c4: int
    rho: float
    union_sizes: np.ndarray


def union_stats(topk, perm=None, request_offsets=None, group: int = 8) -> UnionStats:
    """Union visits, C4 and ρ_Q of ``topk`` executed in the order π.

    Parameters
    ----------
    topk, perm, request_offsets, group
        As :func:`slot_pages`: [N, K] ids, π [N] (identity when None), [R + 1], g.

    Returns
    -------
    UnionStats

    Examples
    --------
    >>> s = union_stats([[1, 4, 7], [1, 4, 9]], group=2)
    >>> (s.edges, s.union_visits, s.rho)
    (6, 4, 1.5)
    """
    sp = slot_pages(topk, perm, request_offsets, group)
    n_groups = len(sp.groups)
    sizes = _distinct_count(sp.group_of_edge, sp.page_of_edge, n_groups)
    halves = sp.group_of_edge * 2 + (sp.slot_of_edge >= CTA_SLOTS)
    c4 = int(_distinct_count(halves, sp.page_of_edge, 2 * n_groups).sum())
    edges = int(sp.page_of_edge.size)
    visits = int(sizes.sum())
    rho = edges / visits if visits else float("nan")
    return UnionStats(edges, visits, c4, rho, sizes)


def group_union(topk, members) -> np.ndarray:
    """U_G for an explicit list of query ids.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
    members : sequence of int
        Original query ids in the group, in slot order.

    Returns
    -------
    numpy.ndarray of int64, shape [|U_G|]
        Ascending page ids.
    """
    rows = _member_rows(topk, members)
    return np.unique(rows[rows >= 0])


def _member_rows(topk, members) -> np.ndarray:
    """Canonical rows of the members, each an original id in ``0 .. N - 1``."""
    rows = canonical_rows(topk)
    return rows[as_query_ids(members, rows.shape[0], "members")]


def membership_mask(topk, members) -> tuple[np.ndarray, np.ndarray]:
    """The mask ``M_{i,p} = 1[p ∈ S_i]`` of a group over its union.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
    members : sequence of int
        Original query ids of the group, in slot order.

    Returns
    -------
    union : numpy.ndarray of int64, shape [|U_G|]
    mask : numpy.ndarray of bool, shape [len(members), |U_G|]
    """
    rows = _member_rows(topk, members)
    union = np.unique(rows[rows >= 0])
    mask = (rows[:, :, None] == union[None, None, :]).any(axis=1)
    return union, mask


def useful_fraction(topk, members, heads: int = 16) -> float:
    """Fraction of a group's tensor-core rows × pages that do useful work.

    Every member contributes ``heads`` rows for every page of U_G, but only the rows of
    members that select the page are unmasked: the fraction is
    ``Σ_i |S_i| / (len(members) · |U_G|)`` (the head count cancels; it is kept for clarity).

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
    members : sequence of int
        Original query ids of the group.
    heads : int
        Q heads per query (tensor-core rows per member).

    Returns
    -------
    float
        In [0, 1]; NaN for an empty union.
    """
    heads = positive_int(heads, "heads")
    _, mask = membership_mask(topk, members)
    if mask.size == 0:
        return float("nan")
    return float(heads * mask.sum()) / float(heads * mask.size)


def cta_balance(topk, perm=None, request_offsets=None, group: int = 8) -> dict:
    """Union visits, C4 and the balance of the two CTA halves of every group.

    Parameters
    ----------
    topk, perm, request_offsets, group
        As :func:`slot_pages`; slots ``< 4`` are CTA0's half, the rest CTA1's.

    Returns
    -------
    dict
        ``union_visits`` Σ|U_G|; ``c4`` Σ(|U_G0| + |U_G1|); ``critical`` Σ max(|U_G0|,
        |U_G1|) (the rounds of the busier CTA); ``imbalance`` = critical / (c4 / 2) ≥ 1;
        ``one_sided`` Σ(|U_G| − |U_G0 ∩ U_G1|): pages only one CTA computes on.
    """
    sp = slot_pages(topk, perm, request_offsets, group)
    n_groups = len(sp.groups)
    halves = sp.group_of_edge * 2 + (sp.slot_of_edge >= CTA_SLOTS)
    stride = int(sp.page_of_edge.max(initial=0)) + 1
    half_keys = np.unique(halves * stride + sp.page_of_edge) // stride
    per_half = np.bincount(half_keys, minlength=2 * n_groups).reshape(n_groups, 2)
    stats = union_stats(topk, perm, request_offsets, group)
    c4, critical = int(per_half.sum()), int(per_half.max(axis=1).sum())
    overlap = c4 - stats.union_visits
    return {
        "union_visits": stats.union_visits,
        "c4": c4,
        "critical": critical,
        "imbalance": critical / (c4 / 2) if c4 else float("nan"),
        "one_sided": stats.union_visits - overlap,
    }


def window_visits(topk, perm, grouping: Grouping, request_offsets=None,
                  union_sizes=None) -> np.ndarray:
    """Union visits per window of the window table (groups never cross windows).

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
    perm : array_like of int, shape [N], or None
        π; the identity when None.
    grouping : Grouping
        W, g and the chunk size of the windows.
    request_offsets : array_like of int, shape [R + 1], optional
    union_sizes : array_like of int, shape [G], optional
        |U_G| per group (e.g. ``union_stats(...).union_sizes``), to skip recomputing them.

    Returns
    -------
    numpy.ndarray of int64, shape [M]
    """
    grouping = Grouping.check(grouping)
    n = as_topk(topk).shape[0]
    offsets = as_request_offsets(request_offsets, n)
    windows = split_spans(chunk_table(offsets, grouping.chunk_size), grouping.window)
    starts = group_table(offsets, grouping.group)[:, 0]
    if union_sizes is None:
        sizes = union_stats(topk, perm, offsets, grouping.group).union_sizes
    else:
        sizes = integer_array(union_sizes, "union_sizes", low=0)
        if sizes.shape != starts.shape:
            raise PageWeaverInputError(f"union_sizes must have one entry per group, shape "
                                       f"{starts.shape}; got {sizes.shape}")
    which = np.searchsorted(windows[:, 0], starts, side="right") - 1
    return np.bincount(which, weights=sizes, minlength=len(windows)).astype(np.int64)
