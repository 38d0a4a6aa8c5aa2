"""FlashInfer's paged decode on our inputs: one request per (query, KV head).

Request ``r = i * H + h`` (so ``q`` viewed as ``[N*H, 16, 128]`` needs no copy) holds the sorted,
de-duplicated valid pages of ``topk[h, i]`` with at least one visible token
(``t < min(c_i + 1, L_i)``), in a one-head cache whose page ``(p, h)`` is row ``p*H + h`` of K/V
viewed as ``[pages*H, 128, 1, 128]`` (NHD). Every page but the last is whole (the visible tokens
of a page below the cut are all of it), so ``kv_last_page_len`` — the visible tokens of the last
kept page — states A_i exactly. A request with no visible token gets zero pages and
``last_page_len`` 0 (FlashInfer reads its length as 0); since what its kernels write for an
empty request is not documented, the runner (:class:`~.decode_peer.DecodePeer`) overwrites those
rows with 0 after the call (:attr:`DecodeRequests.empty`).

:func:`decode_requests` builds the requests (torch ops, on the GPU outside the timed region);
:func:`decode_request_tokens` rebuilds a request's token set from the metadata alone and
:func:`verify_decode_requests` checks every request against
:func:`~pageweaver_edu.core.supports.token_support`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.inputs import PageWeaverInputError, as_positions
from ..core.supports import token_support
from .selection import PAGE, topk_3d, visible_limit


@dataclass
class DecodeRequests:
    """FlashInfer paged-decode metadata for one request per (query i, KV head h), ``r = i*H + h``.

    Attributes
    ----------
    indptr : int32 ``[N*H + 1]`` (torch tensor on ``device``, or numpy with ``as_numpy``)
    indices : int32 ``[indptr[-1]]``, one-head cache pages ``p * H + h``
    last_page_len : int32 ``[N*H]``, visible tokens of each request's last page (0: no page)
    empty : bool ``[N*H]``, requests with no visible token (their output rows are set to 0)
    heads, queries, page_size : int
    """

    indptr: object
    indices: object
    last_page_len: object
    empty: object
    heads: int
    queries: int
    page_size: int = PAGE

    @property
    def batch(self) -> int:
        return self.heads * self.queries

    @property
    def num_empty(self) -> int:
        return int(self.empty.sum())


def decode_requests(topk, causal_pos=None, lengths=None, page_size: int = PAGE,
                    num_pages: int | None = None, device=None,
                    as_numpy: bool = False) -> DecodeRequests:
    """Build the paged-decode requests (see the module docstring) with torch ops.

    Parameters
    ----------
    topk : array_like or torch.Tensor of int, shape [H, N, K] (or [N, K] for H = 1)
        Per KV head Top-K page ids; ``< 0`` padding, duplicates allowed.
    causal_pos, lengths : array_like of int, shape [N], optional
        c_i and L_i; None means no limit.
    page_size : int
        P (FlashInfer's ``page_size``).
    num_pages : int, optional
        Pages in the cache; a selected id ``>= num_pages`` raises.
    device : torch.device or str, optional
        Where to build (the conversion runs outside the timed region; on the GPU it is a few
        sorts and a cumsum). Default: ``topk``'s device for a tensor, else the CPU.
    as_numpy : bool
        Return numpy int32 arrays instead of torch tensors.

    Returns
    -------
    DecodeRequests
        ``indptr`` / ``indices`` / ``last_page_len`` int32.
    """
    import torch

    if isinstance(topk, torch.Tensor):
        t = topk if device is None else topk.to(device)
        if t.dim() == 2:
            t = t[None]
        if t.dim() != 3:
            raise PageWeaverInputError(f"topk must be [H, N, K] or [N, K], got {tuple(t.shape)}")
        t = t.to(torch.int64)
    else:
        t = torch.from_numpy(topk_3d(topk)).to(device or "cpu")
    heads, n, _ = t.shape
    if num_pages is not None and t.numel() and int(t.max()) >= num_pages:
        raise PageWeaverInputError(
            f"topk references page {int(t.max())} but the cache has {num_pages} pages")
    lim = torch.from_numpy(visible_limit(n, causal_pos, lengths)).to(t.device)
    s = t.sort(dim=-1).values  # [H, N, K] ascending; padding first
    first = torch.ones_like(s, dtype=torch.bool)
    first[..., 1:] = s[..., 1:] != s[..., :-1]
    valid = (s >= 0) & first & (s * page_size < lim[None, :, None])
    # request order r = i * H + h
    s_r = s.permute(1, 0, 2).reshape(n * heads, -1)
    v_r = valid.permute(1, 0, 2).reshape(n * heads, -1)
    h_r = torch.arange(heads, device=t.device).repeat(n)
    counts = v_r.sum(dim=1)
    indptr = torch.zeros(n * heads + 1, dtype=torch.int64, device=t.device)
    indptr[1:] = torch.cumsum(counts, 0)
    indices = (s_r * heads + h_r[:, None])[v_r]
    last = torch.where(v_r, s_r, torch.full_like(s_r, -1)).amax(dim=1)
    lim_r = lim.repeat_interleave(heads)
    last_len = torch.where(counts > 0, torch.clamp(lim_r - last * page_size, max=page_size),
                           torch.zeros_like(last))
    out = [x.to(torch.int32) for x in (indptr, indices, last_len)]
    empty = counts == 0
    if as_numpy:
        out = [x.cpu().numpy() for x in out]
        empty = empty.cpu().numpy()
    return DecodeRequests(out[0], out[1], out[2], empty, heads, n, page_size)


def _np(x) -> np.ndarray:
    return np.asarray(x.cpu() if hasattr(x, "cpu") else x)


def decode_request_tokens(req: DecodeRequests, r: int) -> tuple[int, np.ndarray]:
    """(KV head, ascending token ids) that request ``r`` attends to, rebuilt from its
    indptr / indices / last_page_len alone (the CPU checker's inverse of the conversion)."""
    indptr, indices, last = _np(req.indptr), _np(req.indices), _np(req.last_page_len)
    heads, page = req.heads, req.page_size
    ids = indices[indptr[r]:indptr[r + 1]].astype(np.int64)
    h = r % heads
    if ids.size == 0:
        return h, np.zeros(0, dtype=np.int64)
    if np.any(ids % heads != h):
        raise PageWeaverInputError(f"request {r} (head {h}) holds pages of another KV head: {ids}")
    if not 1 <= int(last[r]) <= page:
        raise PageWeaverInputError(f"request {r}: last_page_len {int(last[r])} not in 1..{page}")
    pages = ids // heads
    sizes = np.full(ids.size, page)
    sizes[-1] = int(last[r])
    return h, np.concatenate([p * page + np.arange(sz) for p, sz in zip(pages, sizes, strict=True)])


def verify_decode_requests(req: DecodeRequests, topk, causal_pos=None, lengths=None) -> int:
    """Check every request's token set against :func:`pageweaver_edu.core.supports.token_support`
    (A_i of query i, KV head h); raise :class:`PageWeaverInputError` naming the first mismatch.

    Returns
    -------
    int
        The number of requests checked (N * H).
    """
    t = topk_3d(topk)
    heads, n, _ = t.shape
    if (req.heads, req.queries) != (heads, n):
        raise PageWeaverInputError(f"requests are for H={req.heads}, N={req.queries}; topk is "
                                   f"H={heads}, N={n}")
    c = as_positions(causal_pos, n, "causal_pos")
    ln = as_positions(lengths, n, "lengths")
    indptr = _np(req.indptr)
    if indptr.shape != (n * heads + 1,) or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        raise PageWeaverInputError("indptr must be [N*H + 1], start at 0 and not decrease")
    empty = _np(req.empty)
    for r in range(n * heads):
        i, h = divmod(r, heads)
        hh, got = decode_request_tokens(req, r)
        want = token_support(t[h, i], req.page_size,
                             None if ln is None else int(ln[i]), None if c is None else int(c[i]))
        if hh != h or not np.array_equal(got, want):
            raise PageWeaverInputError(
                f"request {r} (query {i}, head {h}): {got.size} tokens rebuilt, A_i has "
                f"{want.size}; first differences {np.setxor1d(got, want)[:8].tolist()}")
        if bool(empty[r]) != (want.size == 0):
            raise PageWeaverInputError(f"request {r}: empty flag {bool(empty[r])} but |A_i| = "
                                       f"{want.size}")
    return n * heads
