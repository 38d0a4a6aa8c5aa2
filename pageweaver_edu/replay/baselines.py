"""Baselines for the Union8 kernel on the same inputs (torch only; GPU benchmark and tests).

* :func:`gather_reference` — per query, gather its selected K/V pages and run BF16
  ``scaled_dot_product_attention`` with the token mask of docs/definitions.md#supports,
  chunked over queries so the gathered copies fit in memory.
* :class:`FlexPageAttention` — ``torch.compile``'d FlexAttention over the whole paged context
  with a page-membership ``mask_mod`` and a :class:`BlockMask`; the block-mask build and the
  compile are timed separately from the calls.

Layouts are those of :mod:`pageweaver_edu.gpu.union8`: q ``[N, H*16, 128]``, k/v
``[pages, H, P, 128]`` (or ``[pages, P, 128]``), ``topk`` ``[N, K]`` or ``[H, N, K]`` with one
Top-K per KV head; page ids are positions (token t of page p is ``p*P + t``).
"""

from __future__ import annotations

import time

HEADS = 16


def _heads_view(q, k, v, topk):
    if k.dim() == 3:
        k, v = k.unsqueeze(1), v.unsqueeze(1)
    if topk.dim() == 2:
        topk = topk.unsqueeze(0)
    return k, v, topk


def dedup_topk(topk):
    """``topk`` (CUDA, int) with duplicates in a row replaced by -1 (a page counts once)."""
    import torch

    s, _ = torch.sort(topk.to(torch.int64), dim=-1)
    dup = torch.zeros_like(s, dtype=torch.bool)
    dup[..., 1:] = s[..., 1:] == s[..., :-1]
    return torch.where(dup | (s < 0), torch.full_like(s, -1), s)


def gather_reference(q, k, v, topk, causal_pos=None, lengths=None, chunk: int = 2048,
                     scale=None, out=None):
    """BF16 gather + SDPA reference; rows with an empty A_i are 0.

    Parameters
    ----------
    q : torch.Tensor of bfloat16 on the GPU, shape [N, H*16, 128]
    k, v : torch.Tensor of bfloat16 on the GPU, shape [pages, H, 128, 128] or [pages, 128, 128]
    topk : torch.Tensor of int on the GPU, shape [N, K] or [H, N, K]
        Without duplicates in a row (:func:`dedup_topk` once if rows may hold them).
    causal_pos, lengths : torch.Tensor of int, shape [N], optional
        c_i and L_i.
    chunk : int
        Queries gathered at once.
    scale : float, optional
        Softmax scale; ``1/sqrt(128)`` when None.
    out : torch.Tensor of bfloat16, shape [N, H*16, 128], optional
        Written in place.

    Returns
    -------
    torch.Tensor of bfloat16, shape [N, H*16, 128]
        ``out``.
    """
    import torch
    import torch.nn.functional as F

    k, v, topk = _heads_view(q, k, v, topk)
    n, _, d = q.shape
    heads, page = k.shape[1], k.shape[2]
    out = torch.empty_like(q) if out is None else out
    offs = torch.arange(page, device=q.device)
    big = torch.iinfo(torch.int64).max
    for h in range(heads):
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            ids = topk[h, lo:hi].to(torch.int64)
            valid = ids >= 0
            pid = ids.clamp(min=0)
            kk = k[pid, h].reshape(hi - lo, -1, d)  # [n_c, K*P, d]
            vv = v[pid, h].reshape(hi - lo, -1, d)
            tok = (ids[:, :, None] * page + offs).reshape(hi - lo, -1)
            keep = valid[:, :, None].expand(-1, -1, page).reshape(hi - lo, -1)
            lim = torch.full((hi - lo,), big, device=q.device, dtype=torch.int64)
            if causal_pos is not None:
                lim = torch.minimum(lim, causal_pos[lo:hi].to(torch.int64) + 1)
            if lengths is not None:
                lim = torch.minimum(lim, lengths[lo:hi].to(torch.int64))
            keep &= tok < lim[:, None]
            qq = q[lo:hi, h * HEADS:(h + 1) * HEADS].unsqueeze(2)  # [n_c, 16, 1, d]
            o = F.scaled_dot_product_attention(  # K/V broadcast over the 16 Q heads (no copy)
                qq, kk.unsqueeze(1).expand(-1, HEADS, -1, -1),
                vv.unsqueeze(1).expand(-1, HEADS, -1, -1), attn_mask=keep[:, None, None, :],
                scale=scale)
            o = torch.where(keep.any(dim=1)[:, None, None, None], o, torch.zeros_like(o))
            out[lo:hi, h * HEADS:(h + 1) * HEADS] = o.squeeze(2)
    return out


class FlexPageAttention:
    """FlexAttention with a page-membership mask over the full paged context.

    Build once (mask tensors and :class:`BlockMask`; ``mask_build_s``), call once to compile
    (``compile_s``), then call repeatedly. The K/V pool is re-laid out once to
    ``[1, H, pages*P, d]`` (not timed: a cache layout choice).
    """

    def __init__(self, q, k, v, topk, causal_pos=None, lengths=None, block=(128, 128),
                 scale=None):
        import torch
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        k, v, topk = _heads_view(q, k, v, topk)
        n, qh, d = q.shape
        pages, heads, page = k.shape[0], k.shape[1], k.shape[2]
        self.q = q.transpose(0, 1).unsqueeze(0).contiguous()  # [1, H*16, N, d]
        self.k = k.permute(1, 0, 2, 3).reshape(1, heads, pages * page, d).contiguous()
        self.v = v.permute(1, 0, 2, 3).reshape(1, heads, pages * page, d).contiguous()
        self.scale, self.heads = scale, heads
        dev = q.device
        t0 = time.perf_counter()
        member = torch.zeros((heads, n, pages + 1), dtype=torch.bool, device=dev)
        ids = topk.to(torch.int64)
        ids = torch.where(ids < 0, torch.full_like(ids, pages), ids)  # padding → spare column
        member.scatter_(2, ids, True)
        member = member[:, :, :pages].contiguous()
        big = torch.iinfo(torch.int32).max
        lim = torch.full((n,), big, dtype=torch.int64, device=dev)
        if causal_pos is not None:
            lim = torch.minimum(lim, causal_pos.to(torch.int64) + 1)
        if lengths is not None:
            lim = torch.minimum(lim, lengths.to(torch.int64))

        def mask_mod(b, h, q_idx, kv_idx):
            hk = h // HEADS
            return member[hk, q_idx, kv_idx // page] & (kv_idx < lim[q_idx])

        self.block_mask = create_block_mask(
            mask_mod, B=None, H=None if heads == 1 else qh, Q_LEN=n, KV_LEN=pages * page,
            device=dev, BLOCK_SIZE=block)
        torch.cuda.synchronize()
        self.mask_build_s = time.perf_counter() - t0
        self._fn = torch.compile(flex_attention, dynamic=False)
        t0 = time.perf_counter()
        self.out = self()
        torch.cuda.synchronize()
        self.compile_s = time.perf_counter() - t0

    def __call__(self):
        """Output ``[1, H*16, N, d]`` bf16 (use :meth:`result` for ``[N, H*16, d]``)."""
        return self._fn(self.q, self.k, self.v, block_mask=self.block_mask, scale=self.scale,
                        enable_gqa=True)

    def result(self, o=None):
        """``[N, H*16, d]`` view of an output of :meth:`__call__`."""
        return (self.out if o is None else o)[0].transpose(0, 1)
