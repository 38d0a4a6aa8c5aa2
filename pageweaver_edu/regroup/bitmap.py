"""Greedy regroup on bitmaps, all windows advanced together (docs/definitions.md#greedy-regroup).

Same result as :func:`.sets.greedy_regroup_sets` on every input, but
vectorized: round r picks the r-th query of every window at once. Each candidate keeps its
cost ``delta_j = |S_j \\ U|``; a seed resets it to ``popcount(bits_j & ~S_seed)`` and a pick
that adds the pages ``N`` to U lowers it by ``popcount(bits_j & N)`` — the same quantity the
GPU form computes from scratch, maintained incrementally. At every seed the assigned
candidates are dropped from the working arrays, so a window's work shrinks as it fills.
"""

from __future__ import annotations

import numpy as np

from ..core.bitmap import bitmap_words, bitmaps_from_canonical
from ..core.budget import check_regroup_work
from ..core.grouping import Grouping
from ..core.windows import WindowTable, window_table


def _window_orders(bits: np.ndarray, starts: np.ndarray, lengths: np.ndarray, group: int):
    """Greedy order of every window at once.

    Parameters
    ----------
    bits : numpy.ndarray of uint32 or uint64, shape [N, n_words]
    starts, lengths : numpy.ndarray of int64, shape [M]
        First row and row count of each window.
    group : int

    Returns
    -------
    numpy.ndarray of int64, shape [M, max(lengths)]
        Local indices in execution order; entries past a window's length are meaningless.
    """
    m, width = len(starts), int(lengths.max())
    local = np.arange(width)
    avail = local[None, :] < lengths[:, None]  # R: candidates not yet assigned
    cols = np.where(avail, local[None, :], 0)  # column c holds the window's query cols[:, c]
    # Lane-major layout [lanes, M, width]: the popcount sums run over the leading axis,
    # which NumPy adds as whole contiguous planes.
    rows = starts[:, None] + cols
    wbits = np.where(avail[None, :, :], bits[rows].transpose(2, 0, 1), 0).astype(bits.dtype)
    order = np.zeros((m, width), dtype=np.int64)
    # delta_j = |S_j \ U| for candidates in R; assigned (or absent) candidates hold `big`,
    # which stays far above any real cost after the at most width * K subtractions.
    big = np.int32(1 << 30)
    all_w = np.arange(m)
    next_cut = max(group, 16)
    for r in range(width):
        if r % group == 0:  # seed = min(R); the union resets to S_seed
            if r >= next_cut:  # drop assigned columns (a stable sort keeps ids ascending)
                next_cut = r + max(group, 16)  # at most every 16 rounds: sorting costs too
                keep = np.argsort(~avail, axis=1, kind="stable")[:, : width - r]
                cols, avail = np.take_along_axis(cols, keep, 1), np.take_along_axis(avail, keep, 1)
                wbits = np.take_along_axis(wbits, keep[None], 2)
            choice = avail.argmax(axis=1)
            union = wbits[:, all_w, choice]
            counts = np.bitwise_count(wbits & ~union[:, :, None])
            delta = np.where(avail, counts.sum(axis=0, dtype=np.int32), big)
        else:  # j* = argmin (delta_j, j); argmin returns the first, i.e. smallest, index
            choice = delta.argmin(axis=1)
            new = wbits[:, all_w, choice] & ~union
            union |= new
            delta -= np.bitwise_count(wbits & new[:, :, None]).sum(axis=0, dtype=np.int32)
        # Past a window's length every entry is `big`: the pick is ignored by the caller.
        order[:, r] = cols[all_w, choice]
        avail[all_w, choice] = False
        delta[all_w, choice] = big
    return order


def window_bitmaps(rows: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """Bitmaps of the rows inside the ``[start, end)`` spans (zero elsewhere), for
    :func:`fill_windows`; built once, they serve every window table inside those spans.

    The rows must already pass the capacity fallback (every page id < B). The bitmaps are only
    as wide as the largest page id present needs, in uint64 lanes (two uint32 words each):
    the same popcounts as B bits, with fewer operations.

    Parameters
    ----------
    rows : numpy.ndarray of int64, shape [N, K]
        Canonical rows (sorted distinct ids, -1 padding).
    spans : numpy.ndarray of int64, shape [S, 2]
        ``[start, end)`` row ranges to encode.

    Returns
    -------
    numpy.ndarray of uint64, shape [N, lanes]
    """
    n = rows.shape[0]
    edges = np.zeros(n + 1, dtype=np.int64)
    np.add.at(edges, spans[:, 0], 1)
    np.add.at(edges, spans[:, 1], -1)
    inside = np.cumsum(edges[:-1]) > 0
    words = 2 * -(-bitmap_words(int(rows[inside].max(initial=0)) + 1, n) // 2)
    bits = np.zeros((n, words), dtype=np.uint32)
    bits[inside] = bitmaps_from_canonical(rows[inside], 32 * words)
    return bits.view(np.uint64)


def fill_windows(perm: np.ndarray, bits: np.ndarray, todo: np.ndarray, group: int) -> np.ndarray:
    """Write the greedy order of every ``[start, end)`` window of ``todo`` into ``perm``.

    Parameters
    ----------
    perm : numpy.ndarray of int32, shape [N]
        Updated in place (rows outside ``todo`` keep their entry).
    bits : numpy.ndarray of uint64, shape [N, lanes]
        :func:`window_bitmaps` over spans covering ``todo``.
    todo : numpy.ndarray of int64, shape [M, 2]
        ``[start, end)`` of the windows to regroup.
    group : int
        g.

    Returns
    -------
    numpy.ndarray of int32, shape [N]
        ``perm``.
    """
    if len(todo) == 0:
        return perm
    starts, lens = todo[:, 0], todo[:, 1] - todo[:, 0]
    order = _window_orders(bits, starts, lens, group)
    local = np.arange(order.shape[1])
    keep = local[None, :] < lens[:, None]
    perm[(starts[:, None] + local[None, :])[keep]] = (starts[:, None] + order)[keep]
    return perm


def greedy_regroup(topk, grouping: Grouping, *, request_offsets=None, lengths=None,
                   page_size: int = 128) -> np.ndarray:
    """Greedy regroup (Algorithm 1) with bitmaps and popcounts.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
        Top-K page ids; ``< 0`` is padding, duplicates count once.
    grouping : Grouping
        W, g, B (larger contexts keep the identity order per chunk) and the chunk size.
    request_offsets : array_like of int, shape [R + 1], optional
    lengths : array_like of int, shape [N], optional
        L_i, for the capacity fallback.
    page_size : int
        P.

    Returns
    -------
    numpy.ndarray of int32, shape [N]
        π: execution slot r runs original query ``perm[r]``.
    """
    return regroup_table(window_table(topk, grouping, request_offsets=request_offsets,
                                      lengths=lengths, page_size=page_size))


def regroup_table(table: WindowTable, bits: np.ndarray | None = None) -> np.ndarray:
    """π of an already validated :class:`~pageweaver_edu.core.windows.WindowTable`.

    Parameters
    ----------
    table : WindowTable
    bits : numpy.ndarray of uint64, shape [N, lanes], optional
        :func:`window_bitmaps` of ``table.canonical`` over ``table.regrouped_chunks``; pass it
        to reuse one encoding for the tables of several W (:meth:`WindowTable.for_window`).

    Returns
    -------
    numpy.ndarray of int32, shape [N]
    """
    perm = np.arange(table.canonical.shape[0], dtype=np.int32)
    todo = table.regrouped_windows
    if len(todo) == 0:
        return perm
    check_regroup_work(table, [table.grouping.window])
    if bits is None:
        bits = window_bitmaps(table.canonical, todo)
    return fill_windows(perm, bits, todo, table.group)
