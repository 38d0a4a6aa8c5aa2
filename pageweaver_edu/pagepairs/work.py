"""Direct KV-page pairs: the page-side execution the paper compared against.

Invert the incidence to ``R_p = {i : p ∈ S_i}``, pair pages greedily by ``|R_a ∩ R_b|`` (each
page in at most one pair), and give every pair a work unit: its common queries accumulate both
pages in one local softmax state, its exclusive queries do single-page work, and unpaired
pages do single-page work for all their readers. Each work item writes a normalized partial
output plus a log-sum-exp per head; a combine step finishes every query. Every selected
(query, page) edge is covered by exactly one work item (arXiv:2610.11201, §3.2, §4.3). The
attention itself is in :mod:`.attention`, the byte accounting in :mod:`.traffic`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.inputs import as_request_offsets
from ..core.supports import canonical_rows

COMMON, EXCLUSIVE, SINGLE = 0, 1, 2  #: work-item kinds


@dataclass(frozen=True)
class PagePairPlan:
    """Incidence, page pairs and work lists of one Top-K array.

    Attributes
    ----------
    pages : numpy.ndarray of int64, shape [Pn, 2]
        (request, logical page) of every selected page, ascending.
    indptr : numpy.ndarray of int64, shape [Pn + 1]
        ``readers[indptr[p]:indptr[p+1]]`` is R_p (ascending query ids).
    readers : numpy.ndarray of int64, shape [E]
    pairs : numpy.ndarray of int64, shape [Q, 2]
        Indices into ``pages`` of the proposed disjoint pairs (a < b).
    shared : numpy.ndarray of int64, shape [Q]
        ``|R_a ∩ R_b|`` per pair: partials saved by pairing.
    singles : numpy.ndarray of int64, shape [S]
        Indices of the pages left unpaired.
    work_query, work_unit, work_kind : numpy.ndarray of int64, shape [Wn]
        Query, unit (pair index, or ``Q + s`` for the s-th single page) and kind of every
        work item, ordered by (unit, kind, query).
    work_pages : numpy.ndarray of int64, shape [Wn, 2]
        Logical pages of every work item (second entry -1 for single-page work).
    work_index : numpy.ndarray of int64, shape [Wn, 2]
        The same pages as indices into :attr:`pages` (-1 for none).
    num_queries : int
    """

    pages: np.ndarray
    indptr: np.ndarray
    readers: np.ndarray
    pairs: np.ndarray
    shared: np.ndarray
    singles: np.ndarray
    work_query: np.ndarray
    work_unit: np.ndarray
    work_kind: np.ndarray
    work_pages: np.ndarray
    work_index: np.ndarray
    num_queries: int

    def readers_of(self, p: int) -> np.ndarray:
        """R_p of the page with index ``p`` in :attr:`pages`."""
        return self.readers[self.indptr[p] : self.indptr[p + 1]]

    def pair_lists(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(common, only-a, only-b) query lists of pair ``k``."""
        sel = self.work_unit == k
        q, kind, pg = self.work_query[sel], self.work_kind[sel], self.work_pages[sel, 0]
        a_page = self.pages[self.pairs[k, 0], 1]
        excl = kind == EXCLUSIVE
        return q[kind == COMMON], q[excl & (pg == a_page)], q[excl & (pg != a_page)]

    def stats(self, tile: int = 4) -> dict:
        """Counts of the plan: edges, pages, pairs, work items by kind, partials per query.

        ``tile_rounds`` counts (query tile, page) rounds when a unit's queries of one kind
        are processed ``tile`` at a time (4 queries × 16 heads = one M64 tile), the unit the
        Union8 C4 count uses too: a common tile walks two pages, an exclusive tile one.
        """
        per_query = np.bincount(self.work_query, minlength=self.num_queries)
        key = np.stack([self.work_unit, self.work_kind, self.work_pages[:, 0]], axis=1)
        uniq, sizes = np.unique(key, axis=0, return_counts=True)
        kinds = uniq[:, 1]
        rounds = int(((-(-sizes // tile)) * np.where(kinds == COMMON, 2, 1)).sum())
        kind = self.work_kind
        return {
            "queries": self.num_queries, "edges": int(self.readers.size),
            "pages": len(self.pages), "pairs": len(self.pairs),
            "unpaired_pages": len(self.singles), "shared": int(self.shared.sum()),
            "work_items": int(kind.size), "common_items": int((kind == COMMON).sum()),
            "exclusive_items": int((kind == EXCLUSIVE).sum()),
            "single_items": int((kind == SINGLE).sum()),
            "max_items_per_query": int(per_query.max(initial=0)), "tile_rounds": rounds,
        }


def plan_page_pairs(topk, request_offsets=None) -> PagePairPlan:
    """Invert the incidence, propose disjoint page pairs and build the work lists.

    Pairs are chosen greedily: candidate pairs (pages of one request read by at least one
    common query) are taken in order of decreasing ``|R_a ∩ R_b|`` (ties: smaller a, then
    smaller b) whenever neither page is already paired.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
        Top-K page ids (padding ``< 0`` and duplicates allowed).
    request_offsets : array_like of int, shape [R + 1], optional
        Pages of different requests are different pages and never pair.

    Returns
    -------
    PagePairPlan
    """
    rows = canonical_rows(topk)
    n, width = rows.shape
    offsets = as_request_offsets(request_offsets, n)
    req = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    qi, col = np.nonzero(rows >= 0)
    stride = int(rows.max(initial=-1)) + 1
    uniq, edge_page = np.unique(req[qi] * stride + rows[qi, col], return_inverse=True)
    num_pages = len(uniq)
    readers = qi[np.lexsort((qi, edge_page))]
    indptr = np.r_[0, np.cumsum(np.bincount(edge_page, minlength=num_pages))]
    pages = np.stack([uniq // max(stride, 1), uniq % max(stride, 1)], axis=1)

    # Co-readership |R_a ∩ R_b| of every page pair that some query reads together. Rows are
    # canonical (ascending, padding last), so column i < j gives page index a < b.
    pidx = np.full(rows.shape, -1, dtype=np.int64)
    pidx[qi, col] = edge_page
    parts = [np.zeros(0, dtype=np.int64)]
    for i in range(width):
        for j in range(i + 1, width):
            ok = pidx[:, j] >= 0
            parts.append(pidx[ok, i] * num_pages + pidx[ok, j])
    pair_keys, counts = np.unique(np.concatenate(parts), return_counts=True)
    taken = np.zeros(num_pages, dtype=bool)
    chosen = []
    for t in np.lexsort((pair_keys, -counts)):
        a, b = divmod(int(pair_keys[t]), num_pages)
        if not taken[a] and not taken[b]:
            taken[a] = taken[b] = True
            chosen.append((a, b, int(counts[t])))
    pairs = np.array([(a, b) for a, b, _ in chosen], dtype=np.int64).reshape(-1, 2)
    shared = np.array([c for _, _, c in chosen], dtype=np.int64)
    singles = np.flatnonzero(~taken)

    # Work items: one per (query, unit); a common query of pair (a, b) covers both edges
    # with one item, emitted from its edge on page a.
    partner = np.full(num_pages, -1, dtype=np.int64)
    unit = np.zeros(num_pages, dtype=np.int64)
    partner[pairs[:, 0]], partner[pairs[:, 1]] = pairs[:, 1], pairs[:, 0]
    unit[pairs[:, 0]] = unit[pairs[:, 1]] = np.arange(len(pairs))
    unit[singles] = len(pairs) + np.arange(len(singles))
    edge_keys = np.sort(qi * num_pages + edge_page)
    other = partner[edge_page]
    probe = qi * num_pages + np.maximum(other, 0)
    pos = np.minimum(np.searchsorted(edge_keys, probe), max(len(edge_keys) - 1, 0))
    has_other = (other >= 0) & (edge_keys[pos] == probe) if len(edge_keys) else other >= 0
    keep = ~has_other | (edge_page < other)
    kind = np.where(has_other, COMMON, np.where(other >= 0, EXCLUSIVE, SINGLE))[keep]
    first, second = edge_page[keep], np.where(has_other, other, -1)[keep]
    wq = qi[keep]
    order = np.lexsort((wq, kind, unit[first]))
    index = np.stack([first, second], axis=1)[order]
    logical = np.where(index >= 0, pages[np.maximum(index, 0), 1], -1)
    return PagePairPlan(
        pages, indptr, readers, pairs, shared, singles, wq[order], unit[first][order],
        kind[order].astype(np.int64), logical, index, n,
    )


def covered_edges(plan: PagePairPlan) -> np.ndarray:
    """Every (query, logical page) edge the work items cover, one row per covering, [E', 2]."""
    first = np.stack([plan.work_query, plan.work_pages[:, 0]], axis=1)
    two = plan.work_pages[:, 1] >= 0
    second = np.stack([plan.work_query[two], plan.work_pages[two, 1]], axis=1)
    return np.concatenate([first, second])
