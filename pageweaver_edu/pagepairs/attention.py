"""Page-pair attention in float64: partial outputs with log-sum-exp per work item, then a combine.

Every work item of a :class:`~.work.PagePairPlan` runs a softmax over its one or two pages and
writes a normalized partial plus ``log Σ exp``; :func:`combine` finishes each query from its
items. The result equals :func:`pageweaver_edu.core.attention.reference_attention`.
"""

from __future__ import annotations

import numpy as np

from ..core.attention import attention_inputs, pool_pages, softmax_scale
from ..core.inputs import PageWeaverInputError, as_positions, as_request_offsets
from .work import PagePairPlan, plan_page_pairs

_CHUNK_ELEMENTS = 1 << 23


def physical_pages(plan: PagePairPlan, offsets, page_table, num_pages: int) -> np.ndarray:
    """K/V pool rows of every work item's pages.

    Parameters
    ----------
    plan : PagePairPlan
    offsets : array_like of int, shape [R + 1]
        Request offsets of the plan's queries.
    page_table : array_like of int, shape [R, max_pages], or None
        As :func:`pageweaver_edu.core.attention.pool_pages`.
    num_pages : int
        Pages in the K/V pool.

    Returns
    -------
    numpy.ndarray of int64, shape [Wn, 2]
        -1 where a work item has no second page.
    """
    per_request = np.bincount(plan.pages[:, 0], minlength=len(offsets) - 1)
    pool = pool_pages(plan.pages[:, 1:2], np.r_[0, np.cumsum(per_request)], page_table,
                      num_pages)[:, 0]
    return np.where(plan.work_index >= 0, pool[np.maximum(plan.work_index, 0)], -1)


def pair_partials(
    q, k, v, plan: PagePairPlan, lengths=None, causal_pos=None, request_offsets=None,
    page_table=None, scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Normalized partial output and log-sum-exp of every work item, in float64.

    Parameters
    ----------
    q, k, v, lengths, causal_pos, request_offsets, page_table, scale
        As :func:`pageweaver_edu.core.attention.reference_attention`: q [N, H, D], k and v
        [num_pages, P, D].
    plan : PagePairPlan
        The work items of the same Top-K (:func:`~.work.plan_page_pairs`).

    Returns
    -------
    partial : numpy.ndarray of float64, shape [Wn, H, D]
        Softmax-weighted V over the item's visible tokens (zero when none is visible).
    lse : numpy.ndarray of float64, shape [Wn, H]
        ``log Σ exp(q·k·scale)`` over those tokens (``-inf`` when none is visible).
    """
    qa, ka, va = attention_inputs(q, k, v)
    n, heads, dim = qa.shape
    if n != plan.num_queries:
        raise PageWeaverInputError(f"q has N = {n} rows but the plan has {plan.num_queries}")
    offsets = as_request_offsets(request_offsets, n)
    phys = physical_pages(plan, offsets, page_table, len(ka))
    lens, causal = as_positions(lengths, n, "lengths"), as_positions(causal_pos, n, "causal_pos")
    scale = softmax_scale(scale, dim)
    page_size = ka.shape[1]
    offs = np.arange(page_size)
    wn = len(plan.work_query)
    partial, lse = np.zeros((wn, heads, dim)), np.full((wn, heads), -np.inf)
    kf, vf = ka.reshape(-1, dim), va.reshape(-1, dim)
    block = max(1, _CHUNK_ELEMENTS // (2 * page_size * max(dim, heads)))
    for lo in range(0, wn, block):
        hi = min(wn, lo + block)
        wq, lp = plan.work_query[lo:hi], plan.work_pages[lo:hi]
        token = (lp[:, :, None] * page_size + offs).reshape(hi - lo, -1)
        slot = (np.maximum(phys[lo:hi], 0)[:, :, None] * page_size + offs).reshape(hi - lo, -1)
        keep = np.repeat(lp >= 0, page_size, axis=1)
        if lens is not None:
            keep &= token < lens[wq][:, None]
        if causal is not None:
            keep &= token <= causal[wq][:, None]
        logits = np.einsum("whd,wtd->wht", qa[wq], kf[slot]) * scale
        logits = np.where(keep[:, None, :], logits, -np.inf)
        peak = logits.max(axis=2)
        safe = np.where(np.isfinite(peak), peak, 0.0)
        weights = np.exp(logits - safe[:, :, None])
        denom = weights.sum(axis=2)
        partial[lo:hi] = np.einsum("wht,wtd->whd", weights, vf[slot]) / np.where(
            denom > 0, denom, 1.0
        )[:, :, None]
        with np.errstate(divide="ignore"):
            lse[lo:hi] = np.where(denom > 0, safe + np.log(denom), -np.inf)
    return partial, lse


def combine(partial, lse, work_query, num_queries: int) -> np.ndarray:
    """Finish every query from its partials:
    ``o_i = Σ_w e^{lse_w − LSE_i} partial_w`` with ``LSE_i = log Σ_w e^{lse_w}`` over the items
    of query i.

    Parameters
    ----------
    partial : numpy.ndarray of float64, shape [Wn, H, D]
    lse : numpy.ndarray of float64, shape [Wn, H]
    work_query : numpy.ndarray of int64, shape [Wn]
        The query of every work item.
    num_queries : int
        N.

    Returns
    -------
    numpy.ndarray of float64, shape [N, H, D]
        Zero for queries without a visible token.
    """
    heads = lse.shape[1] if lse.ndim == 2 else 0
    peak = np.full((num_queries, heads), -np.inf)
    np.maximum.at(peak, work_query, lse)
    safe = np.where(np.isfinite(peak), peak, 0.0)
    weight = np.exp(lse - safe[work_query])
    denom = np.zeros((num_queries, heads))
    np.add.at(denom, work_query, weight)
    out = np.zeros((num_queries, heads, partial.shape[2]))
    np.add.at(out, work_query, weight[:, :, None] * partial)
    return out / np.where(denom > 0, denom, 1.0)[:, :, None]


def page_pair_attention(
    q, k, v, topk, lengths=None, causal_pos=None, request_offsets=None, page_table=None,
    scale: float | None = None,
) -> np.ndarray:
    """Sparse attention through page pairs: plan, partials, combine.

    Parameters and result as :func:`pageweaver_edu.core.attention.reference_attention`
    (q [N, H, D], k and v [num_pages, P, D], topk [N, K]; returns float64 [N, H, D]), and the
    same values up to rounding.
    """
    plan = plan_page_pairs(topk, request_offsets)
    partial, lse = pair_partials(
        q, k, v, plan, lengths, causal_pos, request_offsets, page_table, scale
    )
    return combine(partial, lse, plan.work_query, plan.num_queries)
