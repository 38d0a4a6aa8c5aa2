"""Page-pair partials and combine with torch ops, on any device (docs/definitions.md#page-pairs).

The same arithmetic as :mod:`pageweaver_edu.pagepairs.work` (plan on the host, then one batched
gather + masked softmax per block of work items, then a log-sum-exp combine), written with
torch so that it runs on a GPU for timing and in float64 on a CPU for checking. It is a
readable baseline for the page-side organization, not the paper's CUDA producer.
"""

from __future__ import annotations

import numpy as np
import torch

from ..core.attention import check_attention_shapes, softmax_scale
from ..core.inputs import as_positions, as_request_offsets
from .attention import physical_pages
from .work import PagePairPlan, plan_page_pairs

_CHUNK_ELEMENTS = 1 << 24


def _tensor(x, device, dtype=None):
    t = x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    return t.to(device=device, dtype=dtype) if dtype is not None else t.to(device)


def pair_partials_torch(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    plan: PagePairPlan,
    lengths=None,
    causal_pos=None,
    request_offsets=None,
    page_table=None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Partials and log-sum-exps of every work item, with torch on ``q``'s device.

    Parameters
    ----------
    q : torch.Tensor of float, shape [N, H, D]
    k, v : torch.Tensor of float, shape [num_pages, P, D]
        On ``q``'s device.
    plan : PagePairPlan
    lengths, causal_pos, request_offsets, page_table, scale
        As :func:`pageweaver_edu.core.attention.reference_attention`.

    Returns
    -------
    partial : torch.Tensor of q.dtype, shape [Wn, H, D]
    lse : torch.Tensor of float32 (or wider, with q), shape [Wn, H]
    """
    check_attention_shapes(q.shape, k.shape, v.shape)
    dev, n, heads, dim = q.device, *q.shape
    page_size = k.shape[1]
    offsets = as_request_offsets(request_offsets, n)
    phys = _tensor(physical_pages(plan, offsets, page_table, k.shape[0]), dev)
    pages = _tensor(plan.work_pages, dev)
    wq = _tensor(plan.work_query, dev)
    stat = torch.promote_types(q.dtype, torch.float32)
    scale = softmax_scale(scale, dim)
    offs = torch.arange(page_size, device=dev)
    lens = None if lengths is None else _tensor(as_positions(lengths, n, "lengths"), dev)
    causal = (None if causal_pos is None
              else _tensor(as_positions(causal_pos, n, "causal_pos"), dev))
    kf, vf = k.reshape(-1, dim), v.reshape(-1, dim)
    wn = pages.shape[0]
    partial = torch.zeros((wn, heads, dim), device=dev, dtype=q.dtype)
    lse = torch.full((wn, heads), -float("inf"), device=dev, dtype=stat)
    block = max(1, _CHUNK_ELEMENTS // (2 * page_size * max(dim, heads)))
    for lo in range(0, wn, block):
        hi = min(wn, lo + block)
        iq, lp = wq[lo:hi], pages[lo:hi]
        token = (lp[:, :, None] * page_size + offs).reshape(hi - lo, -1)
        slot = (phys[lo:hi].clamp_min(0)[:, :, None] * page_size + offs).reshape(hi - lo, -1)
        keep = (lp >= 0).repeat_interleave(page_size, dim=1)
        if lens is not None:
            keep &= token < lens[iq][:, None]
        if causal is not None:
            keep &= token <= causal[iq][:, None]
        logits = torch.einsum("whd,wtd->wht", q[iq].to(stat), kf[slot].to(stat)) * scale
        logits = logits.masked_fill(~keep[:, None, :], -float("inf"))
        peak = logits.amax(dim=2)
        safe = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
        weights = torch.exp(logits - safe[:, :, None])
        denom = weights.sum(dim=2)
        acc = torch.einsum("wht,wtd->whd", weights, vf[slot].to(stat))
        partial[lo:hi] = (acc / denom.clamp_min(torch.finfo(stat).tiny)[:, :, None]).to(q.dtype)
        lse[lo:hi] = torch.where(denom > 0, safe + torch.log(denom), -float("inf"))
    return partial, lse


def combine_torch(
    partial: torch.Tensor, lse: torch.Tensor, work_query, num_queries: int
) -> torch.Tensor:
    """``o_i = Σ_w e^{lse_w − LSE_i} partial_w`` per query, as :func:`~.attention.combine`.

    Parameters
    ----------
    partial : torch.Tensor, shape [Wn, H, D]
    lse : torch.Tensor, shape [Wn, H]
    work_query : array_like of int, shape [Wn]
    num_queries : int
        N.

    Returns
    -------
    torch.Tensor of partial.dtype, shape [N, H, D]
        Zero for queries without a visible token.
    """
    dev, heads, dim = partial.device, partial.shape[1], partial.shape[2]
    wq = _tensor(work_query, dev).long()
    peak = torch.full((num_queries, heads), -float("inf"), device=dev, dtype=lse.dtype)
    peak = peak.scatter_reduce(0, wq[:, None].expand(-1, heads), lse, "amax")
    safe = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
    weight = torch.exp(lse - safe[wq])
    denom = torch.zeros((num_queries, heads), device=dev, dtype=lse.dtype).index_add(
        0, wq, weight
    )
    out = torch.zeros((num_queries, heads, dim), device=dev, dtype=lse.dtype)
    out = out.index_add(0, wq, weight[:, :, None] * partial.to(lse.dtype))
    den = torch.where(denom > 0, denom, torch.ones_like(denom))
    return (out / den[:, :, None]).to(partial.dtype)


def page_pair_attention_torch(
    q, k, v, topk, lengths=None, causal_pos=None, request_offsets=None, page_table=None,
    scale=None, plan: PagePairPlan | None = None,
) -> torch.Tensor:
    """Plan on the host (or reuse ``plan``), then partials and combine on ``q``'s device.

    Parameters as :func:`pageweaver_edu.core.attention.reference_attention` with torch
    tensors; ``plan`` is a :class:`PagePairPlan` of ``topk`` already built. Returns
    ``[N, H, D]`` in ``q``'s dtype.
    """
    plan = plan_page_pairs(topk, request_offsets) if plan is None else plan
    partial, lse = pair_partials_torch(
        q, k, v, plan, lengths, causal_pos, request_offsets, page_table, scale
    )
    return combine_torch(partial, lse, plan.work_query, plan.num_queries)


def time_page_pairs(
    topk, device: str = "cuda", heads: int = 16, dim: int = 128, page_size: int = 128,
    dtype=torch.bfloat16, repeats: int = 5, seed: int = 0,
) -> dict:
    """Median wall time of the torch page-pair path (partials + combine) on random Q/K/V.

    The plan is built once on the host and excluded; every repeat runs partials and the
    combine on ``device`` and synchronizes.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
    device : str
        Where Q/K/V live and the arithmetic runs.
    heads, dim, page_size : int
        H, D and P of the random Q/K/V.
    dtype : torch.dtype
    repeats : int
        Timed runs after one warm-up run.
    seed : int

    Returns
    -------
    dict
        ``median_ms``, ``work_items``, ``device``, ``dtype``.
    """
    import time

    plan = plan_page_pairs(topk)
    gen = torch.Generator().manual_seed(seed)
    pool = int(np.asarray(topk).max(initial=0)) + 1
    q = torch.randn((plan.num_queries, heads, dim), generator=gen).to(device, dtype)
    k, v = (torch.randn((pool, page_size, dim), generator=gen).to(device, dtype) for _ in "kv")
    sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
    times = []
    for _ in range(repeats + 1):  # the first run warms up
        sync()
        start = time.perf_counter()
        partial, lse = pair_partials_torch(q, k, v, plan)
        combine_torch(partial, lse, plan.work_query, plan.num_queries)
        sync()
        times.append(1e3 * (time.perf_counter() - start))
    return {"median_ms": float(np.median(times[1:])), "work_items": len(plan.work_query),
            "device": str(device), "dtype": str(dtype)}
