"""Chapter 10's studies of the questions the paper leaves open (docs/definitions.md#open-questions).

* (a) how far greedy is from the optimum: :func:`small_window_study` / :func:`small_window_table`
  and :func:`gap_figure`; where it loses to the original order: :func:`window_sweep` /
  :func:`losing_windows_table`;
* (b) C4-aware and subgroup-first grouping: :func:`cta_balances`, :func:`balance_table`,
  :func:`variant_figure`, :func:`c4_weight_app`.

The cost side (modelled and recorded S_net, the capacity beyond 512 pages and the live cell) is
in :mod:`.open_questions_cost`.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..core.grouping import Grouping
from ..core.union_metrics import cta_balance, union_stats, window_visits
from ..regroup.bitmap import greedy_regroup
from ..regroup.optimal import optimal_regroup
from ..regroup.variants import c4_greedy_regroup, subgroup_first_regroup
from .style import set_subtitle, style, widget_ready

PRESETS = ("cap64k", "cap16k-high-overlap", "interleaved-32k", "interleaved-64k")
#: (W, g, windows per preset) of the exhaustive comparison.
SMALL = ((16, 8, 64), (12, 4, 64), (8, 2, 96))
WINDOWS = (16, 32, 64, 128, 256, 512)
BALANCE_KEYS = ("union_visits", "c4", "critical", "one_sided")
BALANCE_LABELS = ["union visits", "C4", "critical CTA rounds", "one-sided pages"]


def small_window_study(caps: dict, presets=PRESETS, small=SMALL) -> dict:
    """Union visits per window of the original order, greedy and the optimum.

    Returns
    -------
    dict
        ``(preset, W, g)`` -> ``{"original", "greedy", "optimal"}`` arrays of visits per window
        (the first ``W · windows`` queries of each preset).
    """
    out = {}
    for name in presets:
        for w, g, m in small:
            t = caps[name].topk[: w * m]
            out[name, w, g] = {k: window_visits(t, p, Grouping(w, g)) for k, p in (
                ("original", None), ("greedy", greedy_regroup(t, Grouping(w, g))),
                ("optimal", optimal_regroup(t, Grouping(w, g))))}
    return out


def small_window_table(small: dict) -> str:
    """Totals, the greedy's gap to the optimum and how often it matches or loses, per case."""
    lines = [f"{'':26}{'windows':>8}{'original':>9}{'greedy':>8}{'optimal':>8}{'gap %':>7}"
             f"{'share':>7}{'greedy=opt':>11}{'greedy>orig':>12}{'opt<orig':>9}"]
    for (name, w, g), v in small.items():
        o, gr, op = (v[k].sum() for k in ("original", "greedy", "optimal"))
        share = f"{(o - gr) / (o - op):.0%}" if o > op else "-"
        lines.append(f"{name:20}W{w:<2}/g{g}{len(v['original']):>8}{o:>9,}{gr:>8,}{op:>8,}"
                     f"{100 * (gr - op) / op:>7.2f}{share:>7}"
                     f"{(v['greedy'] == v['optimal']).mean():>10.0%}"
                     f"{int((v['greedy'] > v['original']).sum()):>12}"
                     f"{(v['optimal'] < v['original']).mean():>9.0%}")
    return "\n".join(lines)


def gap_figure(small: dict, names=("cap64k", "cap16k-high-overlap"), w: int = 16,
               g: int = 8) -> go.Figure:
    """Histogram of greedy − optimal union visits per window."""
    fig = go.Figure()
    for j, name in enumerate(names):
        v = small[name, w, g]
        vals, counts = np.unique(v["greedy"] - v["optimal"], return_counts=True)
        fig.add_trace(go.Bar(x=vals, y=counts, name=name, text=counts, textposition="outside",
                             marker_pattern_shape=["", "/"][j]))
    style(fig, f"W{w}, g = {g}: union visits the greedy leaves on the table, per window",
          "greedy − optimal union visits in a window (pages)", "windows (count)")
    fig.update_layout(barmode="group")
    return fig


def window_sweep(caps: dict, names, windows=WINDOWS) -> dict:
    """Per preset: ``"original"`` -> (union stats, None) and per W -> (union stats of the
    greedy π, greedy − original union visits per window)."""
    sweep = {}
    for name in names:
        cap = caps[name]
        orig = union_stats(cap.topk)
        sweep[name] = {"original": (orig, None)}
        for w in windows:
            stats = union_stats(cap.topk, greedy_regroup(cap.topk, Grouping(w),
                                                         **cap.regroup_kwargs()))
            diff = (window_visits(cap.topk, None, Grouping(w), union_sizes=stats.union_sizes)
                    - window_visits(cap.topk, None, Grouping(w), union_sizes=orig.union_sizes))
            sweep[name][w] = (stats, diff)
    return sweep


def losing_windows_table(sweep: dict, windows=WINDOWS) -> str:
    """Windows where greedy has more union visits than the original order, per W."""
    lines = ["windows where greedy > original / windows, per W (full presets, g = 8)",
             f"{'':22}" + "".join(f"{'W' + str(w):>12}" for w in windows)]
    for name, runs in sweep.items():
        lines.append(f"{name:22}" + "".join(
            f"{str(int((runs[w][1] > 0).sum())) + '/' + str(len(runs[w][1])):>12}"
            for w in windows))
    return "\n".join(lines)


#: The π of each alternative on a prefix of W128 windows.
VARIANTS = {
    "original": lambda t: None,
    "greedy": lambda t: greedy_regroup(t, Grouping(128)),
    "C4-aware w=1": lambda t: c4_greedy_regroup(t, Grouping(128), 1.0),
    "subgroup-first": lambda t: subgroup_first_regroup(t, Grouping(128)),
}


def cta_balances(caps: dict, presets=PRESETS, n: int = 3072) -> dict:
    """:func:`~pageweaver_edu.core.union_metrics.cta_balance` of every variant on the first
    ``n`` queries of each preset."""
    return {name: {v: cta_balance(caps[name].topk[:n], f(caps[name].topk[:n]))
                   for v, f in VARIANTS.items()} for name in presets}


def balance_table(bal: dict) -> str:
    """Per preset and variant: the change against greedy of visits, C4, the busier CTA's
    rounds and the one-sided pages, and the imbalance."""
    lines = [f"{'':36}{'visits':>9}{'C4':>9}{'critical':>10}{'one-sided':>11}{'imbalance':>11}"]
    for name, runs in bal.items():
        ref = runs["greedy"]
        for v, b in runs.items():
            rel = "".join(f"{100 * (b[k] - ref[k]) / ref[k]:>+9.2f}%" for k in BALANCE_KEYS[:3])
            lines.append(f"{name + ' / ' + v:36}{rel[:10]}{rel[10:20]}{rel[20:]:>11}"
                         f"{100 * (b['one_sided'] - ref['one_sided']) / ref['one_sided']:>+10.2f}%"
                         f"{b['imbalance']:>11.4f}")
    return "\n".join(lines)


def variant_figure(bal: dict, preset: str = "cap64k") -> go.Figure:
    """Bars: the change of each balance quantity against greedy, per variant."""
    fig = go.Figure()
    for j, v in enumerate(["C4-aware w=1", "subgroup-first"]):
        ys = [100 * (bal[preset][v][k] - bal[preset]["greedy"][k]) / bal[preset]["greedy"][k]
              for k in BALANCE_KEYS]
        fig.add_trace(go.Bar(x=BALANCE_LABELS, y=ys, name=v, text=[f"{y:+.2f}%" for y in ys],
                             textposition="outside", marker_pattern_shape=["", "/"][j]))
    style(fig, f"{preset} prefix (3,072 queries), W128: change vs greedy", "quantity",
          "change vs Algorithm 1 (%)")
    fig.update_layout(barmode="group")
    return fig


def c4_weight_app(topk):
    """The C4-aware greedy against Algorithm 1 with a slider for its weight w; the change at
    each of the slider's seven stops is computed when the app is built, so a move only
    redraws."""
    import ipywidgets as widgets

    ref = cta_balance(topk, greedy_regroup(topk, Grouping(128)))
    fig = go.FigureWidget([go.Bar(x=BALANCE_LABELS, y=[0, 0, 0, 0], textposition="outside",
                                  name="C4-aware")])
    style(fig, "C4-aware greedy vs Algorithm 1", "quantity", "change (%)", subtitle_lines=1)
    slider = widgets.SelectionSlider(options=[0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0], value=1.0,
                                     description="weight w")

    change = {}  # w -> the change (%) of each balance quantity
    for w in slider.options:
        b = cta_balance(topk, c4_greedy_regroup(topk, Grouping(128), w))
        change[w] = [100 * (b[k] - ref[k]) / ref[k] for k in BALANCE_KEYS]

    def update(_=None):
        ys = change[slider.value]
        with fig.batch_update():
            fig.data[0].y, fig.data[0].text = ys, [f"{y:+.2f}%" for y in ys]
            set_subtitle(fig, f"weight w = {slider.value} · cap64k[:{len(topk)}], W128")

    slider.observe(update, names="value")
    update()
    return widgets.VBox([slider, widget_ready(fig)])
