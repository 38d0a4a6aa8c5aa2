"""Support sets S_i and token supports A_i (docs/definitions.md#supports).

A query position i selects Top-K logical page ids. Entries ``< 0`` are padding, duplicates
count once, and a row with no valid entry is an empty support. The tokens query i attends
to are ``A_i = {t : floor(t/P) ∈ S_i, 0 ≤ t < L_i, t ≤ c_i}``.
"""

from __future__ import annotations

import numpy as np

from .inputs import (
    INT32_MAX,
    INT32_MIN,
    PageWeaverInputError,
    as_int,
    as_topk,
    check_elements,
    integer_array,
    positive_int,
)


def canonical_rows(topk) -> np.ndarray:
    """Sort each row and replace padding and repeated ids by -1.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]

    Returns
    -------
    numpy.ndarray of int64, shape [N, K]
        Row i holds the distinct valid ids of S_i in ascending order, followed by -1.
    """
    arr = np.sort(as_topk(topk), axis=1)
    if arr.shape[1] > 1:
        repeated = np.zeros_like(arr, dtype=bool)
        repeated[:, 1:] = arr[:, 1:] == arr[:, :-1]
        arr[repeated] = -1
    arr[arr < 0] = -1
    # Move the -1 entries to the end of each row while keeping ids ascending.
    key = np.where(arr < 0, np.iinfo(np.int64).max, arr)
    return np.take_along_axis(arr, np.argsort(key, axis=1, kind="stable"), axis=1)


def support_sets(topk) -> list[frozenset[int]]:
    """S_i for every row, as frozensets of Python ints.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]

    Returns
    -------
    list of frozenset of int, length N
    """
    rows = canonical_rows(topk)
    return [frozenset(int(p) for p in row if p >= 0) for row in rows]


def support_sizes(topk) -> np.ndarray:
    """|S_i| for every row.

    Returns
    -------
    numpy.ndarray of int64, shape [N]
    """
    return (canonical_rows(topk) >= 0).sum(axis=1).astype(np.int64)


def edge_count(topk) -> int:
    """Number of selected (query, page) edges Σ_i |S_i| — unchanged by any regrouping."""
    return int(support_sizes(topk).sum())


def token_support(
    pages, page_size: int, length: int | None = None, causal_pos: int | None = None
) -> np.ndarray:
    """The token set A_i of one query (eq. 1).

    Parameters
    ----------
    pages : iterable of int
        The query's Top-K entries (padding ``< 0`` and duplicates allowed; int32 range).
    page_size : int
        Tokens per page, P.
    length : int, optional
        Valid context length L_i (tokens ``t < L_i``); unlimited when None.
    causal_pos : int, optional
        Causal position c_i (tokens ``t ≤ c_i``); unlimited when None.

    Returns
    -------
    numpy.ndarray of int64, shape [|A_i|]
        Ascending token ids.

    Examples
    --------
    >>> token_support([0, 2], page_size=4, length=11, causal_pos=9).tolist()
    [0, 1, 2, 3, 8, 9]
    """
    page_size = positive_int(page_size, "page_size P")
    ids = integer_array(pages if hasattr(pages, "shape") else list(pages), "pages",
                        INT32_MIN, INT32_MAX)
    if ids.ndim != 1:
        raise PageWeaverInputError(f"pages must be a flat list of page ids, got {ids.shape}")
    ids = np.unique(ids[ids >= 0])
    check_elements((len(ids), page_size), "the token support |S_i|·P")
    tokens = (ids[:, None] * page_size + np.arange(page_size)[None, :]).ravel()
    if length is not None:
        tokens = tokens[tokens < as_int(length, "length L_i")]
    if causal_pos is not None:
        tokens = tokens[tokens <= as_int(causal_pos, "causal position c_i")]
    return tokens
