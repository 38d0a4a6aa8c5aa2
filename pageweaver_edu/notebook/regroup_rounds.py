"""Chapter 03's round-by-round view of Algorithm 1 (arXiv:2610.11201, §3.3).

* :func:`greedy_steps` — a traced run of the set reference, ready to be stepped through;
* :func:`round_view_figure` / :func:`update_round_view` — one round: the window's membership
  table (``+`` = a page new to U, ``●`` = already in U), U before and after the pick, and the
  cost δ(j) = |S_j \\ U| of every candidate j;
* :func:`trace_table` — every round of a traced run as fixed-width text.

A window of real queries selects far more pages than a table can show (the first 16 queries
of ``cap64k`` select 105 distinct pages). When a window has more than :data:`MAX_COLUMNS`
pages, the table draws only the pages of the query the round takes (the seed or the pick:
the only pages that enter U in this round) and counts every other page of a row in two
columns, ``other +`` and ``other ●``; a candidate's ``+`` cells plus its ``other +`` count are
always its δ(j). Re-exported by :mod:`pageweaver_edu.notebook.regroup`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..core.grouping import Grouping
from ..core.windows import window_table
from ..regroup.sets import GreedyTrace, greedy_regroup_sets
from .style import set_title, style

#: The paper's g = 3 teaching example (one window, W = 6) and the g = 2 counterexample.
G3_EXAMPLE = [[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]]
G2_COUNTER = [[1, 2, 3, 4], [1, 2, 6, 7], [1, 2, 3, 5], [3, 5, 8, 9]]
#: Most page columns drawn one by one; a wider window is drawn as the round's pages + counts.
MAX_COLUMNS = 24
OTHER_NEW, OTHER_IN_U = "other +", "other ●"

# Heatmap cell states of the round view; the text on each cell says the same thing.
_EMPTY, _NEW, _SHARED, _UNION = 0, 1, 2, 3
_COLORS = [[0.0, "#ffffff"], [0.249, "#ffffff"], [0.25, "#f4a582"], [0.499, "#f4a582"],
           [0.5, "#92c5de"], [0.749, "#92c5de"], [0.75, "#4d4d4d"], [1.0, "#4d4d4d"]]
_MARK = {_EMPTY: "", _NEW: "+", _SHARED: "●", _UNION: "U"}


@dataclass(frozen=True)
class GreedySteps:
    """A traced greedy run, ready to be stepped through.

    Attributes
    ----------
    sets : list of frozenset of int
        S_i per original query id.
    trace : GreedyTrace
        Every round (:func:`pageweaver_edu.regroup.sets.greedy_regroup_sets`).
    perm : numpy.ndarray of int32, shape [N]
        π.
    windows : numpy.ndarray of int64, shape [M, 2]
        ``[start, end)`` of every window.
    group : int
        g.
    """

    sets: list
    trace: GreedyTrace
    perm: np.ndarray
    windows: np.ndarray
    group: int


def greedy_steps(topk, grouping: Grouping, **boundaries) -> GreedySteps:
    """Run Algorithm 1 with ``trace=True`` and keep what the round view needs.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
    grouping : Grouping
    **boundaries
        ``request_offsets``, ``lengths``, ``page_size`` as for
        :func:`pageweaver_edu.regroup.sets.greedy_regroup_sets`.

    Returns
    -------
    GreedySteps
    """
    table = window_table(topk, grouping, **boundaries)
    perm, trace = greedy_regroup_sets(topk, grouping, trace=True, **boundaries)
    sets = [frozenset(int(p) for p in row if p >= 0) for row in table.canonical]
    return GreedySteps(sets, trace, perm, table.windows, table.group)


def member_positions(steps: GreedySteps) -> list[int]:
    """The member position r each round's choice takes in its group (0 for a seed)."""
    count: dict[tuple[int, int], int] = {}
    out = []
    for rnd in steps.trace.rounds:
        key = (rnd.window, rnd.group)
        out.append(count.get(key, 0))
        count[key] = out[-1] + 1
    return out


def _cell(state: int, count: int | None = None) -> tuple[int, str]:
    if count is None:
        return state, _MARK[state]
    return (state if count else _EMPTY), (f"{_MARK[state]}{count}" if count else "")


def _round_state(steps: GreedySteps, step: int) -> dict:
    """Columns, cell states and texts, bars and labels of round ``step`` (0-based)."""
    rnd = steps.trace.rounds[step]
    start, end = (int(x) for x in steps.windows[rnd.window])
    queries = list(range(start, end))
    every = sorted(set().union(*(steps.sets[i] for i in queries)))
    folded = len(every) > MAX_COLUMNS
    pages = sorted(steps.sets[rnd.choice]) if folded else every
    shown = set(pages)
    before, after = rnd.union_before, rnd.union_after
    rows = [[_cell(_UNION if p in u else _EMPTY) for p in pages] for u in (before, after)]
    for i in queries:
        rows.append([_cell(_SHARED if p in before else _NEW) if p in steps.sets[i]
                     else _cell(_EMPTY) for p in pages])
    if folded:  # count what is not drawn: + (new to U) and ● (in U) per row
        rows[0] += [_cell(_EMPTY, 0), _cell(_UNION, len(before - shown))]
        rows[1] += [_cell(_EMPTY, 0), _cell(_UNION, len(after - shown))]
        for row, i in zip(rows[2:], queries, strict=True):
            hidden = steps.sets[i] - shown
            row += [_cell(_NEW, len(hidden - before)), _cell(_SHARED, len(hidden & before))]
    z = np.array([[c[0] for c in row] for row in rows], dtype=np.int64)
    text = np.array([[c[1] for c in row] for row in rows], dtype=object)
    positions = member_positions(steps)
    placed = {r.choice: (r.group, positions[n]) for n, r in enumerate(steps.trace.rounds[:step])
              if r.window == rnd.window}
    status, cost_x = [], []
    for i in queries:
        cost = rnd.costs.get(i)
        if i == rnd.choice:
            what = "seed = min(R)" if rnd.is_seed else f"δ = {cost} ← pick"
            status.append(f"{what} → r = {positions[step]}")
        elif i in placed:
            grp, r = placed[i]
            status.append(f"in G, r = {r}" if grp == rnd.group else f"group {grp}, r = {r}")
        else:
            status.append("in R" if cost is None else f"δ = {cost} · in R")
        cost_x.append(cost)
    labels = ["U before pick", "U after pick"] + [f"q{i}" for i in queries]
    columns = [str(p) for p in pages] + ([OTHER_NEW, OTHER_IN_U] if folded else [])
    return {"round": rnd, "columns": columns, "z": z, "text": text, "labels": labels,
            "queries": queries, "status": status, "cost_x": cost_x,
            "hidden": len(every) - len(pages)}


def round_view_figure(steps: GreedySteps, step: int = 0) -> go.FigureWidget:
    """Membership table of the round's window (left) and candidate costs δ(j) (right)."""
    fig = go.FigureWidget(make_subplots(rows=1, cols=2, column_widths=[0.62, 0.38],
                                        shared_yaxes=True, horizontal_spacing=0.03))
    fig.add_trace(go.Heatmap(colorscale=_COLORS, zmin=0, zmax=3, showscale=False, xgap=2,
                             ygap=2, texttemplate="%{text}", hoverinfo="skip"), 1, 1)
    fig.add_trace(go.Bar(orientation="h", name="δ(j) = |S<sub>j</sub> \\ U|",
                         marker=dict(color="#f4a582", line=dict(color="black", width=1))), 1, 2)
    fig.add_trace(go.Scatter(mode="text", textposition="middle right", showlegend=False,
                             hoverinfo="skip", cliponaxis=False), 1, 2)
    style(fig, "", "page p (+ new to U, ● in U)", "query of the window / union U",
          subtitle_lines=2, legend_rows=0)
    fig.update_layout(showlegend=False, margin=dict(l=110, r=20))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", side="bottom", row=1, col=1)
    fig.update_xaxes(title_text="δ(j) = |S<sub>j</sub> \\ U| (pages)", row=1, col=2)
    fig.update_yaxes(title_text="", row=1, col=2)
    update_round_view(fig, steps, step)
    return fig


def update_round_view(fig: go.FigureWidget, steps: GreedySteps, step: int) -> None:
    """Redraw ``fig`` (from :func:`round_view_figure`) for round ``step`` (0-based)."""
    s = _round_state(steps, int(step))
    rnd, n_rounds = s["round"], len(steps.trace.rounds)
    y = s["labels"]
    queries_y = y[2:]
    widest = max([c for c in s["cost_x"] if c is not None] + [1])
    status_x = [0.15 * widest if c is None else c + 0.15 * widest for c in s["cost_x"]]
    q = f"q{rnd.choice}"
    if rnd.is_seed:
        head, why = f"seed {q}", f"{q} = min(R): U ← S<sub>{q}</sub>"
    else:
        head = f"pick {q}"
        why = f"{q} = argmin (δ(j), j), δ = {rnd.costs[rnd.choice]}: U ← U ∪ S<sub>{q}</sub>"
    title = f"Round {int(step) + 1}/{n_rounds} · window {rnd.window}, group {rnd.group}: {head}"
    sub = (f"{why}<br>U after the pick = {_fmt_set(rnd.union_after, 16)} "
           f"(|U| = {len(rnd.union_after)})")
    x_title = "page p (+ new to U, ● in U)"
    if s["hidden"]:
        x_title = (f"pages p of {q} (+ new to U, ● in U)<br>other +, other ●: the window's "
                   f"{s['hidden']} other pages, counted per row")
    with fig.batch_update():
        fig.data[0].update(z=s["z"].tolist(), x=list(s["columns"]), y=y,
                           text=s["text"].tolist())
        fig.data[1].update(x=s["cost_x"], y=queries_y,
                           marker_pattern_shape=["/" if q == rnd.choice else ""
                                                 for q in s["queries"]])
        fig.data[2].update(x=status_x, y=queries_y, text=s["status"])
        set_title(fig, title, sub)
        fig.layout.xaxis.title.text = x_title
        fig.layout.xaxis2.range = [0, 3.2 * widest]
        fig.layout.height = 190 + 26 * len(y)


def _fmt_set(pages, limit: int | None = None) -> str:
    ids = sorted(pages)
    more = ", …" if limit is not None and len(ids) > limit else ""
    return "{" + ", ".join(str(p) for p in ids[:limit]) + more + "}"


def trace_table(steps: GreedySteps) -> str:
    """Every round of a traced run as a fixed-width text table (deterministic).

    Columns: round, window, group, U before the pick, the cost ``δ(j) = |S_j \\ U|`` of every
    candidate j still in R, the choice (with its cost) and U after the pick.
    """
    cost_head = "δ(j) = |S_j \\ U|"
    head = (f"{'round':>5} {'win':>3} {'grp':>3}  {'U before':<18} {cost_head:<30} "
            f"{'choice':<9} U after")
    lines = [head, "-" * len(head)]
    for number, r in enumerate(steps.trace.rounds, start=1):
        costs = " ".join(f"q{j}:{c}" for j, c in r.costs.items()) or "—"
        choice = f"seed q{r.choice}" if r.is_seed else f"q{r.choice} ({r.costs[r.choice]})"
        lines.append(f"{number:>5} {r.window:>3} {r.group:>3}  {_fmt_set(r.union_before):<18} "
                     f"{costs:<30} {choice:<9} {_fmt_set(r.union_after)}")
    return "\n".join(lines)
