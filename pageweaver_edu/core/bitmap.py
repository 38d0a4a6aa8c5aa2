"""Page bitmaps: one bit per page, 32 pages per uint32 word (docs/definitions.md#regroup-on-a-gpu).

With capacity B = 512 a query's pages fit in 16 words. The greedy cost of a candidate j
against the current union U is ``delta(j) = Σ_w popcount(bits_j[w] & ~U[w])``.
"""

from __future__ import annotations

import numpy as np

from .inputs import PageWeaverInputError, as_capacity, integer_array
from .supports import canonical_rows

MAX_BITMAP_WORDS = 1 << 25  #: uint32 words of the bitmaps built at once (128 MiB)
WORD_MAX = (1 << 32) - 1


def bitmap_words(capacity: int, rows: int = 0) -> int:
    """Number of uint32 words for a capacity of B pages: ``ceil(B / 32)``.

    Parameters
    ----------
    capacity : int
        B, at most :data:`~pageweaver_edu.core.inputs.MAX_CAPACITY`.
    rows : int
        Bitmaps about to be built; ``rows * ceil(B / 32)`` may not exceed
        :data:`MAX_BITMAP_WORDS`.
    """
    words = -(-as_capacity(capacity) // 32)
    if rows * words > MAX_BITMAP_WORDS:
        raise PageWeaverInputError(
            f"bitmaps of {rows:,} queries at capacity B = {capacity} need {rows * words:,} "
            f"words, more than the limit {MAX_BITMAP_WORDS:,}; lower the capacity")
    return words


def as_words(x, name: str) -> np.ndarray:
    """Bitmap words: integers in ``0 .. 2**32 - 1`` as uint32 (no float, no dropped bits)."""
    return integer_array(x, name, 0, WORD_MAX).astype(np.uint32)


def encode_bitmaps(topk, capacity: int = 512) -> np.ndarray:
    """Encode every S_i as a bitmap.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
        Page ids; padding ``< 0`` and duplicates are allowed.
    capacity : int
        B; every valid id must be ``< B`` (the capacity fallback handles larger contexts
        before bitmaps are built).

    Returns
    -------
    numpy.ndarray of uint32, shape [N, ceil(B/32)]
        Bit ``p % 32`` of word ``p // 32`` is set when page p is in S_i.
    """
    return bitmaps_from_canonical(canonical_rows(topk), capacity)


def bitmaps_from_canonical(rows: np.ndarray, capacity: int) -> np.ndarray:
    """:func:`encode_bitmaps` for rows already in canonical form (sorted, distinct, -1 pad).

    Parameters
    ----------
    rows : numpy.ndarray of int64, shape [N, K]
    capacity : int

    Returns
    -------
    numpy.ndarray of uint32, shape [N, ceil(B/32)]
    """
    n = rows.shape[0]
    words = bitmap_words(capacity, n)
    if rows.size and int(rows.max()) >= capacity:
        raise PageWeaverInputError(
            f"page id {int(rows.max())} does not fit a bitmap of capacity B = {capacity}"
        )
    row_idx, col = np.nonzero(rows >= 0)
    ids = rows[row_idx, col]
    bits = np.zeros(n * words, dtype=np.uint32)
    np.bitwise_or.at(bits, row_idx * words + (ids >> 5),
                     np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
    return bits.reshape(n, words)


def decode_bitmap(words) -> np.ndarray:
    """Page ids set in one bitmap.

    Parameters
    ----------
    words : array_like of int, shape [n_words]
        Values in ``0 .. 2**32 - 1``.

    Returns
    -------
    numpy.ndarray of int64, shape [popcount]
        Ascending page ids.
    """
    arr = as_words(words, "words")
    bits = np.unpackbits(arr.astype("<u4").view(np.uint8), bitorder="little")
    return np.nonzero(bits)[0].astype(np.int64)


def popcount(words: np.ndarray) -> np.ndarray:
    """Set bits per element of an unsigned integer array (same shape, uint8)."""
    return np.bitwise_count(words)


def popcount_delta(bits, union) -> np.ndarray:
    """``Σ_w popcount(bits[..., w] & ~union[..., w])``: pages of ``bits`` new to ``union``.

    Parameters
    ----------
    bits : array_like of int, shape [..., n_words]
        uint32 words: integers in ``0 .. 2**32 - 1`` (floats and wider values are refused).
    union : array_like of int, shape [..., n_words] (broadcastable)

    Returns
    -------
    numpy.ndarray of int64, shape [...]

    Examples
    --------
    >>> u, q = encode_bitmaps([[1, 2], [2, 3]], capacity=32)
    >>> int(popcount_delta(q, u))
    1
    """
    b, u = as_words(bits, "bits"), as_words(union, "union")
    return popcount(b & ~u).sum(axis=-1, dtype=np.int64)
