"""Figures and widgets of chapters 00–02: the data flow, token strips, group masks.
Every widget is a ``go.FigureWidget`` redrawn by a plain ``update_*`` function inside
``fig.batch_update()``, so notebook callbacks, tests and a latency benchmark run the same
vectorized code without a browser. Definitions follow arXiv:2610.11201 (eq. 1–4).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from .supports import support_sizes, token_support
from .union_metrics import membership_mask, union_stats
from .viz_style import style

#: (number, topic, where it runs) for the whole series.
CHAPTERS = (
    ("00", "Overview: the map, the data flow, a first end-to-end run", "CPU"),
    ("01", "Support sets: S_i, P, L_i, c_i and the attended tokens A_i", "CPU"),
    ("02", "Query union: U_G, masks M_{i,p}, ρ_Q and the useful tile fraction", "CPU"),
    ("03", "Greedy regroup: Algorithm 1 round by round", "CPU"),
    ("04", "Bitmap popcount: 16-word bitmaps, one regroup CTA simulated", "CPU + live H200 cell"),
    ("05", "Union preparation: page lists, membership bytes, C4", "CPU + live H200 cell"),
    ("06", "The Figure 3 pipeline: two CTAs, two KV slots, events ① and ②", "CPU"),
    ("07", "The Union8 kernel, live", "H200 (recorded results on a CPU)"),
    ("08", "Online regroup cost: T0, T_fixed, T_online and S_net", "H200 (recorded results)"),
    ("09", "Direct KV-page pairs", "CPU + live H200 cell"),
    ("10", "Open questions", "CPU"),
    ("11", "The paper's claims, placed beside ours", "CPU"),
)
#: (title, what it is, where it runs) per stage of the data flow.
STAGES = (
    ("Top-K ids", "topk [N, K] int<br>S_i per query", "input: selector unchanged"),
    ("greedy regroup", "windows of W queries<br>groups of g = 8", "CPU ref · H200 kernel"),
    ("π", "int32 ids [N]<br>slot r runs query π[r]", "Q is never copied"),
    ("union preparation", "U_G page lists<br>+ membership bytes", "CPU ref · H200 kernel"),
    ("Union8", "2 CTAs × 4 queries<br>× 16 heads = 2 × M64", "CPU ref · H200 kernel"),
    ("O at original rows", "slot r writes o[π[r]]<br>no reorder pass", "output [N, 16, d]"),
)
#: (legend name, cell text, fill pattern, colour): one bar trace per kind of token.
TOKEN_KINDS = (
    ("attended: t ∈ A_i", "A", "", "#1b7837"),
    ("causal-masked: t > c_i", "C", "x", "#d6604d"),
    ("length-masked: t ≥ L_i", "L", "/", "#8073ac"),
    ("both masks", "LC", "+", "#8c510a"),
    ("page not selected", "·", ".", "#d9d9d9"),
)
MAX_STRIP_TOKENS = 4096  # longest token strip drawn


def _brace(ids, limit: int) -> str:
    """``{a, b, …}`` with at most ``limit`` ids shown."""
    return "{" + ", ".join(map(str, list(ids)[:limit])) + (", …" if len(ids) > limit else "") + "}"


def chapter_table(folder) -> str:
    """The series map as Markdown; chapters whose notebook exists in ``folder`` are linked."""
    rows = ["| # | chapter | runs on |", "|---|---|---|"]
    for num, topic, where in CHAPTERS:
        found = sorted(Path(folder).glob(f"{num}_*.ipynb"))
        cell = f"[{topic}]({found[0].name})" if found else f"{topic} — *coming*"
        rows.append(f"| {num} | {cell} | {where} |")
    return "\n".join(rows)


def dataflow_figure() -> go.Figure:
    """Labelled boxes and arrows: Top-K → regroup → π → preparation → Union8 → O."""
    fig = go.Figure()
    for i, (title, what, where) in enumerate(STAGES):
        dash = "dot" if i in (0, len(STAGES) - 1) else "solid"  # input/output dotted
        fig.add_shape(type="rect", x0=i - 0.44, x1=i + 0.44, y0=0.2, y1=1.0,
                      line=dict(width=2, dash=dash))
        for y, text, size in ((0.6, f"<b>{title}</b><br>{what}", 11), (0.05, where, 10)):
            fig.add_annotation(x=i, y=y, text=text, showarrow=False, font=dict(size=size))
        if i:
            fig.add_annotation(x=i - 0.45, y=0.6, ax=i - 0.55, ay=0.6, axref="x", ayref="y",
                               text="", showarrow=True, arrowhead=3, arrowwidth=2)
    style(fig, "PageWeaver data flow (arXiv:2610.11201, §4): ids move, Q and O stay put",
          "", "", height=300)
    fig.update_xaxes(visible=False, range=[-0.5, len(STAGES) - 0.5])
    return fig.update_yaxes(visible=False, range=[-0.1, 1.1])


def token_strip_figure(widget: bool = True):
    """An empty token strip (a FigureWidget when ``widget``); fill it with update_token_strip."""
    fig = (go.FigureWidget if widget else go.Figure)()
    for name, _, pattern, colour in TOKEN_KINDS:
        fig.add_bar(name=name, x=[], y=[], textposition="inside", insidetextanchor="middle",
                    marker=dict(color=colour, pattern_shape=pattern, line_width=0.5),
                    hovertemplate="token %{x}: " + name + "<extra></extra>")
    fig.add_scatter(name="page label", x=[], y=[], mode="text", text=[], showlegend=False)
    for name, dash in (("c_i (last causal token)", "dash"), ("L_i (first masked token)", "dot")):
        fig.add_scatter(name=name, x=[], y=[], mode="lines+text", text=[],
                        textposition="top center", line=dict(color="black", dash=dash, width=2))
    style(fig, "", "token position t (tokens)", "", height=330)
    fig.update_layout(bargap=0.06, uniformtext=dict(minsize=8, mode="hide"))
    return fig.update_yaxes(visible=False, range=[0, 1.45])


def update_token_strip(fig, pages, page_size: int, length: int, causal_pos: int) -> np.ndarray:
    """Redraw a token strip in place for one query (Top-K ``pages``, P, L_i, c_i).

    Returns
    -------
    numpy.ndarray of int64
        A_i (ascending token ids) as far as the strip shows (at most 4,096 tokens); each
        token's bar sits in the trace of its kind (:data:`TOKEN_KINDS`).
    """
    last = max([p for p in pages if p >= 0] + [(min(length, causal_pos + 1) - 1) // page_size, 0])
    n_pages = int(min(last + 2, max(1, MAX_STRIP_TOKENS // page_size)))  # one page beyond
    t = np.arange(n_pages * page_size)
    ids = np.asarray(list(pages), dtype=np.int64)
    late_l, late_c, sel = t >= length, t > causal_pos, np.isin(t // page_size, ids[ids >= 0])
    kind = np.select([~sel, late_l & late_c, late_l, late_c], [4, 3, 2, 1], 0)  # TOKEN_KINDS
    attended = token_support(pages, page_size, length, causal_pos)
    attended, chosen = attended[attended < len(t)], sorted({int(p) for p in pages if p >= 0})
    with fig.batch_update():
        for k, (_, text, _, _) in enumerate(TOKEN_KINDS):
            xs = t[kind == k]
            fig.data[k].update(x=xs, y=np.ones(len(xs)), text=np.full(len(xs), text))
        fig.data[5].update(x=np.arange(n_pages) * page_size + (page_size - 1) / 2,
                           y=np.full(n_pages, 1.36),
                           text=[f"p{p}{' ✓' if p in chosen else ''}" for p in range(n_pages)])
        for trace, pos, label in ((fig.data[6], causal_pos + 0.5, f"c_i={causal_pos}"),
                                  (fig.data[7], length - 0.5, f"L_i={length}")):
            trace.update(x=[pos, pos], y=[0, 1.12], text=["", label])
        fig.layout.title.text = (f"P = {page_size}, S_i = {_brace(chosen, 12)}, L_i = {length},"
                                 f" c_i = {causal_pos} → |A_i| = {len(attended)}, "
                                 f"A_i = {_brace(attended, 16)}")
        fig.layout.xaxis.range = [-0.5, len(t) - 0.5]
    return attended


def parse_pages(text: str) -> list[int]:
    """Page ids from text such as ``"0, 2, -1"``; raises ValueError on anything else."""
    items = [s for s in re.split(r"[\s,;]+", text.strip("{}[]() ")) if s]
    if not all(re.fullmatch(r"-?\d+", s) for s in items):
        raise ValueError(f"not a list of integer page ids: {text!r}")
    return [int(s) for s in items]


def _make_app(figs, controls: dict, rows, draw):
    """A VBox (attributes ``figs``, ``controls``, ``status``) running ``draw()`` now and on each
    control change (not re-entrantly); a ValueError is shown in the status line."""
    import ipywidgets as w

    status, busy = w.HTML(), []

    def redraw(_=None):
        if not busy:
            busy.append(True)
            try:
                draw()
                status.value = ""
            except ValueError as err:
                status.value = f"<b>⚠ {err}</b>"
            finally:
                busy.clear()

    for ctl in controls.values():
        ctl.observe(redraw, names="value")
    redraw()
    box = w.VBox([w.HBox([controls[k] for k in row]) for row in rows] + [status, *figs])
    box.figs, box.controls, box.status = figs, controls, status
    return box


def token_strip_app(pages=(0, 2), page_size=4, length=11, causal_pos=9):
    """Widget: choose P, the pages, L_i and c_i; the token strip lights up in place."""
    import ipywidgets as w

    fig = token_strip_figure(widget=True)
    c = dict(P=w.Dropdown(options=[4, 8, 16, 32, 64, 128], value=page_size, description="P"),
             pages=w.Text(value=", ".join(map(str, pages)), description="Top-K ids"),
             L=w.IntSlider(value=length, min=0, max=16 * page_size, description="L_i"),
             c=w.IntSlider(value=causal_pos, min=0, max=16 * page_size, description="c_i"))

    def draw():
        for key in ("L", "c"):  # the sliders span 16 pages of the current P
            c[key].max = 16 * c["P"].value
        update_token_strip(fig, parse_pages(c["pages"].value), c["P"].value, c["L"].value,
                           c["c"].value)

    return _make_app([fig], c, [("P", "pages"), ("L", "c")], draw)


def mask_figure(widget: bool = True):
    """An empty membership-mask heatmap; fill it with :func:`update_group_mask`."""
    fig = (go.FigureWidget if widget else go.Figure)()
    fig.add_heatmap(z=[[0]], text=[[""]], texttemplate="%{text}", showscale=False, xgap=2,
                    ygap=2, colorscale=[[0, "#f0f0f0"], [1, "#2166ac"]], zmin=0, zmax=1,
                    hovertemplate="%{y}, page %{x}: M = %{z}<extra></extra>")
    style(fig, "", "page p of U_G (page id)", "query (16 head rows each)").layout.margin.t = 90
    return fig.update_yaxes(autorange="reversed", type="category").update_xaxes(type="category")


def update_group_mask(fig, sets, heads: int = 16, names=None, prefix: str = "") -> dict:
    """Redraw the mask M_{i,p} of a group (``sets``: page ids per slot, ``< 0`` ignored).

    Returns
    -------
    dict
        ``union``, ``mask`` (bool [n, |U_G|]), ``edges`` (Σ|S_i|), ``rho`` (edges / |U_G|)
        and ``useful`` (Σ|S_i| / (n·|U_G|), the unmasked share of the group's row·pages).
    """
    topk = np.full((len(sets), max([1] + [len(s) for s in sets])), -1, dtype=np.int64)
    for i, s in enumerate(sets):
        topk[i, : len(s)] = list(s)
    union, mask = membership_mask(topk, np.arange(len(sets)))
    edges, size = int(mask.sum()), len(union)
    useful, rho = (edges / mask.size, edges / size) if size else (np.nan, np.nan)
    names = names or [f"q{i}" for i in range(len(sets))]
    with fig.batch_update():
        fig.data[0].update(z=mask.astype(np.int8), x=[str(p) for p in union],
                           y=[f"{n} |S|={k}" for n, k in zip(names, mask.sum(axis=1), strict=True)],
                           text=np.where(mask, "1", "·"))
        fig.layout.title.text = (
            f"{prefix}U_G = {_brace(union, 10)}, |U_G| = {size}<br>Σ|S_i| = {edges}, ρ = {rho:.3g};"
            f" useful {edges}·{heads} of {len(sets)}·{heads}×{size} row·pages = {useful:.1%}")
    return {"union": union, "mask": mask, "edges": edges, "rho": rho, "useful": useful}


def group_editor_app(sets=((1, 4, 7), (1, 4, 9), (1, 4, 7, 9), (4, 12))):
    """Widget: one Text box per query; union, mask heatmap and useful fraction follow."""
    import ipywidgets as w

    fig = mask_figure(widget=True)
    boxes = {f"q{i}": w.Text(value=", ".join(map(str, s)), description=f"S_{i}",
                             layout=w.Layout(width="220px")) for i, s in enumerate(sets)}

    def draw():
        update_group_mask(fig, [parse_pages(b.value) for b in boxes.values()])

    return _make_app([fig], boxes, [list(boxes)], draw)


def profile_figure(widget: bool = True):
    """An empty per-group profile: Σ|S_i| and |U_G| against the group index."""
    fig = (go.FigureWidget if widget else go.Figure)()
    for name, sym, dash in (("Σ|S_i|: |U_G| if no page were shared", "triangle-up", "dot"),
                            ("|U_G|: pages the group walks", "circle", "solid")):
        fig.add_scatter(name=name, x=[], y=[], mode="lines+markers", customdata=[],
                        marker=dict(symbol=sym, size=5), line=dict(dash=dash, width=1),
                        hovertemplate="group %{x}: %{y} pages, useful %{customdata:.1%}")
    style(fig, "", "group index G (original order)", "pages per group", height=400)
    return fig.update_yaxes(rangemode="tozero")


def update_preset_profile(fig, mask_fig, topk, n: int, group: int, selected: int) -> dict:
    """Redraw the profile of the first ``n`` rows in groups of ``group`` (original order) and
    the mask of group ``selected``.

    Returns
    -------
    dict
        ``stats`` (UnionStats); per group ``union`` (|U_G|), ``edges`` (Σ|S_i|) and ``useful``
        (Σ|S_i| / (n·|U_G|)); ``useful_total`` over all groups; ``mask`` (update_group_mask).
    """
    top = np.asarray(topk)[:n]
    s, sizes = union_stats(top, group=group), support_sizes(top)
    starts = np.arange(0, len(sizes), group)
    denom = np.diff(np.r_[starts, len(sizes)]) * s.union_sizes
    edges = np.add.reduceat(sizes, starts)
    useful = np.divide(edges, denom, out=np.full(len(denom), np.nan), where=denom > 0)
    prof = {"stats": s, "union": s.union_sizes, "edges": edges, "useful": useful,
            "useful_total": s.edges / denom.sum() if denom.sum() else float("nan")}
    sel, x = min(selected, len(starts) - 1), np.arange(len(starts))
    with fig.batch_update():
        for trace, key in zip(fig.data, ("edges", "union"), strict=True):
            trace.update(x=x, y=prof[key], customdata=useful)
        fig.layout.title.text = (
            f"first {n} queries, g = {group}: Σ|S_i| = {s.edges:,}, union visits "
            f"{s.union_visits:,}, ρ_Q = {s.rho:.3f}, C4 = {s.c4:,}, "
            f"useful {prof['useful_total']:.3f}")
    ids = np.arange(sel * group, min((sel + 1) * group, n))
    info = update_group_mask(mask_fig, top[ids], prefix=f"group {sel}: ",
                             names=[f"slot {r}: q{i}" for r, i in enumerate(ids)])
    return {**prof, "mask": info}


def preset_profile_app(topk, n: int = 2048, group: int = 8):
    """Widget over a workload's first ≤ 2,048 rows: N, g and the group whose mask shows."""
    import ipywidgets as w

    figs, top = [profile_figure(widget=True), mask_figure(widget=True)], np.asarray(topk)[:2048]
    step = min(64, len(top))
    c = dict(n=w.IntSlider(value=min(n, len(top)), min=step, max=len(top), step=step,
                           description="N queries"),
             g=w.Dropdown(options=[1, 2, 4, 8], value=group, description="g"),
             G=w.IntSlider(value=0, min=0, max=len(top) // group, description="group G"))

    def draw():
        c["G"].max = max(0, -(-c["n"].value // c["g"].value) - 1)
        update_preset_profile(*figs, top, c["n"].value, c["g"].value, c["G"].value)

    return _make_app(figs, c, [("n", "g", "G")], draw)
