"""Request, chunk, window and group boundaries, and the capacity fallback.

Regrouping is request-local and chunk-local: each (request, chunk) span of query rows is
cut into consecutive windows of W rows (the last one may be short). A span whose context
needs more than B pages keeps the identity order. Downstream, groups are request-local
blocks of g consecutive execution slots. Definitions: docs/definitions.md#windows-and-chunks,
docs/definitions.md#capacity-fallback and docs/definitions.md#group-table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .grouping import Grouping
from .inputs import as_capacity, as_positions, as_request_offsets, positive_int
from .supports import canonical_rows


def chunk_table(request_offsets: np.ndarray, chunk_size: int | None) -> np.ndarray:
    """Spans of query rows for every (request, chunk).

    Parameters
    ----------
    request_offsets : numpy.ndarray of int64, shape [R + 1]
        Validated request offsets (see :func:`pageweaver_edu.core.inputs.as_request_offsets`).
    chunk_size : int or None
        Prefill chunk size; None means one chunk per request.

    Returns
    -------
    numpy.ndarray of int64, shape [C, 2]
        ``[start, end)`` row ranges in order; empty requests contribute no chunk.
    """
    spans = np.stack([request_offsets[:-1], request_offsets[1:]], axis=1).astype(np.int64)
    if chunk_size is None:
        return spans[spans[:, 1] > spans[:, 0]].reshape(-1, 2)
    return split_spans(spans, chunk_size)


def span_pieces(spans: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`split_spans` and, for every piece, the index of the span it comes from.

    Returns
    -------
    pieces : numpy.ndarray of int64, shape [M, 2]
    owner : numpy.ndarray of int64, shape [M]
    """
    width = positive_int(width, "width")
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    starts, ends = spans[:, 0], spans[:, 1]
    counts = np.maximum(-(-(ends - starts) // width), 0)  # an empty span has no piece
    owner = np.repeat(np.arange(len(spans)), counts)
    first = np.cumsum(counts) - counts
    within = np.arange(int(counts.sum())) - np.repeat(first, counts)
    piece_starts = starts[owner] + within * width
    pieces = np.stack([piece_starts, np.minimum(piece_starts + width, ends[owner])], axis=1)
    return pieces.reshape(-1, 2), owner


def split_spans(spans: np.ndarray, width: int) -> np.ndarray:
    """Cut every ``[start, end)`` span into consecutive pieces of ``width`` rows.

    Parameters
    ----------
    spans : numpy.ndarray of int64, shape [S, 2]
    width : int

    Returns
    -------
    numpy.ndarray of int64, shape [M, 2]
        The pieces in order; the last piece of a span may be short.
    """
    return span_pieces(spans, width)[0]


def span_max(values: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """The largest of ``values[start:end]`` for every non-empty ``[start, end)`` span.

    Parameters
    ----------
    values : numpy.ndarray of int64, shape [N]
    spans : numpy.ndarray of int64, shape [S, 2]
        Non-empty spans inside ``0 .. N``.

    Returns
    -------
    numpy.ndarray of int64, shape [S]
    """
    if len(spans) == 0:
        return np.zeros(0, dtype=np.int64)
    padded = np.append(values, values.min(initial=0))  # ``end`` may be N: one more entry
    # reduceat over [s0, e0, s1, e1, ...]: the even entries are the spans, the odd ones the
    # gaps between them (ignored)
    return np.maximum.reduceat(padded, spans.reshape(-1))[::2]


def fallback_chunks(
    canonical: np.ndarray,
    chunks: np.ndarray,
    capacity: int,
    lengths: np.ndarray | None = None,
    page_size: int = 128,
) -> np.ndarray:
    """Which chunks keep the identity order because their context exceeds B pages.

    A chunk falls back when the largest valid page id it references is ``>= capacity``,
    or, when lengths are given, when ``ceil(max L_i / P) > capacity``.

    Parameters
    ----------
    canonical : numpy.ndarray of int64, shape [N, K]
        Rows from :func:`pageweaver_edu.core.supports.canonical_rows` (padding = -1).
    chunks : numpy.ndarray of int64, shape [C, 2]
    capacity : int
        Bitmap capacity B in pages.
    lengths : numpy.ndarray of int64, shape [N], optional
    page_size : int
        P, tokens per page.

    Returns
    -------
    numpy.ndarray of bool, shape [C]
    """
    capacity = as_capacity(capacity)
    out = np.zeros(len(chunks), dtype=bool)
    real = chunks[:, 1] > chunks[:, 0]
    needs_pages = span_max(canonical.max(axis=1, initial=-1), chunks[real]) + 1
    if lengths is not None:
        by_length = -(-span_max(lengths, chunks[real]) // page_size)
        needs_pages = np.maximum(needs_pages, by_length)
    out[real] = needs_pages > capacity
    return out


def group_table(request_offsets: np.ndarray, group: int) -> np.ndarray:
    """Groups as request-local blocks of g consecutive execution slots.

    Parameters
    ----------
    request_offsets : numpy.ndarray of int64, shape [R + 1]
    group : int
        g, query positions per group.

    Returns
    -------
    numpy.ndarray of int64, shape [G, 2]
        ``(first slot, number of slots)`` per group; a request's last group may be short.

    Examples
    --------
    >>> group_table(np.array([0, 10, 13]), 4).tolist()
    [[0, 4], [4, 4], [8, 2], [10, 3]]
    """
    spans = np.stack([request_offsets[:-1], request_offsets[1:]], axis=1)
    blocks = split_spans(spans, group)
    return np.stack([blocks[:, 0], blocks[:, 1] - blocks[:, 0]], axis=1)


@dataclass(frozen=True)
class WindowTable:
    """The validated rows of a Top-K array cut into request-, chunk-local windows.

    Everything a regroup needs; built by :func:`window_table`, which validates the inputs once.

    Attributes
    ----------
    canonical : numpy.ndarray of int64, shape [N, K]
        Sorted distinct valid ids per row, padded with -1.
    request_offsets : numpy.ndarray of int64, shape [R + 1]
    chunks : numpy.ndarray of int64, shape [C, 2]
        ``[start, end)`` rows of every (request, chunk).
    chunk_fallback : numpy.ndarray of bool, shape [C]
        True where the chunk's context needs more than B pages: it keeps the identity order.
    windows : numpy.ndarray of int64, shape [M, 2]
        ``[start, end)`` rows of every window, in order; none crosses a chunk.
    fallback : numpy.ndarray of bool, shape [M]
        True where the window lies in a chunk under the capacity fallback.
    grouping : Grouping
    """

    canonical: np.ndarray
    request_offsets: np.ndarray
    chunks: np.ndarray
    chunk_fallback: np.ndarray
    windows: np.ndarray
    fallback: np.ndarray
    grouping: Grouping

    @property
    def group(self) -> int:
        """g."""
        return self.grouping.group

    @property
    def regrouped_chunks(self) -> np.ndarray:
        """``[start, end)`` of the chunks that are regrouped, shape [C', 2]."""
        return self.chunks[~self.chunk_fallback]

    @property
    def regrouped_windows(self) -> np.ndarray:
        """``[start, end)`` of the windows that are regrouped, shape [M', 2]."""
        return self.windows[~self.fallback]

    def for_window(self, window: int) -> WindowTable:
        """The same rows and chunks cut into windows of another W (no input is read again)."""
        return _cut(self.canonical, self.request_offsets, self.chunks, self.chunk_fallback,
                    self.grouping.with_window(window))

    def permutation(self, order) -> np.ndarray:
        """π built window by window; windows under the capacity fallback keep the identity.

        Parameters
        ----------
        order : callable ``(index, start, end) -> sequence of int``
            The original ids of window ``index`` (rows ``start .. end-1``) in slot order.

        Returns
        -------
        numpy.ndarray of int32, shape [N]
        """
        perm = np.arange(self.canonical.shape[0], dtype=np.int32)
        for index, ((start, end), fallback) in enumerate(
                zip(self.windows, self.fallback, strict=True)):
            if not fallback:
                perm[start:end] = order(index, int(start), int(end))
        return perm


def _cut(canonical, request_offsets, chunks, chunk_fallback, grouping: Grouping) -> WindowTable:
    windows, owner = span_pieces(chunks, grouping.window)
    fallback = np.asarray(chunk_fallback, dtype=bool)[owner]
    return WindowTable(canonical, request_offsets, chunks, chunk_fallback, windows, fallback,
                       grouping)


def window_table(topk, grouping: Grouping, *, request_offsets=None, lengths=None,
                 page_size: int = 128) -> WindowTable:
    """Validate the regroup inputs and cut them into windows.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
        Top-K page ids; ``< 0`` is padding, duplicates count once.
    grouping : Grouping
        W, g, B and the chunk size.
    request_offsets : array_like of int, shape [R + 1], optional
        Packed requests (cu_seqlens style); one request when None.
    lengths : array_like of int, shape [N], optional
        L_i, used by the capacity fallback.
    page_size : int
        P, tokens per page.

    Returns
    -------
    WindowTable
    """
    grouping = Grouping.check(grouping)
    page_size = positive_int(page_size, "page_size P")
    canonical = canonical_rows(topk)
    n = canonical.shape[0]
    offsets = as_request_offsets(request_offsets, n)
    chunks = chunk_table(offsets, grouping.chunk_size)
    fallback = fallback_chunks(canonical, chunks, grouping.capacity,
                               as_positions(lengths, n, "lengths"), page_size)
    return _cut(canonical, offsets, chunks, fallback, grouping)
