"""Byte accounting of page pairs beside Union8: the partial workspace and a traffic model."""

from __future__ import annotations

from ..core.inputs import as_int, positive_int


def partial_bytes(
    partials: int, heads: int = 16, dim: int = 128, out_bytes: int = 4, lse_bytes: int = 4
) -> int:
    """Workspace of ``partials`` partial outputs: ``H·D`` values plus ``H`` log-sum-exps each.

    Parameters
    ----------
    partials : int
        Work items.
    heads, dim : int
        H and D.
    out_bytes, lse_bytes : int
        Bytes per partial value and per log-sum-exp.

    Returns
    -------
    int
        Bytes.
    """
    partials, out_bytes, lse_bytes = (as_int(x, name) for x, name in (
        (partials, "partials"), (out_bytes, "out_bytes"), (lse_bytes, "lse_bytes")))
    heads, dim = positive_int(heads, "heads H"), positive_int(dim, "dim D")
    return partials * (heads * dim * out_bytes + heads * lse_bytes)


def traffic_model(n: int, union_visits: int, stats: dict, heads: int = 16, dim: int = 128,
                  kv_page: int = 32768, row_bytes: int = 2, partial_out: int = 4) -> dict:
    """Logical bytes per KV head of Union8 and of page pairs — a model, not a measurement.

    Union8 loads a KV page per union visit (``kv_page`` = FP8 K + V, 32 KiB at P = d = 128),
    reads Q and writes O once per query. Page pairs load every page once (a unit keeps its
    pages resident), read Q once per work item, write each partial + LSE and read it back in
    the combine, then write O.

    Parameters
    ----------
    n : int
        N queries.
    union_visits : int
        Σ|U_G| of the Union8 order.
    stats : dict
        ``pages`` (selected pages) and ``work_items`` of the page-pair plan.
    heads, dim : int
        H and D.
    kv_page : int
        Bytes of one page of K and V.
    row_bytes : int
        Bytes per Q / O value.
    partial_out : int
        Bytes per partial value.

    Returns
    -------
    dict
        ``union8`` and ``page_pairs``: bytes.
    """
    row = heads * dim * row_bytes
    part = partial_bytes(1, heads, dim, partial_out)
    return {
        "union8": int(union_visits) * kv_page + 2 * n * row,
        "page_pairs": stats["pages"] * kv_page + stats["work_items"] * (row + 2 * part) + n * row,
    }
