"""Host-side tables for the GPU kernels: windows, chunks and groups (no GPU needed).

They depend only on N, the request offsets, the chunk size, W and g — never on the page
ids — so they are built once with the CPU reference's own boundary code
(:mod:`pageweaver_edu.core.windows`) and uploaded once; a launch then needs no host work on data.
"""

from __future__ import annotations

import numpy as np

from ..core.grouping import Grouping
from ..core.inputs import PageWeaverInputError, as_request_offsets, positive_int
from ..core.windows import chunk_table, group_table, split_spans

#: Largest window one CTA holds: ids are packed into 8 bits of the (delta, id) key.
MAX_WINDOW = 256
#: Largest bitmap capacity: 16 uint32 words per query.
MAX_CAPACITY = 512


def regroup_tables(n: int, grouping: Grouping,
                   request_offsets=None) -> tuple[np.ndarray, np.ndarray]:
    """Window and chunk tables of one KV head.

    Parameters
    ----------
    n : int
        N, query rows.
    grouping : Grouping
        W (at most :data:`MAX_WINDOW`), g and the chunk size.
    request_offsets : array_like of int, shape [R + 1], optional

    Returns
    -------
    windows : numpy.ndarray of int32, shape [M, 4]
        ``(first row, rows, chunk index, first group)`` per window, request- and chunk-local;
        the first group is the index, in :func:`union_group_table`'s order, of the group that
        starts at the window's first row (the fused plan's rows; W and the chunk size are
        multiples of g, so a group starts there).
    chunks : numpy.ndarray of int32, shape [C, 4]
        ``(first row, rows, number of windows, first group)`` per (request, chunk).
    """
    window = grouping.window
    if window > MAX_WINDOW:
        raise PageWeaverInputError(
            f"the GPU regroup holds windows of at most {MAX_WINDOW} queries, got W = {window}"
        )
    offsets = as_request_offsets(request_offsets, n)
    spans = chunk_table(offsets, grouping.chunk_size)
    first_rows = group_table(offsets, grouping.group)[:, 0]

    def first_group(row: int) -> int:
        return int(np.searchsorted(first_rows, row))

    wins, chunks = [], []
    for c, span in enumerate(spans):
        cut = split_spans(span[None, :], window)
        chunks.append((span[0], span[1] - span[0], len(cut), first_group(span[0])))
        wins.extend((s, e - s, c, first_group(s)) for s, e in cut)
    w = np.array(wins, dtype=np.int64).reshape(-1, 4)
    ch = np.array(chunks, dtype=np.int64).reshape(-1, 4)
    if n >= 2**31:
        raise PageWeaverInputError(f"N = {n} rows do not fit int32 indices")
    return w.astype(np.int32), ch.astype(np.int32)


def union_group_table(n: int, heads: int, request_offsets=None, group: int = 8) -> np.ndarray:
    """Group table of ``heads`` KV heads of N rows each, for the union kernels.

    Parameters
    ----------
    n, heads : int
        N rows per KV head, H KV heads.
    request_offsets : array_like of int, shape [R + 1], optional
        Groups never cross a request.
    group : int
        g, at most 8 (one membership byte per page).

    Returns
    -------
    numpy.ndarray of int32, shape [heads * G, 4]
        ``(first slot in the [heads * N] π array, slots, head row base h * N, 0)``.
    """
    group = positive_int(group, "group size g")
    if group > 8:
        raise PageWeaverInputError(f"membership bytes hold at most 8 slots, got g = {group}")
    offsets = as_request_offsets(request_offsets, n)
    groups = group_table(offsets, group)  # [G, 2] head-local (first slot, size)
    g = len(groups)
    out = np.zeros((heads * g, 4), dtype=np.int64)
    for h in range(heads):
        out[h * g : (h + 1) * g, 0] = groups[:, 0] + h * n
        out[h * g : (h + 1) * g, 1] = groups[:, 1]
        out[h * g : (h + 1) * g, 2] = h * n
    if heads * n >= 2**31:
        raise PageWeaverInputError(f"{heads} x {n} rows do not fit int32 indices")
    return out.astype(np.int32)
