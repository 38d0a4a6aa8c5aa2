"""Chapter 03's special cases and the W sweep: boundaries, the capacity fallback, W = g…512.

* :func:`boundary_figure` — requests, chunks, windows and groups as bands over the positions
  of π, with one row of π per variant; the members of a group that mixes two (request,
  chunk) spans are marked ``✗``.
* :func:`crossing_groups` — the groups of a π whose members come from more than one span.
* :func:`fallback_report` — per window: regrouped, or kept in identity order and why.
* :func:`window_curve` — union visits of the greedy regroup for W = g, 2g, …
  (:func:`doubling_windows`), with one bitmap encoding for every W.
* :data:`DELTA`, :data:`GREEDY_PICK` — the chapter's self-checking exercises: the cost
  δ(j) = |S_j \\ U| and one greedy round with its tie-break (smallest id).

See arXiv:2610.11201, §4.1 (request- and chunk-local windows, capacity fallback).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..core.grouping import Grouping
from ..core.inputs import as_positions, as_request_offsets, positive_int
from ..core.union_metrics import union_stats
from ..core.windows import (
    WindowTable,
    chunk_table,
    group_table,
    span_max,
    split_spans,
    window_table,
)
from ..regroup.bitmap import regroup_table, window_bitmaps
from .exercises import Exercise, show_set
from .style import style


def _span_of(ids: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """Index of the ``[start, end)`` span holding each id (spans sorted, covering 0..N-1)."""
    return np.searchsorted(spans[:, 1], ids, side="right")


def crossing_groups(perm, spans, group: int, request_offsets=None) -> list[list[int]]:
    """Groups (lists of original ids, in π order) whose members lie in more than one span.

    Parameters
    ----------
    perm : array_like of int, shape [N]
    spans : array_like of int, shape [S, 2]
        ``[start, end)`` ranges of original ids, e.g. requests, chunks or windows.
    group : int
        g; groups are request-local blocks of g positions of π.
    request_offsets : array_like of int, optional
        Offsets that define the group blocks (default: one request).
    """
    perm = np.asarray(perm, dtype=np.int64)
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    blocks = group_table(as_request_offsets(request_offsets, len(perm)), group)
    out = []
    for first, size in blocks:
        members = perm[first:first + size]
        if len(np.unique(_span_of(members, spans))) > 1:
            out.append(members.tolist())
    return out


def boundary_figure(perms: dict, grouping: Grouping, request_offsets=None,
                    title: str = "") -> go.Figure:
    """Bands of requests, chunks, windows and groups over the positions of π, and rows of π.

    Parameters
    ----------
    perms : dict of str to array_like
        Row label → π; a member of a group that mixes two (request, chunk) spans reads ``q7✗``.
    grouping : Grouping
        W, g and the chunk size of the bands.
    request_offsets : array_like of int, shape [R + 1], optional
    title : str
    """
    first = np.asarray(next(iter(perms.values())))
    n = len(first)
    group = grouping.group
    offsets = as_request_offsets(request_offsets, n)
    chunks = chunk_table(offsets, grouping.chunk_size)
    windows = split_spans(chunks, grouping.window)
    blocks = group_table(offsets, group)
    bands = [("request", np.stack([offsets[:-1], offsets[1:]], 1), "request "),
             ("chunk", chunks, "chunk "), ("window", windows, "win "),
             ("group", np.stack([blocks[:, 0], blocks.sum(1)], 1), "G")]
    fig = go.Figure()
    for label, spans, prefix in bands:
        spans = spans[spans[:, 1] > spans[:, 0]]
        fig.add_trace(go.Bar(
            orientation="h", y=[label] * len(spans), base=spans[:, 0] - 0.5,
            x=spans[:, 1] - spans[:, 0], text=[f"{prefix}{i}" for i in range(len(spans))],
            textposition="inside", insidetextanchor="middle", name=label, showlegend=False,
            marker=dict(color=["#e0e0e0", "#bababa"] * (len(spans) // 2 + 1),
                        pattern_shape=["", "/"] * (len(spans) // 2 + 1),
                        line=dict(color="black", width=1.5)),
            hovertemplate=label + " %{text}: positions %{base}–%{x}<extra></extra>"))
    req_chunk = chunks  # (request, chunk) spans in id space
    for label, perm in perms.items():
        perm = np.asarray(perm, dtype=np.int64)
        bad = np.zeros(n, dtype=bool)
        for start, size in group_table(as_request_offsets(None, n), group):
            members = perm[start:start + size]
            if len(np.unique(_span_of(members, req_chunk))) > 1:
                bad[start:start + size] = True
        fig.add_trace(go.Scatter(
            x=np.arange(n), y=[label] * n, mode="text", showlegend=False,
            text=[f"q{q}✗" if b else f"q{q}" for q, b in zip(perm, bad, strict=True)],
            textfont=dict(size=12)))
    style(fig, title or "Where regrouping may move a query (✗ = group mixes two chunks or "
          "requests)", "position in π (a group is a block of g positions)",
          "spans · π (query per position)",
          height=110 + 42 * (4 + len(perms)), legend_rows=0)
    fig.update_layout(barmode="overlay", bargap=0.25)
    fig.update_yaxes(type="category", autorange="reversed",
                     categoryarray=[b[0] for b in bands] + list(perms))
    fig.update_xaxes(range=[-0.6, n - 0.4], dtick=1 if n <= 40 else None)
    return fig


def fallback_report(topk, grouping: Grouping, *, request_offsets=None, lengths=None,
                    page_size: int = 128) -> list[str]:
    """One line per window: regrouped, or identity because the chunk needs more than B pages.

    Parameters and boundaries as :func:`pageweaver_edu.core.windows.window_table`.

    Returns
    -------
    list of str
    """
    table = window_table(topk, grouping, request_offsets=request_offsets, lengths=lengths,
                         page_size=page_size)
    lens = as_positions(lengths, table.canonical.shape[0], "lengths")
    chunks = table.chunks
    by_id = span_max(table.canonical.max(axis=1, initial=-1), chunks) + 1
    by_len = None if lens is None else -(-span_max(lens, chunks) // page_size)
    owner = np.searchsorted(chunks[:, 0], table.windows[:, 0], side="right") - 1
    out = []
    for (start, end), fallback, c in zip(table.windows, table.fallback, owner, strict=True):
        need = int(by_id[c])
        why = f"largest page id {need - 1}"
        if by_len is not None:
            why += f", ceil(max L_i / P) = {int(by_len[c])}"
            need = max(need, int(by_len[c]))
        verdict = (f"identity (needs {need} pages > B = {grouping.capacity})" if fallback
                   else "regrouped")
        out.append(f"window [{start}, {end}) in chunk [{chunks[c, 0]}, {chunks[c, 1]}): {why} "
                   f"→ {verdict}")
    return out


def doubling_windows(group: int, largest: int = 512) -> list[int]:
    """W = g, 2g, 4g, … up to ``largest`` (every one a multiple of g)."""
    group = positive_int(group, "group size g")
    out, w = [], group
    while w <= largest:
        out.append(w)
        w *= 2
    return out


def window_curve(table: WindowTable, windows=None, perms=None) -> dict:
    """Union visits of the greedy regroup for several W over one window table's rows.

    Parameters
    ----------
    table : WindowTable
        Validated rows, chunks and capacity fallback (its own W does not matter).
    windows : sequence of int, optional
        Multiples of g; default :func:`doubling_windows` ``(g, 512)``.
    perms : dict of int to numpy.ndarray, optional
        π already computed for some W of this table (reused, not recomputed).

    Returns
    -------
    dict
        ``windows`` (list of int), ``visits`` (list of int, one per W), ``original`` (union
        visits of the original order) and ``edges``. The rows are encoded as bitmaps once;
        per W only the window table changes.
    """
    group = table.group
    windows = doubling_windows(group) if windows is None else [int(w) for w in windows]
    rows, offsets = table.canonical, table.request_offsets
    perms = perms or {}
    bits = None if set(windows) <= set(perms) else window_bitmaps(rows, table.regrouped_chunks)
    visits = []
    for w in windows:
        perm = perms[w] if w in perms else regroup_table(table.for_window(w), bits)
        visits.append(union_stats(rows, perm, offsets, group).union_visits)
    original = union_stats(rows, None, offsets, group)
    return {"windows": windows, "visits": visits, "original": original.union_visits,
            "edges": original.edges}


# --- exercises: δ(j) and one greedy round ----------------------------------------------------


def _valid(row) -> set[int]:
    return {int(p) for p in row if p >= 0}


def _delta_reference(row, union) -> int:
    return len(_valid(row) - {int(p) for p in union})


def _pick_reference(topk, remaining, union) -> int:
    return min(remaining, key=lambda j: (_delta_reference(topk[j], union), j))


def _row(rng: np.random.Generator, k: int, pages: int) -> list[int]:
    row = rng.integers(-1, pages, size=k)  # -1 is padding
    if k > 1 and rng.random() < 0.4:
        row[-1] = row[0]  # a repeated id
    return [int(p) for p in row]


def _delta_cases(rng: np.random.Generator):
    """Cases ``(row, union)``: padding, repeats, an empty row, an empty or covering union."""
    yield ([3, 4], {1, 2, 3}), {}          # q3 of the g = 3 example in round 3: δ = 1
    yield ([-1, -1, -1], {1, 2}), {}       # empty support: δ = 0
    yield ([5, 5, -1, 5], set()), {}       # repeats against an empty union: δ = 1
    yield ([8, 9, 10], {8, 9, 10, 11}), {}  # covered: δ = 0
    for _ in range(40):
        union = {int(p) for p in rng.integers(0, 10, size=int(rng.integers(0, 8)))}
        yield (_row(rng, int(rng.integers(1, 7)), 10), union), {}


def _pick_cases(rng: np.random.Generator):
    """Cases ``(topk, remaining, union)``; R is shuffled and ties are frequent."""
    g3 = [[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]]
    yield (g3, [1, 3, 4, 5], {1, 2, 3}), {}   # round 3 of the g = 3 example: q3
    yield (g3, [5, 4], {8, 9}), {}             # round 5, R listed backwards: tie → q4
    yield ([[1, 2], [-1, -1], [7, 8]], [2, 1], {1}), {}  # an empty support costs 0
    for _ in range(40):
        n = int(rng.integers(2, 9))
        topk = [_row(rng, 3, 6) for _ in range(n)]
        if rng.random() < 0.5:  # two candidates with the same pages: a certain tie
            a, b = (int(x) for x in rng.choice(n, size=2, replace=False))
            topk[max(a, b)] = list(topk[min(a, b)])
        remaining = [int(j) for j in rng.permutation(n)[:int(rng.integers(1, n + 1))]]
        union = {int(p) for p in rng.integers(0, 6, size=int(rng.integers(0, 5)))}
        yield (topk, remaining, union), {}


#: Chapter 03: the cost δ(j) = |S_j \ U| of one candidate.
def _show_delta_inputs(args, kwargs) -> str:
    row, union = args
    return f"row = {row} (S_j = {show_set(_valid(row))}), U = {show_set(union)}"


def _show_pick_inputs(args, kwargs) -> str:
    topk, remaining, union = args
    rows = "; ".join(f"S_{j} = {show_set(_valid(topk[j]))} (δ = {_delta_reference(topk[j], union)})"
                     for j in remaining)
    return f"U = {show_set(union)}, R = {list(remaining)}: {rows}"


DELTA = Exercise(
    "delta(j)",
    "Write delta(row, union): the number of distinct valid pages of the Top-K row "
    "(ids < 0 are padding) that are not in the union.",
    _delta_reference,
    _delta_cases,
    show_inputs=_show_delta_inputs,
)

#: Chapter 03: one greedy round (Algorithm 1, step 2) with its tie-break.
GREEDY_PICK = Exercise(
    "greedy pick",
    "Write greedy_pick(topk, remaining, union): the candidate j in remaining (a list, in "
    "any order) with the smallest delta, ties to the smallest id.",
    _pick_reference,
    _pick_cases,
    show_inputs=_show_pick_inputs,
)
