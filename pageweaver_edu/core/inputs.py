"""Validation of every user-facing input, with errors that name the problem.

All public entry points of the package call these helpers, so a wrong shape, a wrong
dtype, a page id out of range or a window that is not a multiple of the group size fails
the same way everywhere: a :class:`PageWeaverInputError` whose message says what is wrong.
Nothing is silently dropped, clipped or converted: integers must be integers (no float, bool,
string, timedelta or datetime), and sizes are checked against the limits below before
anything sized by them is allocated.
"""

from __future__ import annotations

import math

import numpy as np

INT32_MIN, INT32_MAX = int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max)
INT64_MIN, INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)
# Limits for 30 s and 2 GiB on two cores: canonical rows need ~6 int64 copies of an array.
MAX_QUERIES = 1 << 22  #: N, query rows of a Top-K array
MAX_REQUESTS = MAX_QUERIES  #: R, requests (empty ones included)
MAX_TOPK = 1 << 12  #: K, entries per row
MAX_TOPK_ELEMENTS = 1 << 24  #: N·K of a Top-K array
MAX_ELEMENTS = 1 << 27  #: elements of any other array argument (q, k, v, ...)
MAX_CAPACITY = 1 << 20  #: B, bitmap capacity in pages (the bitmaps have their own limit)


class PageWeaverInputError(ValueError):
    """An input does not satisfy the rules of docs/definitions.md#inputs."""


def check_elements(shape, name: str, limit: int = MAX_ELEMENTS) -> None:
    """Refuse a (declared) shape with more than ``limit`` elements, before it is allocated."""
    count = math.prod(int(d) for d in shape)
    if count > limit:
        raise PageWeaverInputError(
            f"{name} has shape {tuple(shape)} = {count:,} elements, more than the limit {limit:,}")


def nested_shape(x) -> tuple[int, ...]:
    """The shape a nested list declares, read along first elements (``[[0] * 4096] * 4096``
    holds one list 4096 times: counting is free, converting is not)."""
    shape = []
    while isinstance(x, (list, tuple)) and len(shape) < 64:
        shape.append(len(x))
        x = x[0] if x else None
    return tuple(shape)


def check_tensor(x, name: str) -> None:
    """A dense, strided ``Tensor`` or ``Parameter`` with data, NumPy can take as it is (meta,
    nested, sparse, quantized, subclassed, negative- or conjugate-bit tensors are refused)."""
    kind = type(x).__name__
    for bad, what in ((kind not in ("Tensor", "Parameter"), f"a {kind} (a tensor subclass)"),
                      (getattr(x, "is_nested", False), "a nested tensor"),
                      (str(x.layout) != "torch.strided", f"a {x.layout} tensor"),
                      (x.is_quantized, "a quantized tensor"), (x.is_meta, "a meta tensor"),
                      (x.is_neg(), "a tensor with the negative bit set"),
                      (x.is_conj(), "a tensor with the conjugate bit set")):
        if bad:
            raise PageWeaverInputError(f"{name} is {what}; pass a dense tensor")
    check_elements(x.shape, name)


def to_numpy(x, name: str) -> np.ndarray:
    """Return ``x`` as a NumPy array, accepting NumPy arrays, torch tensors and sequences.

    Parameters
    ----------
    x : array_like or torch.Tensor
        The value to convert; a torch tensor must be dense, not quantized, and of a dtype
        NumPy has (bfloat16 and the float8 types are refused, not converted).
    name : str
        Name used in error messages.

    Returns
    -------
    numpy.ndarray
        A host array (torch tensors are moved to the CPU first) of at most
        :data:`MAX_ELEMENTS` elements.
    """
    if x is None:
        raise PageWeaverInputError(f"{name} is required but got None")
    if hasattr(x, "detach") and hasattr(x, "layout"):
        check_tensor(x, name)
        try:
            x = x.detach().cpu().numpy()
        except TypeError:
            raise PageWeaverInputError(
                f"{name} has dtype {x.dtype}, which NumPy cannot hold; pass an integer "
                "or float32/float64 tensor") from None
    check_elements(nested_shape(x), name)
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError, OverflowError) as exc:
        raise PageWeaverInputError(f"{name} is not an array: {exc}") from None
    check_elements(arr.shape, name)
    return arr


def integer_array(x, name: str, low: int = INT64_MIN, high: int = INT64_MAX) -> np.ndarray:
    """``x`` as int64 after checking that it holds integers in ``low .. high``.

    Parameters
    ----------
    x : array_like of int or torch.Tensor
        Signed or unsigned integers; bool, float, complex, string, object, timedelta and
        datetime arrays are refused.
    name : str
        Name used in error messages.
    low, high : int
        Smallest and largest accepted value.

    Returns
    -------
    numpy.ndarray of int64, the shape of ``x``
    """
    arr = to_numpy(x, name)
    if arr.size == 0 and not hasattr(x, "dtype"):
        arr = arr.astype(np.int64)  # ``[]`` has no values, NumPy just types it float64
    if arr.dtype.kind not in "iu":
        raise PageWeaverInputError(f"{name} must have an integer dtype, got {arr.dtype}")
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < low or hi > high:
            bad = lo if lo < low else hi
            wanted = f"below {low}" if high == INT64_MAX else f"outside {low}..{high}"
            raise PageWeaverInputError(f"{name} holds {bad}, {wanted}")
    return arr.astype(np.int64, copy=False)


def as_int(value, name: str, minimum: int = 0, maximum: int = INT64_MAX) -> int:
    """``value`` as a Python int after checking that it is one, in ``minimum .. maximum``.

    Parameters
    ----------
    value : int, numpy.integer, or 0-d integer array / tensor (a scalar read from a file)
        bool, float, complex, str, timedelta, None and arrays with elements are refused.
    name : str
        Name used in error messages.
    minimum, maximum : int
        Accepted range.
    """
    if hasattr(value, "shape") and not isinstance(value, np.generic):
        arr = to_numpy(value, name)
        if arr.shape != ():
            raise PageWeaverInputError(
                f"{name} must be a single integer, got an array of shape {arr.shape}")
        value = arr[()]
    wanted = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    if (isinstance(value, (bool, np.bool_, np.timedelta64))
            or not isinstance(value, (int, np.integer)) or value < minimum):
        raise PageWeaverInputError(f"{name} must be {wanted}, got {value!r}")
    if value > maximum:
        raise PageWeaverInputError(f"{name} must be at most {maximum:,}, got {int(value):,}")
    return int(value)


def positive_int(value, name: str) -> int:
    """Return ``value`` as a positive Python int or raise (see :func:`as_int`)."""
    return as_int(value, name, minimum=1)


def as_capacity(value) -> int:
    """B, a positive int of at most :data:`MAX_CAPACITY` pages."""
    return as_int(value, "capacity B", minimum=1, maximum=MAX_CAPACITY)


def finite_float(value, name: str) -> float:
    """``value`` as a Python float; a real, finite number (bool, str and complex refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)) or not math.isfinite(value):
        raise PageWeaverInputError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


def check_topk_shape(shape) -> None:
    """A Top-K array is ``[N, K]`` with N <= :data:`MAX_QUERIES`, K <= :data:`MAX_TOPK`."""
    if len(shape) != 2:
        raise PageWeaverInputError(
            f"topk must be a 2-D [N, K] array of page ids, got shape {tuple(shape)}")
    for what, size, limit in (("N", shape[0], MAX_QUERIES), ("K", shape[1], MAX_TOPK)):
        if size > limit:
            raise PageWeaverInputError(f"topk has {what} = {size:,}, more than the limit {limit:,}")
    check_elements(shape, "topk", MAX_TOPK_ELEMENTS)


def as_topk(topk, num_pages: int | None = None) -> np.ndarray:
    """Validate a Top-K page-id array.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
        Logical page ids per query position; entries ``< 0`` are padding (down to int32's
        -2**31); valid ids are at most int32's 2**31 - 1.
    num_pages : int, optional
        If given, every valid id must be ``< num_pages``.

    Returns
    -------
    numpy.ndarray of int64, shape [N, K]
    """
    arr = to_numpy(topk, "topk")
    check_topk_shape(arr.shape)
    arr = integer_array(arr, "topk", INT32_MIN, INT32_MAX)
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
    arr = integer_array(offsets, "request_offsets")
    if arr.ndim != 1 or not 2 <= arr.size <= MAX_REQUESTS + 1:
        raise PageWeaverInputError(
            f"request_offsets must be a 1-D [R+1] array with 1 <= R <= {MAX_REQUESTS:,}, "
            f"got shape {arr.shape}")
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
    arr = integer_array(values, name, low=0)
    if arr.shape != (n,):
        raise PageWeaverInputError(f"{name} must have shape [N] = ({n},), got {arr.shape}")
    return arr


def as_query_ids(ids, n: int, name: str) -> np.ndarray:
    """A 1-D array of original query ids, each in ``0 .. n - 1`` (no wrap-around)."""
    arr = integer_array(ids, name, low=0, high=n - 1)
    if arr.ndim != 1:
        raise PageWeaverInputError(f"{name} must be a 1-D list of query ids, got {arr.shape}")
    return arr


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
    arr = as_query_ids(perm, n, "perm")
    if arr.shape != (n,):
        raise PageWeaverInputError(f"perm must have shape [N] = ({n},), got {arr.shape}")
    request_of_slot = np.repeat(np.arange(len(request_offsets) - 1), np.diff(request_offsets))
    if np.any(np.bincount(arr, minlength=n) != 1):
        raise PageWeaverInputError("perm is not a permutation: some ids repeat or are missing")
    if np.any(request_of_slot[arr] != request_of_slot):
        raise PageWeaverInputError("perm moves a query into another request's slots")
    return arr
