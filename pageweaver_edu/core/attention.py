"""Float64 reference sparse attention over selected KV pages (docs/definitions.md#supports).

Query i attends to the tokens ``A_i = {t : floor(t/P) ∈ S_i, t < L_i, t ≤ c_i}`` of its
request's paged K/V; every one of its Q heads does its own softmax over those tokens, and an
empty ``A_i`` gives a zero output. This is the ground truth every kernel is checked against.
"""

from __future__ import annotations

import numpy as np

from .inputs import (
    PageWeaverInputError,
    as_positions,
    as_request_offsets,
    check_elements,
    finite_float,
    integer_array,
    to_numpy,
)
from .supports import canonical_rows

_CHUNK_ELEMENTS = 1 << 24  # gathered K elements per block of queries (128 MiB of float64)


def as_float_array(x, name: str, ndim: int) -> np.ndarray:
    """``x`` as a finite float64 array of ``ndim`` dimensions (torch tensors included).

    Parameters
    ----------
    x : array_like of float or torch.Tensor
    name : str
        The argument's name, for the error message.
    ndim : int
        Required number of dimensions.

    Returns
    -------
    numpy.ndarray of float64, shape ``x.shape``
    """
    if hasattr(x, "is_floating_point") and x.is_floating_point():
        check_elements(x.shape, name)
        x = x.double()  # NumPy has no bfloat16; float64 keeps every input value exact
    arr = to_numpy(x, name)
    if arr.ndim != ndim:
        raise PageWeaverInputError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.floating):
        raise PageWeaverInputError(f"{name} must have a floating dtype, got {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise PageWeaverInputError(f"{name} contains NaN or infinite values")
    return arr


def check_attention_shapes(q_shape, k_shape, v_shape) -> None:
    """q is ``[N, H, D]`` and k, v are ``[num_pages, P, D]``, with H, D, P >= 1."""
    q_shape, k_shape, v_shape = (tuple(s) for s in (q_shape, k_shape, v_shape))
    if len(q_shape) != 3 or 0 in q_shape[1:]:
        raise PageWeaverInputError(f"q must be [N, H, D] with H, D >= 1, got {q_shape}")
    if k_shape != v_shape or len(k_shape) != 3 or k_shape[2] != q_shape[2] or k_shape[1] == 0:
        raise PageWeaverInputError(
            f"k and v must both be [num_pages, P >= 1, D={q_shape[2]}], got {k_shape} and "
            f"{v_shape}")


def attention_inputs(q, k, v) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, k and v as finite float64 arrays of the shapes :func:`check_attention_shapes` takes."""
    qa = as_float_array(q, "q", 3)
    ka, va = as_float_array(k, "k", 3), as_float_array(v, "v", 3)
    check_attention_shapes(qa.shape, ka.shape, va.shape)
    return qa, ka, va


def softmax_scale(scale, dim: int) -> float:
    """The softmax scale: ``1/sqrt(D)`` when None, otherwise a finite real number."""
    return 1.0 / float(np.sqrt(dim)) if scale is None else finite_float(scale, "scale")


def pool_pages(rows, request_offsets, page_table, num_pages) -> np.ndarray:
    """Map logical page ids to rows of the K/V pool (-1 stays padding).

    A selected page must be mapped: a negative page-table entry for it is an error, never a
    read of pool row 0.

    Parameters
    ----------
    rows : numpy.ndarray of int64, shape [N, K]
        Canonical rows (:func:`~pageweaver_edu.core.supports.canonical_rows`), -1 = padding.
    request_offsets : numpy.ndarray of int64, shape [R + 1]
    page_table : array_like of int, shape [R, max_pages], or None
        Pool row of every request's logical page; None when ids already are pool rows.
    num_pages : int
        Pages in the K/V pool; every mapped id must be below it.

    Returns
    -------
    numpy.ndarray of int64, shape [N, K]
    """
    if page_table is None:
        phys = rows
    else:
        table = integer_array(page_table, "page_table")
        if table.ndim != 2 or table.shape[0] != len(request_offsets) - 1:
            raise PageWeaverInputError(
                f"page_table must be [R, max_pages] with R = {len(request_offsets) - 1} "
                f"requests, got shape {table.shape}"
            )
        if rows.size and int(rows.max()) >= table.shape[1]:
            raise PageWeaverInputError(
                f"topk references logical page {int(rows.max())} but page_table has "
                f"{table.shape[1]} columns"
            )
        req = np.repeat(np.arange(table.shape[0]), np.diff(request_offsets))
        phys = np.where(rows >= 0, table[req[:, None], np.maximum(rows, 0)], -1)
        unmapped = np.argwhere((rows >= 0) & (phys < 0))
        if len(unmapped):
            i, j = unmapped[0]
            raise PageWeaverInputError(
                f"row {i} selects logical page {rows[i, j]}, which page_table maps to "
                f"{phys[i, j]} (unmapped) in request {req[i]}")
    if phys.size and int(phys.max()) >= num_pages:
        raise PageWeaverInputError(
            f"page id {int(phys.max())} is out of range: the K/V cache has {num_pages} pages"
        )
    return phys


def reference_attention(
    q,
    k,
    v,
    topk,
    lengths=None,
    causal_pos=None,
    request_offsets=None,
    page_table=None,
    scale: float | None = None,
) -> np.ndarray:
    """Sparse attention of every query over its selected pages, in float64.

    Parameters
    ----------
    q : array_like of float, shape [N, H, D]
        Queries: N positions, H local Q heads sharing one selection, head dim D.
    k, v : array_like of float, shape [num_pages, P, D]
        Paged keys and values.
    topk : array_like of int, shape [N, K]
        Selected logical page ids per position (``< 0`` = padding).
    lengths : array_like of int, shape [N], optional
        L_i; tokens ``t >= L_i`` are masked. Unlimited when None.
    causal_pos : array_like of int, shape [N], optional
        c_i; tokens ``t > c_i`` are masked. No causal mask when None.
    request_offsets : array_like of int, shape [R + 1], optional
        Packed requests (cu_seqlens style); used with ``page_table``.
    page_table : array_like of int, shape [R, max_pages], optional
        Logical page → K/V pool row, per request; identity when None.
    scale : float, optional
        Softmax scale, a finite real number; ``1/sqrt(D)`` when None.

    Returns
    -------
    numpy.ndarray of float64, shape [N, H, D]
        ``o_i`` per head; rows with empty ``A_i`` are zero.
    """
    qa, ka, va = attention_inputs(q, k, v)
    n, heads, dim = qa.shape
    rows = canonical_rows(topk)
    if rows.shape[0] != n:
        raise PageWeaverInputError(f"topk has {rows.shape[0]} rows but q has N = {n}")
    num_pages, page_size, _ = ka.shape
    offsets = as_request_offsets(request_offsets, n)
    phys = pool_pages(rows, offsets, page_table, num_pages)
    lens = as_positions(lengths, n, "lengths")
    causal = as_positions(causal_pos, n, "causal_pos")
    scale = softmax_scale(scale, dim)

    offs = np.arange(page_size)
    width = rows.shape[1] * page_size
    token = (rows[:, :, None] * page_size + offs).reshape(n, width)  # logical token ids
    slot = (np.maximum(phys, 0)[:, :, None] * page_size + offs).reshape(n, width)
    keep = np.repeat(rows >= 0, page_size, axis=1)
    if lens is not None:
        keep &= token < lens[:, None]
    if causal is not None:
        keep &= token <= causal[:, None]
    kf, vf = ka.reshape(-1, dim), va.reshape(-1, dim)
    out = np.zeros((n, heads, dim))
    block = max(1, _CHUNK_ELEMENTS // max(1, token.shape[1] * dim))
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        kb, vb, mb = kf[slot[lo:hi]], vf[slot[lo:hi]], keep[lo:hi]
        with np.errstate(over="ignore", invalid="ignore"):
            logits = np.einsum("nhd,ntd->nht", qa[lo:hi], kb) * scale
        if (mb & ~np.isfinite(logits).all(axis=1)).any():
            raise PageWeaverInputError(
                f"scale {scale!r} makes the scores q·k·scale overflow float64")
        logits = np.where(mb[:, None, :], logits, -np.inf)
        peak = logits.max(axis=2, keepdims=True)
        weights = np.exp(logits - np.where(np.isfinite(peak), peak, 0.0))
        denom = weights.sum(axis=2, keepdims=True)
        out[lo:hi] = np.einsum("nht,ntd->nhd", weights, vb) / np.where(denom > 0, denom, 1.0)
    return out
