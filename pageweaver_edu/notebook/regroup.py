"""Figures and widget callbacks of chapter 03, greedy regroup (arXiv:2610.11201, Algorithm 1).

Every widget of the chapter is a ``go.FigureWidget`` built by a ``*_figure`` function and
redrawn in place by an ``update_*`` function (one ``batch_update``), so the tests and
``benchmarks/bench_widget_latency.py`` call the same code as the sliders:

* :func:`round_view_figure` / :func:`update_round_view` — one round of Algorithm 1: the
  window's membership table (``+`` = a page new to U, ``●`` = already in U), U before and
  after the pick, and the cost ``|S_j \\ U|`` of every candidate;
* :func:`grouping_view_figure` / :func:`update_grouping_view` — |U_G| per group, original
  order vs regrouped, for any Top-K array, g and W (returns a summary dict);
* :func:`window_curve_figure` / :func:`update_window_curve` — union visits vs W.

The regroup behind the widgets is :func:`pageweaver_edu.regroup.bitmap.greedy_regroup`; the
W sweep, the boundary figure and the fallback report are in
:mod:`pageweaver_edu.notebook.regroup_cases`; the ipywidgets wiring is in
:mod:`pageweaver_edu.notebook.regroup_apps`. :func:`trace_table` prints a traced run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..core.grouping import Grouping
from ..core.union_metrics import union_stats
from ..core.windows import window_table
from ..regroup.bitmap import regroup_table
from ..regroup.sets import GreedyTrace, greedy_regroup_sets
from .regroup_cases import window_curve
from .style import SYMBOLS, set_subtitle, set_title, style

#: The paper's g = 3 teaching example (one window, W = 6) and the g = 2 counterexample.
G3_EXAMPLE = [[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]]
G2_COUNTER = [[1, 2, 3, 4], [1, 2, 6, 7], [1, 2, 3, 5], [3, 5, 8, 9]]

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


def _round_state(steps: GreedySteps, k: int) -> dict:
    """Rows, columns, cell states, bars and labels of round k."""
    rnd = steps.trace.rounds[k]
    start, end = (int(x) for x in steps.windows[rnd.window])
    queries = list(range(start, end))
    pages = sorted(set().union(*(steps.sets[i] for i in queries)))
    col = {p: c for c, p in enumerate(pages)}
    before, after = rnd.union_before, rnd.union_after
    z = np.full((len(queries) + 2, len(pages)), _EMPTY, dtype=np.int64)
    for c, p in enumerate(pages):
        z[0, c] = _UNION if p in before else _EMPTY
        z[1, c] = _UNION if p in after else _EMPTY
    for row, i in enumerate(queries, start=2):
        for p in steps.sets[i]:
            z[row, col[p]] = _SHARED if p in before else _NEW
    # Status of every query of the window at this round; placed queries show their slot.
    slot_of = np.empty(len(steps.perm), dtype=np.int64)
    slot_of[steps.perm] = np.arange(len(steps.perm))
    group_of = {r.choice: r.group for r in steps.trace.rounds[:k] if r.window == rnd.window}
    status, cost_x = [], []
    for i in queries:
        cost = rnd.costs.get(i)
        if i == rnd.choice:
            what = "seed = min(R)" if rnd.is_seed else f"{cost} ← pick"
            status.append(f"{what} → slot {slot_of[i]}")
        elif i in group_of:
            where = "in G" if group_of[i] == rnd.group else "done"
            status.append(f"{where}, slot {slot_of[i]}")
        else:
            status.append("in R" if cost is None else f"{cost} · in R")
        cost_x.append(cost)
    labels = ["U before pick", "U after pick"] + [f"q{i}" for i in queries]
    return {"round": rnd, "pages": pages, "z": z, "labels": labels, "queries": queries,
            "status": status, "cost_x": cost_x}


def round_view_figure(steps: GreedySteps, k: int = 0) -> go.FigureWidget:
    """Membership table of the round's window (left) and candidate costs (right)."""
    fig = go.FigureWidget(make_subplots(rows=1, cols=2, column_widths=[0.62, 0.38],
                                        shared_yaxes=True, horizontal_spacing=0.03))
    fig.add_trace(go.Heatmap(colorscale=_COLORS, zmin=0, zmax=3, showscale=False, xgap=2,
                             ygap=2, texttemplate="%{text}", hoverinfo="skip"), 1, 1)
    fig.add_trace(go.Bar(orientation="h", name="cost |S<sub>j</sub> \\ U|",
                         marker=dict(color="#f4a582", line=dict(color="black", width=1))), 1, 2)
    fig.add_trace(go.Scatter(mode="text", textposition="middle right", showlegend=False,
                             hoverinfo="skip", cliponaxis=False), 1, 2)
    style(fig, "", "page id (+ new to U, ● in U)", "query of the window / union U",
          subtitle_lines=2, legend_rows=0)
    fig.update_layout(showlegend=False, margin=dict(l=110, r=20))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", side="bottom", row=1, col=1)
    fig.update_xaxes(title_text="cost |S<sub>j</sub> \\ U| (pages)", row=1, col=2)
    fig.update_yaxes(title_text="", row=1, col=2)
    update_round_view(fig, steps, k)
    return fig


def update_round_view(fig: go.FigureWidget, steps: GreedySteps, k: int) -> None:
    """Redraw ``fig`` (from :func:`round_view_figure`) for round ``k`` of ``steps``."""
    s = _round_state(steps, int(k))
    rnd, n_rounds = s["round"], len(steps.trace.rounds)
    text = np.vectorize(_MARK.get, otypes=[object])(s["z"])
    x = [str(p) for p in s["pages"]]
    y = s["labels"]
    queries_y = y[2:]
    widest = max([c for c in s["cost_x"] if c is not None] + [1])
    status_x = [0.15 * widest if c is None else c + 0.15 * widest for c in s["cost_x"]]
    q = f"q{rnd.choice}"
    if rnd.is_seed:
        head, why = f"seed {q}", f"{q} = min(R): U ← S<sub>{q}</sub>"
    else:
        head = f"pick {q}"
        why = f"{q} = argmin (cost, id), cost {rnd.costs[rnd.choice]}: U ← U ∪ S<sub>{q}</sub>"
    title = f"Round {int(k) + 1}/{n_rounds} · window {rnd.window}, group {rnd.group}: {head}"
    sub = (f"{why}<br>U after the pick = {_fmt_set(rnd.union_after, 16)} "
           f"(|U| = {len(rnd.union_after)})")
    with fig.batch_update():
        fig.data[0].update(z=s["z"], x=x, y=y, text=text)
        fig.data[1].update(x=s["cost_x"], y=queries_y,
                           marker_pattern_shape=["/" if q == rnd.choice else ""
                                                 for q in s["queries"]])
        fig.data[2].update(x=status_x, y=queries_y, text=s["status"])
        set_title(fig, title, sub)
        fig.layout.xaxis2.range = [0, 3.2 * widest]
        fig.layout.height = 190 + 26 * len(y)


def grouping_view_figure() -> go.FigureWidget:
    """|U_G| per group, original order and regrouped, as two line series."""
    fig = go.FigureWidget()
    for name, dash, sym in (("original order", "dot", SYMBOLS[0]),
                            ("greedy regroup", "solid", SYMBOLS[1])):
        fig.add_trace(go.Scatter(name=name, mode="lines+markers", line=dict(dash=dash),
                                 marker=dict(symbol=sym, size=5)))
    style(fig, "|U<sub>G</sub>| per group: original order vs greedy regroup",
          "group index G (execution order)", "|U<sub>G</sub>| (pages per group)",
          subtitle_lines=1)
    return fig


def grouping_summary(rows, perm, group: int, window: int, offsets=None, fallback=0) -> dict:
    """Union visits, edges and ρ_Q of the original order and of π."""
    before = union_stats(rows, None, offsets, group)
    after = union_stats(rows, perm, offsets, group)
    v0, v1 = before.union_visits, after.union_visits
    return {"n": int(rows.shape[0]), "g": group, "W": window, "groups": len(before.union_sizes),
            "edges": before.edges, "visits_original": v0, "visits_regrouped": v1,
            "change_pct": 100.0 * (v1 - v0) / v0 if v0 else 0.0,
            "rho_original": before.rho, "rho_regrouped": after.rho,
            "fallback_windows": int(fallback), "sizes_original": before.union_sizes,
            "sizes_regrouped": after.union_sizes,
            "first_groups": [perm[i:i + group].tolist() for i in range(0, min(3 * group,
                                                                              len(perm)), group)]}


def summary_text(s: dict) -> str:
    """One readable line for a :func:`grouping_summary` dict."""
    fb = f" · {s['fallback_windows']} window(s) kept in identity order (capacity fallback)"
    return (f"N = {s['n']:,}, g = {s['g']}, W = {s['W']}: {s['groups']:,} groups, "
            f"{s['edges']:,} edges · union visits {s['visits_original']:,} → "
            f"{s['visits_regrouped']:,} ({s['change_pct']:+.2f} %) · ρ_Q "
            f"{s['rho_original']:.3f} → {s['rho_regrouped']:.3f}"
            + (fb if s["fallback_windows"] else "")
            + f" · first groups of π: {s['first_groups']}")


def update_grouping_view(fig: go.FigureWidget, topk, g: int, W: int, **boundaries) -> dict:
    """Regroup ``topk`` (g, W) and redraw ``fig`` in place; returns :func:`grouping_summary`."""
    table = window_table(topk, Grouping(W, g), **boundaries)
    rows = table.canonical
    perm = regroup_table(table)
    s = grouping_summary(rows, perm, g, W, boundaries.get("request_offsets"),
                         int(table.fallback.sum()))
    idx = np.arange(s["groups"])
    mode = "lines+markers" if s["groups"] <= 128 else "lines"
    with fig.batch_update():
        fig.data[0].update(x=idx, y=s["sizes_original"], mode=mode)
        fig.data[1].update(x=idx, y=s["sizes_regrouped"], mode=mode)
        set_subtitle(fig, f"N = {s['n']:,}, g = {g}, W = {W}: union visits "
                          f"{s['visits_original']:,} → {s['visits_regrouped']:,} "
                          f"({s['change_pct']:+.1f} %)")
    return s


def window_curve_figure() -> go.FigureWidget:
    """Union visits vs W (log axis): regrouped points and the original-order level."""
    fig = go.FigureWidget()
    fig.add_trace(go.Scatter(name="greedy regroup", mode="lines+markers+text",
                             marker=dict(symbol=SYMBOLS[1], size=9), textposition="top center",
                             textfont=dict(size=11)))
    fig.add_trace(go.Scatter(name="original order", mode="lines", line=dict(dash="dash")))
    style(fig, "Union visits vs the regroup window W", "regroup window W (queries, log scale)",
          "union visits Σ<sub>G</sub> |U<sub>G</sub>| (pages)", subtitle_lines=1)
    fig.update_xaxes(type="log")
    return fig


def update_window_curve(fig: go.FigureWidget, topk, g: int, windows=None,
                        **boundaries) -> dict:
    """Compute :func:`pageweaver_edu.notebook.regroup_cases.window_curve` and redraw ``fig``."""
    c = window_curve(window_table(topk, Grouping(g, g), **boundaries), windows)
    base = c["original"]
    pct = [f"{100.0 * (v - base) / base:+.1f}%" if base else "" for v in c["visits"]]
    with fig.batch_update():
        fig.data[0].update(x=c["windows"], y=c["visits"], text=pct)
        fig.data[1].update(x=[c["windows"][0], c["windows"][-1]], y=[base, base])
        fig.layout.xaxis.tickvals = c["windows"]
        fig.layout.xaxis.ticktext = [str(w) for w in c["windows"]]
        lo, hi = min(c["visits"] + [base]), max(c["visits"] + [base])
        fig.layout.yaxis.range = [lo - 0.08 * (hi - lo or 1), hi + 0.16 * (hi - lo or 1)]
        set_subtitle(fig, f"N = {len(np.asarray(topk)):,}, g = {g}; original order {base:,}; "
                          "labels: change vs original")
    return c


def _fmt_set(pages, limit: int | None = None) -> str:
    ids = sorted(pages)
    more = ", …" if limit is not None and len(ids) > limit else ""
    return "{" + ", ".join(str(p) for p in ids[:limit]) + more + "}"


def trace_table(steps: GreedySteps) -> str:
    """Every round of a traced run as a fixed-width text table (deterministic).

    Columns: round, window, group, U before the pick, the cost ``|S_j \\ U|`` of every
    candidate j still in R, the choice (with its cost) and U after the pick.
    """
    cost_head = "costs |S_j \\ U|"
    head = (f"{'round':>5} {'win':>3} {'grp':>3}  {'U before':<18} {cost_head:<30} "
            f"{'choice':<9} U after")
    lines = [head, "-" * len(head)]
    for k, r in enumerate(steps.trace.rounds, start=1):
        costs = " ".join(f"q{j}:{c}" for j, c in r.costs.items()) or "—"
        choice = f"seed q{r.choice}" if r.is_seed else f"q{r.choice} ({r.costs[r.choice]})"
        lines.append(f"{k:>5} {r.window:>3} {r.group:>3}  {_fmt_set(r.union_before):<18} "
                     f"{costs:<30} {choice:<9} {_fmt_set(r.union_after)}")
    return "\n".join(lines)
