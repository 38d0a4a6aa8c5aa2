"""The report's figures: the series' own figure helpers applied to one capture, plus the few
views that only a report needs (support sizes, ρ_Q per W, the gain per chunk, the estimate).

Every figure goes through :func:`pageweaver_edu.notebook.style.style` (titles, axis titles
with units, marker symbols and dash styles that do not rely on colour).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..notebook.style import DASHES, SYMBOLS, style, thin_labels
from ..notebook.supports import mask_figure, profile_figure, update_preset_profile
from ..notebook.union import union_hist_figure, union_size_counts
from .analysis import CaptureAnalysis

#: Bar patterns per ordering (original, then each report window), so bars read without colour.
PATTERNS = ("", "/", "x", ".", "-")
#: At most this many chunks are drawn one by one (the rest is in the table).
MAX_CHUNKS_DRAWN = 200
#: Chapter 02's profile covers the first queries only (figures hold a few thousand points).
PROFILE_QUERIES = 2048


def support_figure(a: CaptureAnalysis) -> go.Figure:
    """How many queries select how many distinct pages: the histogram of |S_i|."""
    sizes = a.supports
    counts = np.bincount(sizes) if sizes.size else np.zeros(1, dtype=np.int64)
    x = np.flatnonzero(counts)
    fig = go.Figure(go.Bar(x=x, y=counts[x], text=[f"{c:,}" for c in counts[x]],
                           textposition="outside", name="queries"))
    k = a.capture.topk.shape[1]
    style(fig, "Support sizes |S<sub>i</sub>|: distinct valid pages per query",
          f"|S<sub>i</sub>| (pages; K = {k})", "queries (count)", legend_rows=0,
          subtitle=f"mean {sizes.mean() if sizes.size else 0:.2f}, "
                   f"{int((sizes == 0).sum()):,} empty rows, {int((sizes < k).sum()):,} rows "
                   "with padding or repeated ids")
    fig.update_xaxes(dtick=1 if len(counts) <= 40 else None)
    return fig.update_yaxes(rangemode="tozero")


def rho_window_figure(a: CaptureAnalysis) -> go.Figure:
    """ρ_Q = Σ|S_i| / Σ|U_G| for every W = g, 2g, … 512 (chapter 03's window curve)."""
    c = a.curve
    rho = [c["edges"] / v if v else None for v in c["visits"]]
    base = c["edges"] / c["original"] if c["original"] else None
    labels = thin_labels({"rho": rho}, fmt="{:.3f}")["rho"]
    fig = go.Figure()
    fig.add_scatter(x=c["windows"], y=rho, mode="lines+markers+text", text=labels,
                    textposition="top center", name="greedy regroup",
                    marker=dict(symbol=SYMBOLS[1], size=9))
    if base is not None:
        fig.add_scatter(x=[c["windows"][0], c["windows"][-1]], y=[base, base], mode="lines",
                        line=dict(dash="dash"), name=f"original order ({base:.3f})")
    style(fig, "ρ<sub>Q</sub> per regroup window W", "regroup window W (queries, log scale)",
          "ρ<sub>Q</sub> = Σ|S<sub>i</sub>| / Σ|U<sub>G</sub>|",
          subtitle=f"g = {a.group}; higher is more reuse (queries served per page walked)")
    vals = [v for v in rho + [base] if v is not None]
    if vals:
        lo, hi = min(vals), max(vals)
        fig.update_yaxes(range=[lo - 0.1 * (hi - lo or 1), hi + 0.2 * (hi - lo or 1)])
    return fig.update_xaxes(type="log", tickvals=c["windows"],
                            ticktext=[str(w) for w in c["windows"]])


def visits_c4_figure(a: CaptureAnalysis) -> go.Figure:
    """Union visits Σ|U_G| and C4 per ordering, as grouped bars with their values."""
    keys = list(a.stats)
    fig = go.Figure()
    for j, (name, attr) in enumerate((("union visits Σ|U<sub>G</sub>|", "union_visits"),
                                      ("C4 (page rounds of the four-query halves)", "c4"))):
        ys = [getattr(a.stats[k], attr) for k in keys]
        text = [f"{y:,}" if k == "original" else f"{y:,}<br>{_pct(y, ys[0])}"
                for k, y in zip(keys, ys, strict=True)]
        fig.add_bar(x=keys, y=ys, name=name, text=text, textposition="outside",
                    marker_pattern_shape=PATTERNS[j])
    style(fig, "Union visits and C4: original order and regrouped", "ordering",
          "page rounds (count)", height=420)
    top = max(max(s.union_visits, s.c4) for s in a.stats.values())
    return fig.update_layout(barmode="group").update_yaxes(range=[0, 1.25 * max(top, 1)])


def _pct(new: float, old: float) -> str:
    return "" if not old else f"{100.0 * (new - old) / old:+.1f}%"


def union_hist(a: CaptureAnalysis) -> go.Figure:
    """Chapter 05's |U_G| histogram, one line per ordering."""
    counts = union_size_counts(a.table.canonical, a.perms, a.table.request_offsets, a.group)
    mean = ", ".join(f"{k} {a.stats[k].union_visits / max(1, len(a.stats[k].union_sizes)):.1f}"
                     for k in counts)
    return union_hist_figure(counts, title=f"mean |U<sub>G</sub>|: {mean}")


def profile(a: CaptureAnalysis) -> go.Figure:
    """Chapter 02's per-group profile (Σ|S_i| and |U_G|) of the first queries."""
    n = min(PROFILE_QUERIES, a.capture.num_queries)
    fig = profile_figure(widget=False)
    update_preset_profile(fig, mask_figure(widget=False), a.table.canonical, n, a.group, 0)
    return fig


def gain_figure(a: CaptureAnalysis) -> go.Figure:
    """Union visits saved per (request, chunk) at each report window, in percent; chunks
    under the capacity fallback are marked (they keep the identity order: 0 %)."""
    chunks = a.chunks[:MAX_CHUNKS_DRAWN]
    labels = [f"r{c['request']}·[{c['start']}, {c['end']})" for c in chunks]
    fig = go.Figure()
    for j, key in enumerate(k for k in a.perms if k != "original"):
        ys = [(100.0 * (c["visits"]["original"] - c["visits"][key]) / c["visits"]["original"])
              if c["visits"]["original"] else 0.0 for c in chunks]
        text = ["fallback" if c["fallback"] else f"{y:.1f}%" for c, y in zip(chunks, ys,
                                                                             strict=True)]
        if len(chunks) <= 40:
            fig.add_bar(x=labels, y=ys, name=key, text=text, textposition="outside",
                        marker_pattern_shape=PATTERNS[j + 1])
        else:
            fig.add_scatter(x=labels, y=ys, name=key, mode="lines+markers",
                            marker_symbol=SYMBOLS[j + 1], line_dash=DASHES[j + 1])
    more = len(a.chunks) - len(chunks)
    fallback = sum(c["fallback"] for c in a.chunks)
    style(fig, "Gain per request and chunk: union visits saved by the regroup",
          "request · [first, last + 1) query rows of the chunk", "union visits saved (%)",
          height=440, subtitle=f"{len(a.chunks):,} chunk(s) in {a.capture.num_requests:,} "
                               f"request(s); {fallback:,} under the capacity fallback (B = "
                               f"{a.grouping.capacity} pages: identity order)"
                               + (f"; first {len(chunks)} drawn" if more else ""))
    fig.update_layout(barmode="group")
    return fig.update_xaxes(type="category")


def estimate_figure(est: dict) -> go.Figure:
    """The estimated complete-call times per ordering: precomputed ids and live regroup."""
    keys = list(est["rows"])
    fig = go.Figure()
    fig.add_bar(x=keys, y=[est["rows"][k]["attention_us"] for k in keys],
                name="precomputed ids (T0 / T_fixed)",
                text=[f"{est['rows'][k]['attention_us']:,.0f}" for k in keys],
                textposition="outside")
    online = [k for k in keys if "online_us" in est["rows"][k] and k != "original"]
    if online:
        fig.add_bar(x=online, y=[est["rows"][k]["online_us"] for k in online],
                    name="live regroup (T_online)", marker_pattern_shape="/",
                    text=[f"{est['rows'][k]['online_us']:,.0f}" for k in online],
                    textposition="outside")
    style(fig, "ESTIMATE of the fast Union8 kernel's complete-call time on an H200 (not a "
          "measurement)", "ordering", "estimated time (µs)", height=420,
          subtitle="from the recorded H200 files named above the figure; errors below it")
    top = max(r.get("online_us", r["attention_us"]) for r in est["rows"].values())
    return fig.update_layout(barmode="group").update_yaxes(range=[0, 1.2 * max(top, 1)])
