"""What the peer conversions share: the shapes FlashInfer's kernels take (P = 128, d = 128, 16
local Q heads per KV head, MSA's Top-16) and the visible-token limit of each query.

Query i of KV head h attends ``A_i = {t : floor(t/P) in S_i, t < L_i, t <= c_i}``
(docs/definitions.md#supports): :func:`visible_limit` is the ``min(c_i + 1, L_i)`` of that set,
:func:`topk_3d` our Top-K as ``[H, N, K]`` int64.
"""

from __future__ import annotations

import numpy as np

from ..core.inputs import PageWeaverInputError, as_positions

PAGE = 128
HEAD_DIM = 128
GROUP = 16  # local Q heads per KV head
MSA_TOPK = 16
_UNLIMITED = np.iinfo(np.int64).max // 4


def topk_3d(topk) -> np.ndarray:
    """Our Top-K ``[H, N, K]`` (or ``[N, K]`` for H = 1) as an int64 numpy ``[H, N, K]``."""
    arr = np.asarray(topk.cpu() if hasattr(topk, "cpu") else topk)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3:
        raise PageWeaverInputError(f"topk must be [H, N, K] or [N, K], got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise PageWeaverInputError(f"topk must have an integer dtype, got {arr.dtype}")
    return arr.astype(np.int64)


def visible_limit(n: int, causal_pos=None, lengths=None) -> np.ndarray:
    """``min(c_i + 1, L_i)`` per query (int64 ``[N]``; a large number where neither is given):
    query i sees token t iff ``t < limit[i]``."""
    lim = np.full(n, _UNLIMITED, dtype=np.int64)
    c = as_positions(causal_pos, n, "causal_pos")
    if c is not None:
        lim = np.minimum(lim, c + 1)
    ln = as_positions(lengths, n, "lengths")
    if ln is not None:
        lim = np.minimum(lim, ln)
    return lim
