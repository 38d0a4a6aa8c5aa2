"""Figures and widget callbacks of chapter 03, greedy regroup (arXiv:2610.11201, Algorithm 1).

Every widget of the chapter is a ``go.FigureWidget`` built by a ``*_figure`` function and
redrawn in place by an ``update_*`` function (one ``batch_update``), so the tests call the
same code as the sliders (``benchmarks/bench_widget_latency.py`` times them in the browser):

* :func:`round_view_figure` / :func:`update_round_view` — one round of Algorithm 1 (in
  :mod:`pageweaver_edu.notebook.regroup_rounds`, re-exported here with :func:`greedy_steps`
  and :func:`trace_table`);
* :func:`grouping_view_figure` / :func:`update_grouping_view` — |U_G| per group, original
  order vs regrouped, for any Top-K array, g and W (returns a summary dict);
* :func:`window_curve_figure` / :func:`update_window_curve` — union visits vs W.

The regroup behind the widgets is :func:`pageweaver_edu.regroup.bitmap.greedy_regroup`; the
W sweep, the boundary figure and the fallback report are in
:mod:`pageweaver_edu.notebook.regroup_cases`; the ipywidgets wiring is in
:mod:`pageweaver_edu.notebook.regroup_apps`.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..core.grouping import Grouping
from ..core.union_metrics import union_stats
from ..core.windows import window_table
from ..regroup.bitmap import regroup_table
from .regroup_cases import window_curve
from .regroup_rounds import (  # noqa: F401  (re-exported: the chapter imports them from here)
    G2_COUNTER,
    G3_EXAMPLE,
    GreedySteps,
    greedy_steps,
    round_view_figure,
    trace_table,
    update_round_view,
)
from .style import SYMBOLS, set_subtitle, style


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


def _regrouped_summary(topk, g: int, W: int, **boundaries) -> dict:
    table = window_table(topk, Grouping(W, g), **boundaries)
    perm = regroup_table(table)
    return grouping_summary(table.canonical, perm, g, W, boundaries.get("request_offsets"),
                            int(table.fallback.sum()))


def update_grouping_view(fig: go.FigureWidget, topk, g: int, W: int, summary=None,
                         **boundaries) -> dict:
    """Regroup ``topk`` (g, W) and redraw ``fig`` in place; returns :func:`grouping_summary`
    (``summary``: that result for these rows, computed before, is drawn as it is)."""
    s = summary or _regrouped_summary(topk, g, W, **boundaries)
    idx = list(range(s["groups"]))
    mode = "lines+markers" if s["groups"] <= 128 else "lines"
    with fig.batch_update():
        fig.data[0].update(x=idx, y=np.asarray(s["sizes_original"]).tolist(), mode=mode)
        fig.data[1].update(x=idx, y=np.asarray(s["sizes_regrouped"]).tolist(), mode=mode)
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


def update_window_curve(fig: go.FigureWidget, topk, g: int, windows=None, curve=None,
                        **boundaries) -> dict:
    """Compute :func:`pageweaver_edu.notebook.regroup_cases.window_curve` and redraw ``fig``
    (``curve``: that result for these rows, computed before, is drawn as it is)."""
    c = curve or window_curve(window_table(topk, Grouping(g, g), **boundaries), windows)
    base = c["original"]
    pct = [f"{100.0 * (v - base) / base:+.1f}%" if base else "" for v in c["visits"]]
    with fig.batch_update():
        fig.data[0].update(x=list(c["windows"]), y=list(c["visits"]), text=pct)
        fig.data[1].update(x=[c["windows"][0], c["windows"][-1]], y=[base, base])
        fig.layout.xaxis.tickvals = c["windows"]
        fig.layout.xaxis.ticktext = [str(w) for w in c["windows"]]
        lo, hi = min(c["visits"] + [base]), max(c["visits"] + [base])
        fig.layout.yaxis.range = [lo - 0.08 * (hi - lo or 1), hi + 0.16 * (hi - lo or 1)]
        set_subtitle(fig, f"N = {len(np.asarray(topk)):,}, g = {g}; original order {base:,}; "
                          "labels: change vs original")
    return c


