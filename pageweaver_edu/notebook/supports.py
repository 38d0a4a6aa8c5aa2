"""Figures and widgets of chapters 01–02 (00's map and data flow: :mod:`.overview`; the
chapters' self-checking exercises: :mod:`.support_exercises`).
Every widget is a ``go.FigureWidget`` redrawn by a plain ``update_*`` function inside
``fig.batch_update()``, so notebook callbacks, tests and a latency benchmark run the same
vectorized code without a browser. Definitions follow arXiv:2610.11201 (eq. 1–4).
"""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go

from ..core.supports import support_sizes, token_support
from ..core.union_metrics import membership_mask, union_stats
from .style import set_title, style, widget_ready

#: (legend name, cell text, fill pattern, colour): one bar trace per kind of token.
TOKEN_KINDS = (
    ("attended: t ∈ A<sub>i</sub>", "A", "", "#1b7837"),
    ("causal-masked: t > c<sub>i</sub>", "C", "x", "#d6604d"),
    ("length-masked: t ≥ L<sub>i</sub>", "L", "/", "#8073ac"),
    ("both masks", "LC", "+", "#8c510a"),
    ("page not selected", "·", ".", "#d9d9d9"),
)
MAX_STRIP_TOKENS = 4096  # longest token strip drawn


def _brace(ids, limit: int) -> str:
    """``{a, b, …}`` with at most ``limit`` ids shown."""
    return "{" + ", ".join(map(str, list(ids)[:limit])) + (", …" if len(ids) > limit else "") + "}"


def token_strip_figure(widget: bool = True):
    """An empty token strip (a FigureWidget when ``widget``); fill it with update_token_strip."""
    fig = (go.FigureWidget if widget else go.Figure)()
    for name, _, pattern, colour in TOKEN_KINDS:
        fig.add_bar(name=name, x=[], y=[], textposition="inside", insidetextanchor="middle",
                    marker=dict(color=colour, pattern_shape=pattern, line_width=0.5),
                    hovertemplate="token %{x}: " + name + "<extra></extra>")
    fig.add_scatter(name="page label", x=[], y=[], mode="text", text=[], showlegend=False)
    for name, dash in (("c<sub>i</sub> (last causal token)", "dash"),
                       ("L<sub>i</sub> (first masked token)", "dot")):
        fig.add_scatter(name=name, x=[], y=[], mode="lines+text", text=[], cliponaxis=False,
                        textposition="top left", line=dict(color="black", dash=dash, width=2))
    style(fig, "Token strip: A<sub>i</sub> = tokens of S<sub>i</sub> with t < L<sub>i</sub>, "
          "t ≤ c<sub>i</sub>", "token position t (tokens)", "", height=420, subtitle_lines=2,
          legend_rows=2)
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
            fig.data[k].update(x=xs.tolist(), y=[1] * len(xs), text=[text] * len(xs))
        fig.data[5].update(x=(np.arange(n_pages) * page_size + (page_size - 1) / 2).tolist(),
                           y=[1.36] * n_pages,
                           text=[f"p{p}{' ✓' if p in chosen else ''}" for p in range(n_pages)])
        c_left = causal_pos + 0.5 <= length - 0.5  # the left line's label reads leftwards
        for trace, pos, label, left in (
                (fig.data[6], causal_pos + 0.5, f"c<sub>i</sub>={causal_pos}", c_left),
                (fig.data[7], length - 0.5, f"L<sub>i</sub>={length}", not c_left)):
            trace.update(x=[pos, pos], y=[0, 1.12], text=["", label],
                         textposition="top left" if left else "top right")
        set_title(fig, fig.layout.title.text,
                  f"P = {page_size}, S<sub>i</sub> = {_brace(chosen, 12)}, L<sub>i</sub> = "
                  f"{length}, c<sub>i</sub> = {causal_pos} → |A<sub>i</sub>| = {len(attended)}"
                  f"<br>A<sub>i</sub> = {_brace(attended, 12)}")
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
    widget_ready(*figs)
    box = w.VBox([w.HBox([controls[k] for k in row]) for row in rows] + [status, *figs])
    box.figs, box.controls, box.status = figs, controls, status
    return box


def token_strip_app(pages=(0, 2), page_size=4, length=11, causal_pos=9):
    """Widget: choose P, the pages, L_i and c_i; the token strip lights up in place."""
    import ipywidgets as w

    fig = token_strip_figure(widget=True)
    c = dict(P=w.Dropdown(options=[4, 8, 16, 32, 64, 128], value=page_size, description="P"),
             pages=w.Text(value=", ".join(map(str, pages)), description="Top-K ids"),
             L=w.IntSlider(value=length, min=0, max=16 * page_size, description="$L_i$"),
             c=w.IntSlider(value=causal_pos, min=0, max=16 * page_size, description="$c_i$"))

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
    style(fig, "Membership mask M<sub>i,p</sub> over U<sub>G</sub>", "page p of U<sub>G</sub>"
          " (page id)", "query (16 head rows each)", subtitle_lines=2, legend_rows=0)
    return fig.update_yaxes(autorange="reversed", type="category").update_xaxes(type="category")


def update_group_mask(fig, sets, heads: int = 16, names=None, prefix: str = "") -> dict:
    """Redraw the mask M_{i,p} of a group (``sets``: page ids per member, ``< 0`` ignored);
    cells show 1 / · up to 30 pages, wider unions only their shading (text would not fit).

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
        fig.data[0].update(z=mask.astype(int).tolist(), x=[str(p) for p in union],
                           y=[f"{n} |S|={k}" for n, k in zip(names, mask.sum(axis=1), strict=True)],
                           text=np.where(mask, "1", "·").tolist(),
                           texttemplate="%{text}" if size <= 30 else "")
        set_title(fig, f"{prefix}membership mask M<sub>i,p</sub> over U<sub>G</sub>",
                  f"U<sub>G</sub> = {_brace(union, 10)}, |U<sub>G</sub>| = {size}, Σ|S<sub>i</sub>|"
                  f" = {edges}, ρ = {rho:.3g}<br>useful {edges}·{heads} of {len(sets)}·{heads}"
                  f"×{size} row·pages = {useful:.1%}")
    return {"union": union, "mask": mask, "edges": edges, "rho": rho, "useful": useful}


def group_editor_app(sets=((1, 4, 7), (1, 4, 9), (1, 4, 7, 9), (4, 12))):
    """Widget: one Text box per query; union, mask heatmap and useful fraction follow."""
    import ipywidgets as w

    fig = mask_figure(widget=True)
    boxes = {f"q{i}": w.Text(value=", ".join(map(str, s)), description=f"$S_{i}$",
                             layout=w.Layout(width="220px")) for i, s in enumerate(sets)}

    def draw():
        update_group_mask(fig, [parse_pages(b.value) for b in boxes.values()])

    return _make_app([fig], boxes, [list(boxes)], draw)


def profile_figure(widget: bool = True):
    """An empty per-group profile: Σ|S_i| and |U_G| against the group index."""
    fig = (go.FigureWidget if widget else go.Figure)()
    for name, sym, dash in (("Σ|S<sub>i</sub>| (= |U<sub>G</sub>| if no page were shared)",
                             "triangle-up", "dot"),
                            ("|U<sub>G</sub>|: pages the group walks", "circle", "solid")):
        fig.add_scatter(name=name, x=[], y=[], mode="lines+markers", customdata=[],
                        marker=dict(symbol=sym, size=5), line=dict(dash=dash, width=1),
                        hovertemplate="group %{x}: %{y} pages, useful %{customdata:.1%}")
    style(fig, "|U<sub>G</sub>| per group, original order", "group index G (original order)",
          "pages per group", height=420, subtitle_lines=1)
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
    x = np.arange(len(starts))
    with fig.batch_update():
        for trace, key in zip(fig.data, ("edges", "union"), strict=True):
            trace.update(x=x.tolist(), y=prof[key].tolist(), customdata=useful.tolist())
        set_title(fig, f"|U<sub>G</sub>| per group: first {n} queries, g = {group}",
                  f"Σ|S<sub>i</sub>| = {s.edges:,}, union visits {s.union_visits:,}, ρ<sub>Q</sub>"
                  f" = {s.rho:.3f}, C4 = {s.c4:,}, useful {prof['useful_total']:.3f}")
    return {**prof, "mask": update_profile_mask(mask_fig, top, n, group, selected)}


def update_profile_mask(mask_fig, topk, n: int, group: int, selected: int) -> dict:
    """Redraw the mask of group ``selected`` (clipped to the last group) of the first ``n``
    rows in groups of ``group``, original order; returns :func:`update_group_mask`'s dict."""
    top = np.asarray(topk)[:n]
    sel = min(selected, -(-len(top) // group) - 1)
    ids = np.arange(sel * group, min((sel + 1) * group, n))
    return update_group_mask(mask_fig, top[ids], prefix=f"group {sel}: ",
                             names=[f"r = {r}: q{i}" for r, i in enumerate(ids)])


def preset_profile_app(topk, n: int = 2048, group: int = 8):
    """Widget over a workload's first ≤ 2,048 rows: N, g and the group whose mask shows (a
    new group only redraws the mask)."""
    import ipywidgets as w

    figs, top = [profile_figure(widget=True), mask_figure(widget=True)], np.asarray(topk)[:2048]
    step = min(64, len(top))
    c = dict(n=w.IntSlider(value=min(n, len(top)), min=step, max=len(top), step=step,
                           description="N queries"),
             g=w.Dropdown(options=[1, 2, 4, 8], value=group, description="g"),
             G=w.IntSlider(value=0, min=0, max=len(top) // group, description="group G"))

    shown = []  # the (N, g) of the profile drawn

    def draw():
        c["G"].max = max(0, -(-c["n"].value // c["g"].value) - 1)
        args = (top, c["n"].value, c["g"].value, c["G"].value)
        if shown == [args[1:3]]:
            update_profile_mask(figs[1], *args)
        else:
            update_preset_profile(*figs, *args)
            shown[:] = [args[1:3]]

    return _make_app(figs, c, [("n", "g", "G")], draw)
