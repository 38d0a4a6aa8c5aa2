"""Page bitmaps: one bit per page, 32 pages per uint32 word (docs/definitions.md#regroup-on-a-gpu).

With capacity B = 512 a query's pages fit in 16 words. The greedy cost of a candidate j
against the current union U is ``delta(j) = Σ_w popcount(bits_j[w] & ~U[w])``.
"""

from __future__ import annotations

import numpy as np

from .inputs import PageWeaverInputError, positive_int
from .supports import canonical_rows


def bitmap_words(capacity: int) -> int:
    """Number of uint32 words for a capacity of B pages: ``ceil(B / 32)``."""
    return -(-positive_int(capacity, "capacity B") // 32)


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
    words = bitmap_words(capacity)
    n = rows.shape[0]
    if rows.size and int(rows.max()) >= capacity:
        raise PageWeaverInputError(
            f"page id {int(rows.max())} does not fit a bitmap of capacity B = {capacity}"
        )
    row_idx, col = np.nonzero(rows >= 0)
    ids = rows[row_idx, col]
    flat = row_idx * words + (ids >> 5)
    # Ids are distinct within a row, so adding the bit values equals OR-ing them; float64
    # sums of distinct powers of two below 2**32 are exact.
    values = np.ldexp(1.0, (ids & 31).astype(np.int32))
    summed = np.bincount(flat, weights=values, minlength=n * words)
    return summed.astype(np.uint64).astype(np.uint32).reshape(n, words)


def decode_bitmap(words) -> np.ndarray:
    """Page ids set in one bitmap.

    Parameters
    ----------
    words : array_like of uint32, shape [n_words]

    Returns
    -------
    numpy.ndarray of int64, shape [popcount]
        Ascending page ids.
    """
    arr = np.asarray(words, dtype=np.uint32)
    bits = np.unpackbits(arr.astype("<u4").view(np.uint8), bitorder="little")
    return np.nonzero(bits)[0].astype(np.int64)


def popcount(words: np.ndarray) -> np.ndarray:
    """Set bits per element of an unsigned integer array (same shape, uint8)."""
    return np.bitwise_count(words)


def popcount_delta(bits, union) -> np.ndarray:
    """``Σ_w popcount(bits[..., w] & ~union[..., w])``: pages of ``bits`` new to ``union``.

    Parameters
    ----------
    bits : array_like of uint32, shape [..., n_words]
    union : array_like of uint32, shape [..., n_words] (broadcastable)

    Returns
    -------
    numpy.ndarray of int64, shape [...]

    Examples
    --------
    >>> u, q = encode_bitmaps([[1, 2], [2, 3]], capacity=32)
    >>> int(popcount_delta(q, u))
    1
    """
    b = np.asarray(bits, dtype=np.uint32)
    u = np.asarray(union, dtype=np.uint32)
    return popcount(b & ~u).sum(axis=-1, dtype=np.int64)
