"""Figures and widget updates for chapter 04 (bitmap popcount); chapter 05's (union
preparation) live in :mod:`pageweaver_edu.notebook.union` and are re-exported here.

Every widget is a ``go.FigureWidget`` whose update is a plain function (``update_cta_round``,
``update_slot_map``, ``update_union_hist``): the notebook wires it to ipywidgets with
``observe``; tests and the latency benchmark call it without a browser. Labels, marker symbols
and dash styles carry the meaning, colour only repeats it.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import plotly.graph_objects as go

from ..core.bitmap import bitmap_words, encode_bitmaps, popcount_delta
from ..core.grouping import Grouping
from ..core.union_metrics import union_stats
from ..regroup.bitmap import greedy_regroup
from ..replay.regroup_cost import regroup_cost
from ..replay.regroup_cta import SENTINEL, SHUFFLE_OFFSETS, WARP, CtaTrace, trace_window
from .exercises import Exercise, show_set
from .paper_numbers import PAPER
from .style import set_title, style
from .union import BITS


def bit_rows_figure(rows: dict, first_page: int = 0, width: int = 32) -> go.Figure:
    """Rows of bits (one column per page) with 1/0 written in every cell, the highest page
    (the word's most significant bit) on the left, as the word is written.

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
    fig.update_xaxes(autorange="reversed", dtick=4)  # most significant bit first
    return style(fig, f"bits of pages {first_page}–{first_page + width - 1}", "page id (bit; "
                 "most significant on the left)", "bitmap", height=90 + 45 * len(rows),
                 legend_rows=0)


def bitmap_grid_figure(pages, capacity: int = 512, title: str = "") -> go.Figure:
    """A query's bitmap as ``⌈B/32⌉`` words × 32 bits, bit 31 on the left (each word as it is
    written, most significant bit first); set bits show their page id."""
    words = bitmap_words(capacity)
    bits = encode_bitmaps(np.asarray(pages, dtype=np.int64)[None, :], capacity)[0]
    z = np.array([[(int(w) >> b) & 1 for b in range(32)] for w in bits])
    text = np.where(z == 1, (np.arange(words)[:, None] * 32 + np.arange(32)).astype(str), "")
    fig = go.Figure(go.Heatmap(z=z, x=np.arange(32), y=[f"word {w}" for w in range(words)],
                               colorscale=BITS, showscale=False, text=text, xgap=1, ygap=1,
                               texttemplate="%{text}", textfont=dict(size=10)))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(autorange="reversed", dtick=4)  # bit 31 first, as the word is written
    return style(fig, title or f"{len(set(pages))} pages in {words} uint32 words",
                 "bit b within the word (page = 32·w + b; bit 31 on the left)", "word w",
                 height=100 + 24 * words, legend_rows=0)


def cta_round_view(trace: CtaTrace, k: int, start: int = 0) -> dict:
    """Plain lists for round ``k`` of a simulated CTA (what the figure draws; a FigureWidget
    keeps lists, never arrays)."""
    rnd = trace.rounds[k]
    comp = np.flatnonzero(rnd.deltas >= 0)
    ww = rnd.warp_winners
    has = ww[:, 1] != SENTINEL
    pops = [int(np.bitwise_count(u).sum()) for u in (rnd.union_before, rnd.union_after)]
    kind = "seed round" if rnd.is_seed else "argmin over (δ, id)"
    rule = "key (0, id): the smallest unassigned id wins · " if rnd.is_seed else ""
    return {
        "bar_x": comp.tolist(), "bar_y": rnd.deltas[comp].tolist(),
        "bar_text": [str(v) for v in rnd.deltas[comp]],
        "bar_hover": [f"thread {t} = q{start + t}" for t in comp],
        "off_x": np.flatnonzero(rnd.deltas < 0).tolist(),
        "warp_x": ww[has, 1].tolist(), "warp_y": ww[has, 0].tolist(),
        "warp_text": [f"warp {w} min (δ={d}, t{i})" for w, (d, i) in enumerate(ww) if has[w]],
        "label_x": (np.flatnonzero(has) * WARP + (WARP - 1) / 2).tolist(),
        "label_text": [f"warp {w} min<br>δ={d} at t{i}" for w, (d, i) in enumerate(ww) if has[w]],
        "win_x": [int(rnd.winner)], "win_y": [int(rnd.winner_delta)],
        "win_text": [f"WINNER q{start + rnd.winner}"],
        "title": f"round {rnd.index} (group {rnd.group}): {kind}",
        "subtitle": f"{rule}|U| {pops[0]} → {pops[1]} · barriers so far {rnd.barriers}",
    }


def _warp_lines(threads: int) -> list[dict]:
    """Dotted vertical separators between warps."""
    return [dict(type="line", x0=w * WARP - 0.5, x1=w * WARP - 0.5, y0=0, y1=1, yref="paper",
                 line=dict(dash="dot", width=1)) for w in range(1, threads // WARP)]


def cta_round_figure(trace: CtaTrace, k: int = 0, start: int = 0,
                     widget: bool = False) -> go.Figure:
    """Per-thread delta bars of one round, warp winners and the CTA winner labelled."""
    fig = (go.FigureWidget if widget else go.Figure)()
    # Bars carry no text (one per thread is too narrow); the hover and the y axis give δ, and
    # one label per warp, above the plot, names the warp minimum the star marks.
    fig.add_bar(name="candidate δ (new pages)", textposition="none", hovertemplate="%{hovertext}"
                ": δ = %{y}<extra></extra>", marker=dict(color="#9ecae1", line=dict(width=0.5)))
    fig.add_scatter(name="not competing", mode="markers", hoverinfo="skip",
                    marker=dict(symbol="x-thin-open", size=6, color="#636363"))
    fig.add_scatter(name="warp minimum (lane 0 → smem)", mode="markers", hoverinfo="text",
                    marker=dict(symbol="star", size=13, color="#e08214"))
    fig.add_scatter(name="CTA winner", mode="markers+text", cliponaxis=False,
                    marker=dict(symbol="diamond-open", size=18, color="#b2182b",
                                line=dict(width=2)), textfont=dict(size=12))
    fig.add_scatter(name="warp label", mode="text", showlegend=False, hoverinfo="skip",
                    textfont=dict(size=11), cliponaxis=False)
    fig.update_layout(shapes=_warp_lines(trace.threads), bargap=0.15)
    fig.update_xaxes(range=[-1, trace.threads], dtick=8)
    style(fig, "", "thread id t (= query id − window start); dotted lines split the warps",
          "δ (new pages, count)", height=470, subtitle_lines=1, legend_rows=2)
    update_cta_round(fig, trace, k, start)
    return fig


def update_cta_round(fig: go.Figure, trace: CtaTrace, k: int, start: int = 0) -> None:
    """Show round ``k`` in place (one ``batch_update``)."""
    v = cta_round_view(trace, k, start)
    top = max(6, int(max(v["bar_y"], default=0)) + 5)
    right = v["win_x"][0] > 0.75 * trace.threads  # the WINNER label reads away from the edge
    with fig.batch_update():
        bar, off, warp, win, label = fig.data
        bar.update(x=v["bar_x"], y=v["bar_y"], text=v["bar_text"], hovertext=v["bar_hover"])
        off.update(x=v["off_x"], y=[0] * len(v["off_x"]))
        warp.update(x=v["warp_x"], y=[y + 0.6 for y in v["warp_y"]], text=v["warp_text"])
        win.update(x=v["win_x"], y=v["win_y"], text=v["win_text"],
                   textposition="middle left" if right else "middle right")
        label.update(x=v["label_x"], y=[top - 1.2] * len(v["label_x"]),
                     text=v["label_text"])
        set_title(fig, v["title"], v["subtitle"])
        fig.layout.yaxis.range = [-0.5, top]


class CtaStepper:
    """A CTA-round widget over the windows of ``topk``: ``update(window, index, k)``.

    The simulated traces of the last :attr:`KEEP` (W, window) pairs are kept, so stepping
    rounds or going back to a W or window seen before only redraws; a new one costs one
    :func:`~pageweaver_edu.replay.regroup_cta.trace_window` call. ``boundaries`` go to it
    (``lengths``, ``page_size``, ``request_offsets``).
    """

    KEEP = 8

    def __init__(self, topk, window: int = 128, index: int = 0, group: int = 8, **boundaries):
        self.topk, self.group, self.kw = topk, group, boundaries
        self.traces: OrderedDict = OrderedDict()  # (W, window) -> (first query, CtaTrace)
        self._load(window, index)
        self.fig = cta_round_figure(self.trace, 0, self.start, widget=True)

    def _load(self, window: int, index: int) -> None:
        key = (window, index)
        if key not in self.traces:
            self.traces[key] = trace_window(self.topk, Grouping(window, self.group), index,
                                            **self.kw)
            if len(self.traces) > self.KEEP:
                self.traces.popitem(last=False)
        self.traces.move_to_end(key)
        self.start, self.trace = self.traces[key]

    def update(self, window: int, index: int, k: int) -> int:
        """Show round ``k`` (clipped) of window ``index`` at width W; returns the round count."""
        threads = self.trace.threads
        self._load(window, index)
        rounds = len(self.trace.order)
        with self.fig.batch_update():  # one edit, so the browser redraws the figure once
            if self.trace.threads != threads:  # W changed: warp separators and x range follow
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
                               texttemplate="%{text}", textfont=dict(size=10),
                               colorscale="Blues_r", xgap=1, ygap=1))
    fig.update_yaxes(autorange="reversed")
    return style(fig, f"warp {warp}, round {k}: (δ, thread) per lane, level by level", "lane",
                 "shuffle level", height=420, legend_rows=0,
                 subtitle="lane 0 of the last row holds the warp minimum; – = not competing")


#: The paper's grouping-alone times on its H200 (arXiv:2610.11201 §5.4), µs: the middle of
#: its range over five captures (``PAPER["grouping_w64"]``, ``PAPER["grouping_w128"]``).
PAPER_GROUPING_US = {64: PAPER["grouping_w64"].value, 128: PAPER["grouping_w128"].value}


def regroup_cost_table(cap, windows=(64, 128)) -> str:
    """Chapter 04's cost table of the paper's CTA form on a capture, one line per W.

    The reduction of a round is split as the sketch does it: ``warp shfl`` levels inside a
    warp, then ``smem lvls`` = ⌈log2(W/32)⌉ tree levels over the per-warp winners.
    """
    kw = cap.regroup_kwargs()
    base = union_stats(cap.topk).union_visits
    lines = [f"{'':6}{'CTAs':>6}{'word ops':>13}{'chain':>7}{'barriers':>10}{'warp shfl':>10}"
             f"{'smem lvls':>10}{'union visits':>18}{'paper µs':>10}{'ns/round':>10}"]
    for w in windows:
        c = regroup_cost(cap.num_queries, w)
        uv = union_stats(cap.topk, greedy_regroup(cap.topk, Grouping(w), **kw)).union_visits
        warp = len(SHUFFLE_OFFSETS)
        lines.append(
            f"W{w:<5}{c.windows:>6}{c.word_ops:>13,}{c.serial_rounds:>7}"
            f"{c.barriers_per_window:>10}{warp:>10}{c.shuffle_levels_per_round - warp:>10}"
            f"{uv:>9,} ({100 * (uv - base) / base:+.2f}%){PAPER_GROUPING_US[w]:>10.2f}"
            f"{1000 * PAPER_GROUPING_US[w] / c.serial_rounds:>10.0f}")
    return "\n".join(lines + [f"original order: {base:,} union visits"])


def delta_reference(bits_j, union) -> int:
    """δ(j) = Σ_w popcount(bits_j[w] & ~U[w]) as a Python int (the exercise's answer)."""
    return int(popcount_delta(bits_j, union))


def _delta_cases(rng: np.random.Generator):
    """Random (S_j, U) bitmap pairs of 16 words, then the edge cases: the worked example,
    empty sets, S_j inside U, disjoint sets and page 511 (bit 31 of word 15)."""
    def pair(s, u):
        bits_j, union = (encode_bitmaps(np.array([list(x) or [-1]]), 512)[0] for x in (s, u))
        return (bits_j, union), {}

    for _ in range(25):
        s = rng.choice(512, int(rng.integers(1, 17)), replace=False)
        u = rng.choice(512, int(rng.integers(0, 80)), replace=False)
        yield pair(s, np.concatenate([u, s[: int(rng.integers(0, len(s) + 1))]]))
    yield pair([2, 3], [1, 2])
    yield pair([], [5, 6])
    yield pair([7, 300], [])
    yield pair([31, 32, 480], [31, 32, 480, 3])
    yield pair([511, 0, 255], [1, 2])


def show_bitmap(words) -> str:
    """A page bitmap in the chapter's terms: the set of pages, then every non-zero word in
    hex (bit ``b`` of word ``w`` is page ``32 w + b``; hex is written most significant bit
    first, like every bit string of the series)."""
    words = np.asarray(words, dtype=np.uint32)
    pages = [32 * w + b for w in range(words.size) for b in range(32) if words[w] >> b & 1]
    hexes = ", ".join(f"word {w} = 0x{int(x):08x}" for w, x in enumerate(words) if x)
    return f"{show_set(pages)} ({hexes or 'all words 0'})"


def _show_delta_inputs(args, kwargs) -> str:
    bits_j, union = args
    return f"S_j = {show_bitmap(bits_j)}, U = {show_bitmap(union)}"


#: Chapter 04's exercise: δ(j) from bitmap words with popcount.
DELTA = Exercise("delta", "Write delta(bits_j, union): two uint32 arrays of 16 words (S_j and "
                 "U as bitmaps); return δ(j) = |S_j \\ U| as an int, with np.bitwise_count.",
                 delta_reference, _delta_cases, show_inputs=_show_delta_inputs)
