"""Validation of every user-facing input, with errors that name the problem.

All public entry points of the package call these helpers, so a wrong shape, a wrong
dtype, a page id out of range or a window that is not a multiple of the group size fails
the same way everywhere: a :class:`PageWeaverInputError` whose message says what is wrong.
Nothing is silently dropped or clipped.
"""

from __future__ import annotations

import numpy as np

INT32_MAX = np.iinfo(np.int32).max


class PageWeaverInputError(ValueError):
    """An input does not satisfy the rules of docs/definitions.md#inputs."""


def to_numpy(x, name: str) -> np.ndarray:
    """Return ``x`` as a NumPy array, accepting NumPy arrays, torch tensors and sequences.

    Parameters
    ----------
    x : array_like or torch.Tensor
        The value to convert.
    name : str
        Name used in error messages.

    Returns
    -------
    numpy.ndarray
        A host array (torch tensors are moved to the CPU first).
    """
    if x is None:
        raise PageWeaverInputError(f"{name} is required but got None")
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu().numpy()
    try:
        return np.asarray(x)
    except (ValueError, TypeError) as exc:
        raise PageWeaverInputError(f"{name} is not an array: {exc}") from None


def _require_integer(arr: np.ndarray, name: str) -> None:
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise PageWeaverInputError(f"{name} must have an integer dtype, got {arr.dtype}")


def as_topk(topk, num_pages: int | None = None) -> np.ndarray:
    """Validate a Top-K page-id array.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
        Logical page ids per query position; entries ``< 0`` are padding.
    num_pages : int, optional
        If given, every valid id must be ``< num_pages``.

    Returns
    -------
    numpy.ndarray of int64, shape [N, K]
    """
    arr = to_numpy(topk, "topk")
    if arr.ndim != 2:
        raise PageWeaverInputError(
            f"topk must be a 2-D [N, K] array of page ids, got shape {arr.shape}"
        )
    _require_integer(arr, "topk")
    if arr.size and int(arr.max()) > INT32_MAX:
        raise PageWeaverInputError(
            f"topk holds page id {int(arr.max())}, which overflows int32 (max {INT32_MAX})"
        )
    if arr.size and int(arr.min()) < -INT32_MAX:
        raise PageWeaverInputError(f"topk holds {int(arr.min())}, which overflows int32")
    arr = arr.astype(np.int64, copy=False)
    if num_pages is not None and arr.size and int(arr.max()) >= num_pages:
        bad = int(arr.max())
        raise PageWeaverInputError(
            f"topk references page {bad} but only {num_pages} pages exist (ids 0..{num_pages - 1})"
        )
    return arr


def as_request_offsets(offsets, n: int) -> np.ndarray:
    """Validate cu_seqlens-style request offsets.

    Parameters
    ----------
    offsets : array_like of int, shape [R + 1], or None
        ``offsets[r]:offsets[r+1]`` are the query rows of request r. None means one request.
    n : int
        Number of query rows.

    Returns
    -------
    numpy.ndarray of int64, shape [R + 1]
    """
    if offsets is None:
        return np.array([0, n], dtype=np.int64)
    arr = to_numpy(offsets, "request_offsets")
    if arr.ndim != 1 or arr.size < 2:
        raise PageWeaverInputError(
            f"request_offsets must be a 1-D [R+1] array with R >= 1, got shape {arr.shape}"
        )
    _require_integer(arr, "request_offsets")
    arr = arr.astype(np.int64)
    if arr[0] != 0:
        raise PageWeaverInputError(f"request_offsets must start at 0, got {int(arr[0])}")
    if arr[-1] != n:
        raise PageWeaverInputError(
            f"request_offsets must end at N = {n} (the number of queries), got {int(arr[-1])}"
        )
    if np.any(np.diff(arr) < 0):
        raise PageWeaverInputError("request_offsets must be non-decreasing")
    return arr


def as_positions(values, n: int, name: str) -> np.ndarray | None:
    """Validate an optional per-query integer vector (``lengths`` or ``causal_pos``).

    Parameters
    ----------
    values : array_like of int, shape [N], or None
    n : int
        N, the number of queries.
    name : str
        The argument's name, for the error message.

    Returns
    -------
    numpy.ndarray of int64, shape [N], or None when ``values`` is None.
    """
    if values is None:
        return None
    arr = to_numpy(values, name)
    if arr.shape != (n,):
        raise PageWeaverInputError(f"{name} must have shape [N] = ({n},), got {arr.shape}")
    _require_integer(arr, name)
    arr = arr.astype(np.int64)
    if n and int(arr.min()) < 0:
        raise PageWeaverInputError(f"{name} must be >= 0, found {int(arr.min())}")
    return arr


def positive_int(value, name: str) -> int:
    """Return ``value`` as a positive Python int or raise :class:`PageWeaverInputError`.

    Parameters
    ----------
    value : int or numpy.integer
        ``bool`` is refused.
    name : str
        The argument's name, for the error message.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise PageWeaverInputError(f"{name} must be a positive integer, got {value!r}")
    if value <= 0:
        raise PageWeaverInputError(f"{name} must be a positive integer, got {value}")
    return int(value)


def as_permutation(perm, request_offsets: np.ndarray) -> np.ndarray:
    """Validate π: a bijection inside every request.

    Parameters
    ----------
    perm : array_like of int, shape [N]
        Execution slot r runs original query ``perm[r]``.
    request_offsets : numpy.ndarray of int64, shape [R + 1]

    Returns
    -------
    numpy.ndarray of int64, shape [N]
    """
    n = int(request_offsets[-1])
    arr = to_numpy(perm, "perm")
    if arr.shape != (n,):
        raise PageWeaverInputError(f"perm must have shape [N] = ({n},), got {arr.shape}")
    _require_integer(arr, "perm")
    arr = arr.astype(np.int64)
    request_of_slot = np.repeat(np.arange(len(request_offsets) - 1), np.diff(request_offsets))
    if n and (arr.min() < 0 or arr.max() >= n):
        raise PageWeaverInputError(f"perm holds ids outside 0..{n - 1}")
    if np.any(np.bincount(arr, minlength=n) != 1):
        raise PageWeaverInputError("perm is not a permutation: some ids repeat or are missing")
    if np.any(request_of_slot[arr] != request_of_slot):
        raise PageWeaverInputError("perm moves a query into another request's slots")
    return arr
