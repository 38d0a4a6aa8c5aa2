"""FlashInfer 0.7.4's Hopper sparse kernel ``flashinfer.msa_ops.msa_sparse_attention``: which of
our inputs it can state, and its arguments.

On SM90 it takes ``q2k_indices`` int32 ``[H, N, 16]`` ascending, de-duplicated, -1 padded; FP8
E4M3 K/V interleaved in one ``[pages, H, 128, 256]`` allocation
(:func:`~.fp8_cache.interleaved_fp8_cache`); one sequence (``cu_seqlens_q = [0, N]``,
``page_table = arange(pages)[None]``, ``seqused_k`` = the context length). It is causal only:
query i attends keys ``t <= q_offset + i`` (``q_offset`` defaults to ``seqused_k - N``), blocks
past ``(seqused_k - 1) // 128`` are dropped. :func:`msa_inputs` states when our c_i / L_i are that
(raising :class:`~pageweaver_edu.core.inputs.PageWeaverInputError` otherwise); a preset without a
causal cut gets ``q_offset = seqused_k`` so every selected token is visible. Per-tensor FP8
scales: the K scale folds into ``softmax_scale = k_scale / sqrt(128)``, the V scale is
``v_global_scale`` (:func:`msa_kwargs`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.inputs import PageWeaverInputError, as_positions
from ..core.supports import canonical_rows
from .selection import HEAD_DIM, MSA_TOPK, PAGE, topk_3d, visible_limit


@dataclass
class MsaInputs:
    """Host-side MSA arguments of one preset (see :func:`msa_inputs`).

    Attributes
    ----------
    q2k_indices : numpy int32 ``[H, N, 16]``, ascending, de-duplicated, -1 padded
    seqused_k : int, the context length
    q_offset : int or None; None when the default ``seqused_k - N`` is right
    num_pages : int, the page table's width (``arange(num_pages)``)
    empty : numpy bool ``[N, H]``, (query, head) pairs with no visible token
    selected_tokens : int, Σ |A_i| over (query, head)
    """

    q2k_indices: np.ndarray
    seqused_k: int
    q_offset: int | None
    num_pages: int
    empty: np.ndarray
    selected_tokens: int

    @property
    def queries(self) -> int:
        return int(self.q2k_indices.shape[1])


def msa_token_counts(rows, limit, seqused_k: int, q_offset: int, page_size: int = PAGE):
    """Visible tokens per selected (head, query, slot) as we define A_i (``ours``) and as the
    MSA kernels do: query i sees ``t <= q_offset + i``, blocks past ``(seqused_k - 1) // P``
    are dropped, and ``seqused_k`` cuts tokens in the last block (``theirs_cut``) or, as the
    CuTe union kernel's per-token mask reads, does not (``theirs_block``). Returns the three
    int64 arrays ``[H, N, K]`` (0 at padding)."""
    rows = np.asarray(rows, dtype=np.int64)
    n = rows.shape[1]
    valid = rows >= 0
    start = rows * page_size
    f = q_offset + np.arange(n, dtype=np.int64) + 1  # causal: t < q_offset + i + 1

    def cnt(lim):
        return np.where(valid, np.clip(lim[None, :, None] - start, 0, page_size), 0)

    ours = cnt(np.asarray(limit, dtype=np.int64))
    theirs_cut = cnt(np.minimum(f, seqused_k))
    admitted = valid & (rows <= (seqused_k - 1) // page_size)
    theirs_block = np.where(admitted, cnt(f), 0)
    return ours, theirs_cut, theirs_block


def msa_inputs(topk, causal_pos=None, lengths=None, num_pages: int | None = None,
               page_size: int = PAGE, context_len: int | None = None) -> MsaInputs:
    """Check that MSA can state our A_i and build its host-side arguments.

    MSA is causal with one offset per sequence, so ``causal_pos`` must be ``prefix + i``
    (``q_offset = prefix``) or absent (then ``q_offset = seqused_k``: every token of the
    context is visible); ``lengths`` may only repeat what the causal cut and the context
    length already say. ``seqused_k`` is ``context_len``, else ``max(lengths)``, else
    ``prefix + N``, else ``num_pages * P``.

    Parameters
    ----------
    topk : array_like of int, shape [H, N, K] (K <= 16 after de-duplication) or [N, K]
    causal_pos, lengths : array_like of int, shape [N], optional
    num_pages : int, optional
        Pages in the cache (default: largest id + 1).
    page_size : int
        Must be 128 (the SM90 kernels' block).
    context_len : int, optional

    Returns
    -------
    MsaInputs

    Raises
    ------
    PageWeaverInputError
        Naming why the preset is not representable (positions not prefix + i, a length cut
        MSA cannot state, more than 16 distinct pages, a page outside the cache, P != 128).
    """
    if page_size != PAGE:
        raise PageWeaverInputError(f"MSA on SM90 uses 128-token blocks; page_size is {page_size}")
    t = topk_3d(topk)
    heads, n, _ = t.shape
    rows = np.stack([canonical_rows(t[h]) for h in range(heads)])  # ascending, -1 after
    width = int((rows >= 0).sum(axis=2).max()) if rows.size else 0
    if width > MSA_TOPK:
        raise PageWeaverInputError(
            f"a query selects {width} distinct pages; MSA on SM90 takes at most {MSA_TOPK}")
    q2k = np.full((heads, n, MSA_TOPK), -1, dtype=np.int64)
    keep = min(rows.shape[2], MSA_TOPK)
    q2k[..., :keep] = rows[..., :keep]
    top = int(q2k.max()) if q2k.size else -1
    num_pages = top + 1 if num_pages is None else int(num_pages)
    if top >= num_pages:
        raise PageWeaverInputError(f"topk references page {top}; the cache has {num_pages} pages")
    c = as_positions(causal_pos, n, "causal_pos")
    ln = as_positions(lengths, n, "lengths")
    if c is not None:
        off = c - np.arange(n, dtype=np.int64)
        if n and np.any(off != off[0]):
            bad = int(np.flatnonzero(off != off[0])[0])
            raise PageWeaverInputError(
                f"causal_pos is not prefix + i (query 0 at {int(c[0])}, query {bad} at "
                f"{int(c[bad])}): MSA has one causal offset per sequence")
        prefix = int(off[0]) if n else 0
    if context_len is not None:
        seqused = int(context_len)
    elif ln is not None:
        seqused = int(ln.max()) if n else 0
    elif c is not None:
        seqused = prefix + n
    else:
        seqused = num_pages * page_size
    if seqused <= 0:
        raise PageWeaverInputError(f"context length {seqused} must be positive")
    q_offset = prefix if c is not None else seqused
    limit = visible_limit(n, c, ln)
    ours, cut, block = msa_token_counts(q2k, limit, seqused, q_offset, page_size)
    for theirs, how in ((cut, "with seqused_k cutting the last block"),
                        (block, "with seqused_k dropping whole blocks only")):
        bad = np.argwhere(ours != theirs)
        if bad.size:
            h, i, j = (int(x) for x in bad[0])
            raise PageWeaverInputError(
                f"MSA cannot state A_i of query {i} (head {h}): page {int(q2k[h, i, j])} shows "
                f"{int(ours[h, i, j])} tokens to us and {int(theirs[h, i, j])} to MSA {how} "
                f"(q_offset {q_offset}, seqused_k {seqused}; causal "
                f"{'prefix + i' if c is not None else 'none'}, lengths "
                f"{'given' if ln is not None else 'none'})")
    empty = (ours.sum(axis=2) == 0).T  # [N, H]
    return MsaInputs(q2k.astype(np.int32), seqused,
                     None if (c is not None and q_offset == seqused - n) else q_offset,
                     num_pages, empty, int(ours.sum()))


def msa_kwargs(q, k, v, inputs: MsaInputs, k_scale: float = 1.0, v_scale: float = 1.0,
               out=None) -> dict:
    """The keyword arguments of ``flashinfer.msa_ops.msa_sparse_attention`` for ``inputs``,
    as tensors on ``q``'s device: ``q`` bf16 ``[N, H*16, 128]``, ``k`` / ``v`` the E4M3 halves
    of one interleaved cache (:func:`~.fp8_cache.interleaved_fp8_cache`), per-tensor scales."""
    import torch

    dev = q.device
    i32 = dict(dtype=torch.int32, device=dev)
    kw = dict(q=q, k=k, v=v,
              q2k_indices=torch.from_numpy(inputs.q2k_indices).to(dev).contiguous(),
              cu_seqlens_q=torch.tensor([0, inputs.queries], **i32), causal=True,
              softmax_scale=float(k_scale) / HEAD_DIM ** 0.5,
              page_table=torch.arange(inputs.num_pages, **i32)[None].contiguous(),
              seqused_k=torch.tensor([inputs.seqused_k], **i32),
              v_global_scale=float(v_scale))
    if inputs.q_offset is not None:
        kw["q_offset"] = torch.tensor([inputs.q_offset], **i32)
    if out is not None:
        kw["out"] = out
    return kw
