"""Figures and widget updates for chapters 04 (bitmap popcount) and 05 (union preparation).

Every widget is a ``go.FigureWidget`` whose update is a plain function here
(``update_cta_round``, ``update_slot_map``, ``update_union_hist``): the notebook wires it to
ipywidgets with ``observe``; tests and the latency benchmark call it without a browser. Labels,
marker symbols and dash styles carry the meaning, colour only repeats it.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .bitmap import bitmap_words, encode_bitmaps
from .regroup_bitmap import greedy_regroup
from .regroup_cta_sim import SENTINEL, WARP, CtaTrace, trace_window
from .union_metrics import union_stats
from .union_prep import UnionPlan
from .viz_style import DASHES, SYMBOLS, style

BITS = [[0, "#f7f7f7"], [1, "#2166ac"]]


def bit_rows_figure(rows: dict, first_page: int = 0, width: int = 32) -> go.Figure:
    """Rows of bits (one column per page) with 1/0 written in every cell.

    Parameters
    ----------
    rows : dict of str to iterable of int
        Label -> page ids set in that row.
    first_page, width : int
        The pages shown: ``first_page .. first_page + width - 1`` (one uint32 word by default).
    """
    pages = np.arange(first_page, first_page + width)
    z = np.array([[int(p in set(v)) for p in pages] for v in rows.values()])
    fig = go.Figure(go.Heatmap(z=z, x=pages, y=list(rows), colorscale=BITS, showscale=False,
                               text=z.astype(str), texttemplate="%{text}", xgap=1, ygap=1))
    fig.update_yaxes(autorange="reversed")
    return style(fig, f"bits of pages {first_page}–{first_page + width - 1}", "page id (bit)",
                 "", height=110 + 45 * len(rows))


def bitmap_grid_figure(pages, capacity: int = 512, title: str = "") -> go.Figure:
    """A query's bitmap as ``⌈B/32⌉`` words × 32 bits; set bits show their page id."""
    words = bitmap_words(capacity)
    bits = encode_bitmaps(np.asarray(pages, dtype=np.int64)[None, :], capacity)[0]
    z = np.array([[(int(w) >> b) & 1 for b in range(32)] for w in bits])
    text = np.where(z == 1, (np.arange(words)[:, None] * 32 + np.arange(32)).astype(str), "")
    fig = go.Figure(go.Heatmap(z=z, x=np.arange(32), y=[f"word {w}" for w in range(words)],
                               colorscale=BITS, showscale=False, text=text, xgap=1, ygap=1,
                               texttemplate="%{text}", textfont=dict(size=9)))
    fig.update_yaxes(autorange="reversed")
    return style(fig, title or f"{len(set(pages))} pages in {words} uint32 words",
                 "bit b within the word (page = 32·w + b)", "word w", height=120 + 22 * words)


def cta_round_view(trace: CtaTrace, k: int, start: int = 0) -> dict:
    """Plain arrays for round ``k`` of a simulated CTA (what the figure draws)."""
    rnd = trace.rounds[k]
    comp = np.flatnonzero(rnd.deltas >= 0)
    ww = rnd.warp_winners
    has = ww[:, 1] != SENTINEL
    pops = [int(np.bitwise_count(u).sum()) for u in (rnd.union_before, rnd.union_after)]
    kind = ("seed round: key (0, id), the smallest unassigned id wins" if rnd.is_seed
            else "argmin over (δ, id)")
    return {
        "bar_x": comp, "bar_y": rnd.deltas[comp], "bar_text": [str(v) for v in rnd.deltas[comp]],
        "bar_hover": [f"thread {t} = q{start + t}" for t in comp],
        "off_x": np.flatnonzero(rnd.deltas < 0),
        "warp_x": ww[has, 1], "warp_y": ww[has, 0],
        "warp_text": [f"warp {w} min (δ={d}, t{i})" for w, (d, i) in enumerate(ww) if has[w]],
        "win_x": [rnd.winner], "win_y": [rnd.winner_delta],
        "win_text": [f"WINNER q{start + rnd.winner}"],
        "title": f"round {rnd.index} (group {rnd.group}) — {kind}; |U| {pops[0]} → {pops[1]}; "
                 f"barriers so far {rnd.barriers}",
    }


def _warp_lines(threads: int) -> list[dict]:
    """Dotted vertical separators between warps."""
    return [dict(type="line", x0=w * WARP - 0.5, x1=w * WARP - 0.5, y0=0, y1=1, yref="paper",
                 line=dict(dash="dot", width=1)) for w in range(1, threads // WARP)]


def cta_round_figure(trace: CtaTrace, k: int = 0, start: int = 0,
                     widget: bool = False) -> go.Figure:
    """Per-thread delta bars of one round, warp winners and the CTA winner labelled."""
    fig = (go.FigureWidget if widget else go.Figure)()
    fig.add_bar(name="candidate δ = new pages", textposition="outside", cliponaxis=False,
                textfont=dict(size=9), marker=dict(color="#9ecae1", line=dict(width=0.5)))
    fig.add_scatter(name="not competing (assigned / idle)", mode="markers",
                    marker=dict(symbol="x-thin-open", size=6, color="#636363"))
    fig.add_scatter(name="warp winner (lane 0 → shared memory)", mode="markers+text",
                    textposition="top center", marker=dict(symbol="star", size=13,
                                                           color="#e08214"))
    fig.add_scatter(name="CTA winner", mode="markers+text", textposition="middle right",
                    marker=dict(symbol="diamond-open", size=18, color="#b2182b",
                                line=dict(width=2)))
    fig.update_layout(shapes=_warp_lines(trace.threads), bargap=0.15)
    fig.update_xaxes(range=[-1, trace.threads], dtick=8)
    style(fig, "", "thread id t (= query id − window start); dotted lines split the warps",
          "δ (new pages, count)", height=430)
    update_cta_round(fig, trace, k, start)
    return fig


def update_cta_round(fig: go.Figure, trace: CtaTrace, k: int, start: int = 0) -> None:
    """Show round ``k`` in place (one ``batch_update``)."""
    v = cta_round_view(trace, k, start)
    top = max(4, int(max(v["bar_y"], default=0)) + 3)
    with fig.batch_update():
        bar, off, warp, win = fig.data
        bar.update(x=v["bar_x"], y=v["bar_y"], text=v["bar_text"], hovertext=v["bar_hover"])
        off.update(x=v["off_x"], y=np.zeros(len(v["off_x"])))
        warp.update(x=v["warp_x"], y=v["warp_y"] + 0.6, text=v["warp_text"])
        win.update(x=v["win_x"], y=v["win_y"], text=v["win_text"])
        fig.layout.title.text = v["title"]
        fig.layout.yaxis.range = [-0.5, top]


class CtaStepper:
    """A CTA-round widget over the windows of ``topk``: ``update(window, index, k)``.

    The simulated trace of the current (W, window) is cached, so stepping rounds only redraws;
    a new window costs one :func:`~pageweaver_edu.regroup_cta_sim.trace_window` call.
    ``regroup_kw`` goes to it (lengths, page_size, request_offsets, ...).
    """

    def __init__(self, topk, window: int = 128, index: int = 0, group: int = 8, **regroup_kw):
        self.topk, self.group, self.kw, self.key = topk, group, regroup_kw, None
        self._load(window, index)
        self.fig = cta_round_figure(self.trace, 0, self.start, widget=True)

    def _load(self, window: int, index: int) -> None:
        if self.key != (window, index):
            self.key = (window, index)
            self.start, self.trace = trace_window(self.topk, window, index, self.group,
                                                  **self.kw)

    def update(self, window: int, index: int, k: int) -> int:
        """Show round ``k`` (clipped) of window ``index`` at width W; returns the round count."""
        threads = self.trace.threads
        self._load(window, index)
        rounds = len(self.trace.order)
        if self.trace.threads != threads:  # W changed: warp separators and x range follow
            with self.fig.batch_update():
                self.fig.layout.shapes = _warp_lines(self.trace.threads)
                self.fig.layout.xaxis.range = [-1, self.trace.threads]
        update_cta_round(self.fig, self.trace, min(k, rounds - 1), self.start)
        return rounds


def shuffle_figure(trace: CtaTrace, k: int, warp: int = 0) -> go.Figure:
    """The five shuffle levels of one warp in round ``k``: every lane's (δ, id) per level."""
    lanes = trace.rounds[k].lanes[warp]  # [6, 32, 2]
    z = np.where(lanes[..., 0] == SENTINEL, -1, lanes[..., 0])
    text = np.where(z < 0, "–", np.char.add(np.char.add(z.astype(str), "<br>t"),
                                            lanes[..., 1].astype(str)))
    rows = ["input"] + [f"after shfl_down {o}" for o in (16, 8, 4, 2, 1)]
    fig = go.Figure(go.Heatmap(z=z, x=np.arange(WARP), y=rows, text=text, showscale=False,
                               texttemplate="%{text}", textfont=dict(size=8),
                               colorscale="Blues_r", xgap=1, ygap=1))
    fig.update_yaxes(autorange="reversed")
    return style(fig, f"warp {warp}, round {k}: (δ, thread) per lane; lane 0 of the last row "
                 "is the warp minimum; – = not competing", "lane", "", height=380)


def slot_map_view(plan: UnionPlan, g: int) -> dict:
    """Slots, original ids, pages, membership bits, bytes and CTA flags of group ``g``.

    ``z`` / ``text`` (float / str, shape [size + 3, |U_G|]) are the heatmap: one row per slot
    (bit r of each byte), then the byte in hex, then the two "CTA has work" flags.
    """
    base, size = (int(v) for v in plan.group_slots[g])
    ids = plan.perm[base:base + size].astype(int)
    pages, masks = plan.group_pages(g)
    bits = ((masks[None, :] >> np.arange(size)[:, None]) & 1).astype(float)
    flags = plan.cta_any[plan.page_offsets[g]:plan.page_offsets[g + 1]].T.astype(float)
    z = np.vstack([bits, np.full((1, len(pages)), np.nan), flags])
    text = np.vstack([np.where(bits == 1, "1", "·"), [[f"{m:02X}" for m in masks]],
                      np.where(flags == 1, "✓", "skip")])
    rows = [f"slot {r} → q{i}" for r, i in enumerate(ids)]
    return {"slots": np.arange(size), "ids": ids, "rank": np.argsort(np.argsort(ids)),
            "pages": pages, "z": z, "text": text,
            "rows": rows + ["byte (hex)", "CTA0 has work", "CTA1 has work"],
            "title": f"group {g}: execution slots {base}–{base + size - 1}, |U_G| = {len(pages)}"}


def slot_map_figure(plan: UnionPlan, g: int = 0, widget: bool = False) -> go.Figure:
    """Left: slot r → original id π[base + r]; right: membership bits (rows = slots)."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.22, 0.78], horizontal_spacing=0.12,
                        subplot_titles=("slot r → original id (Q, c_i, output row)",
                                        "membership: bit r of the byte = slot r selects p"))
    fig = go.FigureWidget(fig) if widget else fig
    fig.add_scatter(mode="markers+text", textposition="middle left", name="execution slot",
                    marker=dict(symbol="square", size=12), row=1, col=1)
    fig.add_scatter(mode="markers+text", textposition="middle right", name="original id",
                    marker=dict(symbol="circle", size=12), row=1, col=1)
    fig.add_heatmap(colorscale=BITS, showscale=False, texttemplate="%{text}", xgap=1, ygap=1,
                    textfont=dict(size=9), row=1, col=2)
    fig.update_xaxes(visible=False, range=[-1.2, 2.0], row=1, col=1)
    fig.update_yaxes(autorange="reversed", visible=False, row=1, col=1)
    fig.update_yaxes(autorange="reversed", row=1, col=2)
    style(fig, "", "", "", height=470)
    fig.update_xaxes(title_text="page id p of U_G (ascending)", tickangle=-90,
                     tickfont=dict(size=9), row=1, col=2)
    update_slot_map(fig, plan, g)
    return fig


def update_slot_map(fig: go.Figure, plan: UnionPlan, g: int) -> None:
    """Show group ``g`` in place: arrows, membership heatmap, hex bytes, CTA flags."""
    v = slot_map_view(plan, g)
    n = len(v["slots"])
    arrows = [dict(x=1, y=int(v["rank"][r]), ax=0, ay=r, xref="x", yref="y", axref="x",
                   ayref="y", showarrow=True, arrowhead=2, arrowwidth=1.2, text="")
              for r in range(n)]
    with fig.batch_update():
        slots, ids, heat = fig.data
        slots.update(x=np.zeros(n), y=v["slots"],
                     text=[f"slot {r} (CTA{int(r >= 4)})" for r in v["slots"]])
        ids.update(x=np.ones(n), y=v["rank"], text=[f"q{i}" for i in v["ids"]])
        z = np.where(np.isnan(v["z"]), None, v["z"]).tolist()  # gaps; widgets reject NaN
        heat.update(z=z, x=[str(p) for p in v["pages"]], y=v["rows"], text=v["text"])
        fig.layout.annotations = list(fig.layout.annotations[:2]) + arrows
        fig.layout.title.text = v["title"]


def union_size_counts(topk, perms: dict, request_offsets=None, group: int = 8) -> dict:
    """Histogram of |U_G|: label -> int64 counts indexed by union size (0 .. max)."""
    out = {}
    for label, perm in perms.items():
        sizes = union_stats(topk, perm, request_offsets, group).union_sizes
        out[label] = np.bincount(sizes)
    return out


def union_hist_grid(counts_by_name: dict, cols: int = 3) -> go.Figure:
    """Small multiples: one panel per workload, one line per ordering (same styles)."""
    names = list(counts_by_name)
    rows = -(-len(names) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=names, vertical_spacing=0.16)
    for n, name in enumerate(names):
        for i, (label, c) in enumerate(counts_by_name[name].items()):
            x = np.flatnonzero(c)
            fig.add_scatter(x=x, y=c[x], name=label, legendgroup=label, showlegend=n == 0,
                            mode="lines+markers", line=dict(dash=DASHES[i], shape="hv"),
                            marker=dict(symbol=SYMBOLS[i], size=5), row=n // cols + 1,
                            col=n % cols + 1)
    style(fig, "|U_G| per group, g = 8", "", "", height=300 * rows)
    fig.update_xaxes(title_text="|U_G| (pages)")
    fig.update_yaxes(title_text="groups (count)", col=1)
    return fig


def union_hist_figure(counts: dict, widget: bool = False, title: str = "") -> go.Figure:
    """One line per ordering (marker symbol and dash differ), x = |U_G| in pages."""
    fig = (go.FigureWidget if widget else go.Figure)()
    for i, label in enumerate(counts):
        fig.add_scatter(name=label, mode="lines+markers", line=dict(dash=DASHES[i], shape="hv"),
                        marker=dict(symbol=SYMBOLS[i], size=6))
    style(fig, title, "|U_G| (pages in the group's union)", "groups (count)", height=360)
    update_union_hist(fig, counts, title)
    return fig


def update_union_hist(fig: go.Figure, counts: dict, title: str = "") -> None:
    """Replace the histogram lines in place (same labels, same order)."""
    with fig.batch_update():
        for tr, (label, c) in zip(fig.data, counts.items(), strict=True):
            x = np.flatnonzero(c)
            tr.update(x=x, y=c[x], name=label)
        if title:
            fig.layout.title.text = title


def union_hist_for(capture, n: int, window: int = 128, group: int = 8) -> tuple[dict, str]:
    """Counts and a title for the first ``n`` queries of a capture: original order vs W.

    Returns
    -------
    counts : dict of str to numpy.ndarray of int64
        ``"original"`` and ``"W<window>"`` (one regroup, so a widget update stays fast).
    title : str
        Mean |U_G| of both orders.
    """
    topk = capture.topk[:n]
    lengths = None if capture.lengths is None else capture.lengths[:n]
    perm = greedy_regroup(topk, window, group, lengths=lengths, page_size=capture.page_size)
    counts = union_size_counts(topk, {"original": None, f"W{window}": perm}, group=group)
    mean = {k: (np.arange(len(c)) * c).sum() / max(1, c.sum()) for k, c in counts.items()}
    return counts, f"first {n:,} queries — mean |U_G|: " + ", ".join(
        f"{k} {v:.1f}" for k, v in mean.items())
