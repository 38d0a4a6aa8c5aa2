"""Chapter 08's figures and tables: what online grouping costs and saves, from the records.

* :func:`waterfall_figure` — T0 → −S_exec → +C_online → T_online, ours beside the paper's;
* :func:`orderings` — Union8's complete-call time against union visits, every ordering;
* :func:`accounting_table` — T0, T_fixed, T_online, S_net and the baselines per preset.

The accounting is docs/definitions.md#cost-accounting; the paper's numbers are
docs/definitions.md#paper-numbers (arXiv:2610.11201, §5.4).
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..records import recorded_results
from .style import SYMBOLS, style
from .union8_live import CALL_ROWS

#: The paper's complete calls on L43/r1 at W128 (FP8 Union8), µs.
PAPER_CALLS_US = {"T0": 1366.33, "T_fixed": 1270.37, "T_online": 1307.92}
#: The presets bench_union8.py records with one KV head.
RECORDED_PRESETS = ("cap64k", "cap16k-high-overlap", "interleaved-64k")
#: (stats key, result row) of every ordering chapter 08 plots.
ORDERINGS = (("original", "union8_original"), ("w64", "union8_fixed_w64"),
             ("w128", "union8_fixed_w128"), ("w512", "union8_fixed_w512"),
             ("random", "union8_random_ids"))

#: Colour of each recorded preset in the orderings scatter.
PRESET_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a")
#: Waterfall colours: a saving (time down) green, a cost (time up) red, the calls grey.
SAVING, COST, CALL = "#1a9850", "#d73027", "#737373"

#: Legend name of each ordering.
ORDERING_NAMES = {"original": "original order", "w64": "W64", "w128": "W128", "w512": "W512",
                  "random": "random ids"}


def _label_side(x: float, xs: list) -> str:
    """Text position of a preset's label: left of the rightmost point, right of the others."""
    return "middle left" if x == max(xs) else "middle right"


def waterfall_trace(t0: float, tf: float, to: float, digits: int = 0) -> go.Waterfall:
    """T0 → −S_exec → +C_online → T_online as one waterfall (C_online with ``digits``): a
    step that lowers the time (a saving) green, one that raises it (a cost) red, the calls
    grey."""
    return go.Waterfall(
        x=["T0", "− S_exec", "+ C_online", "T_online"],
        measure=["absolute", "relative", "relative", "total"], y=[t0, tf - t0, to - tf, 0],
        text=[f"{t0:.0f}", f"{tf - t0:+.0f}", f"{to - tf:+.{digits}f}", f"{to:.0f}"],
        textposition="outside", decreasing={"marker": {"color": SAVING}},
        increasing={"marker": {"color": COST}}, totals={"marker": {"color": CALL}},
        connector={"line": {"color": "#bdbdbd", "dash": "dot"}})


def waterfall_figure(medians: dict, where: str) -> go.Figure:
    """Figure 6's accounting, S_net = S_exec − C_online: ours (``medians`` of the complete
    calls, measured ``where``) beside the paper's."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        f"ours: BF16 cluster kernel, cap64k, W128 ({where.split(':')[0]})",
        "paper: its FP8 Union8 kernel, L43/r1, W128 (Fig. 6)"))
    fig.add_trace(waterfall_trace(*(medians[name] for name in CALL_ROWS)), 1, 1)
    fig.add_trace(waterfall_trace(*PAPER_CALLS_US.values()), 1, 2)
    fig.update_layout(showlegend=False)
    fig.update_yaxes(rangemode="normal")
    return style(fig, "Figure 6's accounting: S_net = S_exec − C_online", "term of eq. 7",
                 "time (µs)", height=420)


def orderings(presets=RECORDED_PRESETS) -> tuple[go.Figure, str]:
    """Complete-call time against union visits for every ordering (and Union4), recorded.

    Returns
    -------
    figure : plotly.graph_objects.Figure
        One marker series per ordering (symbol and legend), each preset named once.
    table : str
        Markdown: union visits, C4, median µs and TFLOP/s on the C4 work per run.
    """
    lines = ["| preset | run | union visits | C4 | median µs | TFLOP/s (C4) |",
             "|---|---|--:|--:|--:|--:|"]
    points = {key: ([], [], []) for key, _ in ORDERINGS}  # x, y, preset per ordering
    for name in presets:
        r = recorded_results(f"union8_{name}_h200")
        m = {x["name"]: x for x in r["results"]}
        st = r["stats"]
        for key, label in ORDERINGS:
            for column, value in zip(points[key], (st[key]["union_visits"],
                                                   m[label]["median_us"], name), strict=True):
                column.append(value)
            lines.append(f"| {name} | {label} | {st[key]['union_visits']:,} | {st[key]['c4']:,} "
                         f"| {m[label]['median_us']:,.0f} | {m[label]['tflops_c4']:.0f} |")
        u4 = m["union4_original"]
        lines.append(f"| {name} | union4_original | – | {st['original_g4']['c4']:,} "
                     f"| {u4['median_us']:,.0f} | {u4['tflops_c4']:.0f} |")
    return _orderings_figure(points, presets), "\n".join(lines)


def _orderings_figure(points: dict, presets) -> go.Figure:
    """One colour and one dotted line per preset through its orderings (named at its
    original-order point), one marker symbol per ordering (legend entries in grey)."""
    fig = go.Figure()
    symbol = dict(zip(ORDERING_NAMES, SYMBOLS, strict=False))
    originals = points["original"][0]
    for name, colour in zip(presets, PRESET_COLOURS, strict=False):
        pts = sorted((xs[i], ys[i], key) for key, (xs, ys, ns) in points.items()
                     for i in range(len(ns)) if ns[i] == name)
        x0 = next(x for x, _, key in pts if key == "original")
        fig.add_scatter(
            x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers+text",
            name=name, legendgroup="presets", legendgrouptitle_text="preset (colour)",
            text=[name if key == "original" else "" for _, _, key in pts],
            textposition=_label_side(x0, originals), textfont={"color": colour},
            line={"color": colour, "width": 1, "dash": "dot"},
            marker={"symbol": [symbol[key] for *_, key in pts], "size": 11, "color": colour,
                    "line_width": 1},
            customdata=[ORDERING_NAMES[key] for *_, key in pts],
            hovertemplate=f"{name}, " + "%{customdata}: %{x:,} union visits, %{y:,.0f} µs"
                          "<extra></extra>")
    for key, label in ORDERING_NAMES.items():  # the symbol legend
        fig.add_scatter(x=[None], y=[None], mode="markers", name=label,
                        legendgroup="orderings", legendgrouptitle_text="ordering (marker)",
                        marker={"symbol": symbol[key], "size": 10, "color": "#636363"})
    style(fig, "BF16 cluster kernel: complete-call time vs union visits (H200, 1 KV head)",
          "union visits Σ|U_G|", "median time (µs)", height=460, legend_rows=0,
          subtitle="colour and dotted line: the preset (named at its original order); "
                   "marker: the ordering; exact values in the table below")
    # two legend groups (presets, orderings) stack: beside the plot, not above it
    fig.update_layout(legend={"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1,
                              "yanchor": "top"}, margin_r=190)
    return fig


def accounting_table(presets=RECORDED_PRESETS) -> str:
    """Markdown: T0, T_fixed, T_online, S_net (W64, W128), the regroup alone and the baselines
    per recorded preset, and cap64k with 8 KV heads."""
    lines = ["| preset | T0 µs | T_fixed W128 | T_online W128 | S_net W64 | S_net W128 "
             "| regroup W128 alone | gather µs | flex µs | × gather | × flex |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    stems = {name: f"union8_{name}_h200" for name in presets}
    stems["cap64k (8 KV heads)"] = "union8_cap64k_h8_h200"
    for name, stem in stems.items():
        r = recorded_results(stem)
        m = {x["name"]: x["median_us"] for x in r["results"]}
        a = r["accounting"]
        flex = next((x["median_us"] for x in r["results"] if x["name"].startswith("flex")), None)
        lines.append(
            f"| {name} | {m['union8_original']:,.0f} | {m['union8_fixed_w128']:,.0f} "
            f"| {m['union8_online_w128']:,.0f} | {a['w64']['S_net_us']:+.0f} "
            f"| {a['w128']['S_net_us']:+.0f} | {m['gpu_regroup_w128']:.0f} "
            f"| {m['gather_reference']:,.0f} | {'–' if flex is None else f'{flex:,.0f}'} "
            f"| {r['summary']['speedup_vs_gather']} "
            f"| {r['summary'].get('speedup_vs_flex', '–')} |")
    return "\n".join(lines)
