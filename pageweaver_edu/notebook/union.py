"""Figures and widget updates of chapter 05 (union preparation, arXiv:2610.11201 §4.2).

``update_slot_map`` and ``update_union_hist`` are plain functions: the notebook wires them to
ipywidgets with ``observe``; tests and the latency benchmark call them without a browser.
Re-exported by :mod:`pageweaver_edu.notebook.bitmap`. Text labels, marker symbols and dash styles
carry the meaning; colour only repeats it.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..core.grouping import Grouping
from ..core.union_metrics import membership_mask, union_stats
from ..core.union_plan import UnionPlan
from ..regroup.bitmap import greedy_regroup
from .exercises import Exercise, show_set, show_value
from .style import DASHES, SYMBOLS, set_subtitle, set_title, style

BITS = [[0, "#f7f7f7"], [1, "#2166ac"]]
#: One colour per ordering, the same in every panel (dash and symbol say it too).
ORDER_COLOURS = ("#2166ac", "#b2182b", "#1b7837", "#762a83")
FLAG_TEXT = ("–", "✓")  # CTA flag cells: no work (the CTA skips the page) / has work
MAP_COLUMNS = 24  # union pages per view of the membership map: labels stay readable


def slot_map_view(plan: UnionPlan, g: int, first: int = 0, width: int | None = None) -> dict:
    """Member positions, original ids, pages, membership bits, bytes and CTA flags of group
    ``g``, for the union indices ``k = first .. first + width - 1`` (all of them by default).

    ``z`` / ``text`` (float / str, shape [size + 3, shown pages]) are the heatmap: one row per
    member position r (bit r of each byte), then the byte in hex, then the two "CTA has work"
    flags (✓ = computes, – = skips). The subtitle counts the whole union, not only the pages
    shown.
    """
    base, size = (int(v) for v in plan.group_slots[g])
    ids = plan.perm[base:base + size].astype(int)
    all_pages, all_masks = plan.group_pages(g)
    n, asked = len(all_pages), int(first)
    first = max(0, min(asked, n - 1 if width is None else n - int(width)))  # full views
    last = n if width is None else min(n, first + int(width))
    pages, masks = all_pages[first:last], all_masks[first:last]
    bits = ((masks[None, :] >> np.arange(size)[:, None]) & 1).astype(float)
    cta = plan.cta_any[plan.page_offsets[g]:plan.page_offsets[g + 1]]
    flags = cta[first:last].T.astype(float)
    z = np.vstack([bits, np.full((1, len(pages)), np.nan), flags])
    text = np.vstack([np.where(bits == 1, "1", "·"), [[f"{m:02X}" for m in masks]],
                      np.where(flags == 1, FLAG_TEXT[1], FLAG_TEXT[0])])
    rows = [f"r = {r} → q{i}" for r, i in enumerate(ids)]
    shown = "" if (first, last) == (0, n) else f", union indices k = {first}–{last - 1} shown"
    if asked != first:  # the view cannot start there: say so, so the control never looks dead
        shown += f" (k from {asked} is past the last full view)"
    work = cta.sum(axis=0)
    return {"slots": np.arange(size), "ids": ids, "rank": np.argsort(np.argsort(ids)),
            "pages": pages, "z": z, "text": text,
            "rows": rows + ["byte (hex)", "CTA0 has work", "CTA1 has work"],
            "title": f"group {g}: π[{base}..{base + size - 1}], member positions "
                     f"r = 0–{size - 1}",
            "subtitle": f"|U<sub>G</sub>| = {n} pages{shown}; CTA0 computes {int(work[0])}, "
                        f"CTA1 {int(work[1])}; ✓ = computes, – = skips"}


def slot_map_figure(plan: UnionPlan, g: int = 0, widget: bool = False, first: int = 0,
                    width: int | None = MAP_COLUMNS) -> go.Figure:
    """Left: member position r → original id π[base + r]; right: membership bits (rows =
    member positions) of union indices ``first .. first + width - 1``."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.2, 0.8], horizontal_spacing=0.16,
                        subplot_titles=("position r → original id", "bit r of the byte = "
                                        "position r selects p"))
    fig = go.FigureWidget(fig) if widget else fig
    for pos, name, sym in (("left", "member position", "square"), ("right", "original id",
                                                                   "circle")):
        fig.add_scatter(mode="markers+text", textposition=f"middle {pos}", name=name,
                        marker=dict(symbol=sym, size=12), cliponaxis=False, row=1, col=1)
    fig.add_heatmap(colorscale=BITS, showscale=False, texttemplate="%{text}", xgap=1, ygap=1,
                    textfont=dict(size=10), row=1, col=2)
    fig.update_xaxes(visible=False, range=[-1.2, 2.0], row=1, col=1)
    fig.update_yaxes(autorange="reversed", visible=False, row=1, col=1)
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=11), row=1, col=2)
    style(fig, "", "", "", height=510, subtitle_lines=1)  # no legend: the room is for the
    # panel titles
    fig.update_layout(showlegend=False)  # the text beside each marker names it
    fig.update_xaxes(title_text="page id p of U<sub>G</sub> (ascending)", tickangle=-90,
                     tickfont=dict(size=10), row=1, col=2)
    update_slot_map(fig, plan, g, first, width)
    return fig


def update_slot_map(fig: go.Figure, plan: UnionPlan, g: int, first: int = 0,
                    width: int | None = MAP_COLUMNS) -> None:
    """Show group ``g`` in place (union indices ``first ..``, at most ``width`` columns):
    arrows, membership heatmap, hex bytes, CTA flags."""
    v = slot_map_view(plan, g, first, width)
    n = len(v["slots"])
    arrows = [dict(x=1, y=int(v["rank"][r]), ax=0, ay=r, xref="x", yref="y", axref="x",
                   ayref="y", showarrow=True, arrowhead=2, arrowwidth=1.2, text="")
              for r in range(n)]
    text = v["text"].astype(object)
    if len(v["pages"]) > (28 if isinstance(fig, go.FigureWidget) else 44):  # narrow cells:
        text[-3] = [f"{b[0]}<br>{b[1]}" for b in text[-3]]  # one hex digit per line
    with fig.batch_update():
        slots, ids, heat = fig.data
        slots.update(x=[0] * n, y=np.asarray(v["slots"]).tolist(),
                     text=[f"r = {r} · CTA{int(r >= 4)}" for r in v["slots"]])
        ids.update(x=[1] * n, y=np.asarray(v["rank"]).tolist(), text=[f"q{i}" for i in v["ids"]])
        z = np.where(np.isnan(v["z"]), None, v["z"]).tolist()  # gaps; widgets reject NaN
        heat.update(z=z, x=[str(p) for p in v["pages"]], y=list(v["rows"]), text=text.tolist())
        fig.layout.annotations = [a for a in fig.layout.annotations if not a.showarrow] + arrows
        set_title(fig, v["title"], v["subtitle"])


def union_size_counts(topk, perms: dict, request_offsets=None, group: int = 8) -> dict:
    """Histogram of |U_G|: label -> int64 counts indexed by union size (0 .. max)."""
    out = {}
    for label, perm in perms.items():
        sizes = union_stats(topk, perm, request_offsets, group).union_sizes
        out[label] = np.bincount(sizes)
    return out


def _line(i: int) -> dict:
    return dict(line=dict(dash=DASHES[i], shape="hvh", color=ORDER_COLOURS[i]),
                marker=dict(symbol=SYMBOLS[i], color=ORDER_COLOURS[i]))


def _hist_points(counts, size: int) -> dict:
    """x, y and marker sizes of one histogram line: every size from the smallest to the
    largest non-empty one, so the line drops to 0 over empty sizes instead of stepping across
    them; only non-empty sizes get a marker. Lists (a FigureWidget keeps lists)."""
    c = np.asarray(counts)
    hit = np.flatnonzero(c)
    lo, hi = (int(hit[0]), int(hit[-1]) + 1) if hit.size else (0, 0)
    y = c[lo:hi].tolist()
    return {"x": list(range(lo, hi)), "y": y, "marker_size": [size if v else 0 for v in y]}


def union_hist_grid(counts_by_name: dict, cols: int = 3) -> go.Figure:
    """Small multiples: one panel per workload, one line per ordering (same styles)."""
    names = list(counts_by_name)
    rows = -(-len(names) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=names, vertical_spacing=0.2)
    for n, name in enumerate(names):
        for i, (label, c) in enumerate(counts_by_name[name].items()):
            fig.add_scatter(name=label, legendgroup=label, showlegend=n == 0,
                            mode="lines+markers", **_line(i), row=n // cols + 1,
                            col=n % cols + 1, **_hist_points(c, 5))
    style(fig, "|U<sub>G</sub>| per group, g = 8", "", "", height=320 * rows)
    fig.update_layout(margin_t=110,  # legend below the title, above the panel titles
                      legend=dict(yref="container", y=1 - 40 / (320 * rows), yanchor="top"))
    fig.update_xaxes(title_text="|U<sub>G</sub>| (pages)")
    fig.update_yaxes(title_text="groups (count)", col=1)
    return fig


def union_hist_figure(counts: dict, widget: bool = False, title: str = "") -> go.Figure:
    """One line per ordering (marker symbol and dash differ), x = |U_G| in pages."""
    fig = (go.FigureWidget if widget else go.Figure)()
    for i, label in enumerate(counts):
        fig.add_scatter(name=label, mode="lines+markers", **_line(i))
    style(fig, "|U<sub>G</sub>| per group: original order vs regrouped",
          "|U<sub>G</sub>| (pages in the group's union)", "groups (count)", height=380,
          subtitle_lines=1)
    update_union_hist(fig, counts, title)
    return fig


def update_union_hist(fig: go.Figure, counts: dict, title: str = "") -> None:
    """Replace the histogram lines in place (same labels, same order); ``title`` is the
    statistics line (the subtitle)."""
    with fig.batch_update():
        for tr, (label, c) in zip(fig.data, counts.items(), strict=True):
            tr.update(name=label, **_hist_points(c, 6))
        if title:
            set_subtitle(fig, title)


def union_hist_for(capture, n: int, window: int = 128, group: int = 8) -> tuple[dict, str]:
    """Counts and a statistics line for the first ``n`` queries: original order vs W.

    Returns
    -------
    counts : dict of str to numpy.ndarray of int64
        ``"original"`` and ``"W<window>"`` (one regroup, so a widget update stays fast).
    title : str
        Mean |U_G| of both orders (the figure's subtitle).
    """
    topk = capture.topk[:n]
    lengths = None if capture.lengths is None else capture.lengths[:n]
    perm = greedy_regroup(topk, Grouping(window, group), lengths=lengths,
                          page_size=capture.page_size)
    counts = union_size_counts(topk, {"original": None, f"W{window}": perm}, group=group)
    mean = {k: (np.arange(len(c)) * c).sum() / max(1, c.sum()) for k, c in counts.items()}
    return counts, f"first {n:,} queries — mean |U<sub>G</sub>|: " + ", ".join(
        f"{k} {v:.1f}" for k, v in mean.items())


def membership_reference(topk, members, p: int) -> int:
    """The membership byte of page ``p`` for the group whose member positions run the
    original queries ``members`` (π[b], π[b+1], ...): bit r set when ``p ∈ S_{members[r]}``;
    0 when no member selects ``p``."""
    union, mask = membership_mask(topk, list(members))
    hit = np.flatnonzero(union == p)
    if hit.size == 0:
        return 0
    return int(sum(int(mask[r, hit[0]]) << r for r in range(len(members))))


def _membership_cases(rng: np.random.Generator):
    """Random requests (K = 4 distinct pages of 12, so members share pages), random π slices
    of 1–8 members (a short tail group too) and pages inside and outside U_G; then a page
    every member selects (byte 0xFF) and members in descending id order."""
    for case in range(30):
        n = int(rng.integers(8, 20))
        topk = np.array([rng.choice(12, 4, replace=False) for _ in range(n)])
        members = rng.permutation(n)[: int(rng.integers(1, 9))].tolist()
        p = int(rng.integers(0, 14)) if case % 3 else int(topk[members[-1], 0])
        yield (topk, members, p), {}
    shared = np.array([[3, 4, 5, 6]] * 8)
    yield (shared, list(range(8)), 5), {}
    yield (np.arange(40).reshape(10, 4), [9, 7, 5, 2], 37), {}


def show_byte(value, args=(), kwargs=None) -> str:
    """A membership byte as the series writes it: binary with bit 7 on the left and bit 0
    (member position 0) on the right, then hex and the set of member positions."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < 256:
        return show_value(value)
    value = int(value)
    positions = show_set(r for r in range(8) if value >> r & 1)
    return f"0b{value:08b} (0x{value:02x}, positions {positions})"


def _show_membership_inputs(args, kwargs) -> str:
    topk, members, p = args
    rows = "; ".join(f"r={r}: query {int(i)}, S = {show_set(x for x in topk[i] if x >= 0)}"
                     for r, i in enumerate(members))
    return f"p = {int(p)}; {rows}"


#: Chapter 05's exercise: the membership byte of one union page.
MEMBERSHIP = Exercise(
    "membership byte", "Write membership_byte(topk, members, p): topk is int [N, K] (row i = "
    "S_i), members the original ids at member positions r = 0, 1, ... (a slice of π); return "
    "the byte with bit r set when the query at position r selected page p.",
    membership_reference, _membership_cases, show_inputs=_show_membership_inputs,
    show_answer=show_byte)
