"""Plotly timelines of the Figure 3 pipeline simulator (:mod:`pageweaver_edu.replay.pipeline`).

Three horizontal lanes (loader = CTA0 thread 0, CTA0, CTA1).  Every bar carries its own text
label (kind, union index, KV slot) where it fits — ``uniformtext`` hides a label that would
need a font below 10 px, the hover always has it — and bar kinds also differ by fill pattern,
so the figure reads without colour.  Event markers (▼ ①, ▲ ②, × skip, ★ hazard) are labelled
with the union index; labels that would collide are staggered away from the lane.  Widths
are schematic, never measured durations.

* :func:`timeline_figure` — a static ``go.Figure`` with animation frames, a play button and
  a time slider (frame ``k`` shows the events started by ``t_k``, bars growing up to ``t_k``).
* :func:`timeline_widget` / :func:`update_timeline_widget` — a ``go.FigureWidget`` that is
  updated in place (``batch_update``) when durations or the protocol change.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..replay.pipeline import SimResult
from .style import FONT, set_title, subtitle_annotation, top_margin

X_TITLE = "schematic time (arbitrary units — widths are not measured durations)"
LANES = {"loader": 2, "cta0": 1, "cta1": 0}
LANE_TEXT = ["CTA1<br>(queries<br>r4–7)", "CTA0<br>(queries<br>r0–3)",
             "loader<br>(CTA0<br>thread 0)"]
BAR_WIDTH = 0.56  # lane units; the gap between lanes holds the event markers and labels
# kind -> (legend name, colour, fill pattern); bars
BARS = {
    "load": ("load (multicast)", "#1b7837", "/"),
    "qk": ("QK", "#e0b000", ""),
    "softmax": ("softmax (sm)", "#4393c3", "."),
    "pv": ("PV", "#f4d03f", "x"),
    "wait": ("wait", "#d9d9d9", "-"),
}
# kind -> (legend name, marker symbol, y offset, text position, label prefix); instant events
MARKS = {
    "ready①": ("① page ready", "triangle-down", 0.3, "top center", "①"),
    "free②": ("② slot free", "triangle-up", -0.3, "bottom center", "②"),
    "release": ("release", "line-ns-open", 0.3, "top center", None),
    "skip": ("skip k (still releases)", "x-thin-open", -0.3, "bottom center", ""),
    "hazard": ("★ HAZARD (overwritten)", "star", 0.3, "top center", "⚠"),
}
LABEL_PX, PLOT_PX, STAGGER = 6.5, 480, 0.14  # px per label char, assumed plot width, lane units


def _bar_label(e) -> str:
    if e.kind == "load":
        return f"L{e.index}<br>b{e.slot}"
    if e.kind == "wait":
        return "wait<br>②" if e.actor == "loader" else "wait<br>①"
    if e.kind == "softmax":  # sits between QK and PV of the same page: keep it short
        return "sm"
    return f"{e.kind.upper()}<br>{e.index}<br>b{e.slot}"  # three short lines fit a 1-unit bar


def _stagger(t, lane, text, span: float) -> np.ndarray:
    """Level 0, 1, 2 per label so that labels of one lane closer than their width in time
    (at :data:`PLOT_PX` for ``span`` time units) move away from the lane instead of overlapping."""
    level, last = np.zeros(len(t), dtype=np.int64), {}
    for j in np.argsort(t, kind="stable"):
        need = (len(text[j]) * LABEL_PX + 4) * span / PLOT_PX
        ends = last.setdefault(lane[j], [-np.inf] * 3)
        free = [k for k in range(3) if t[j] - ends[k] >= need]
        level[j] = free[0] if free else int(np.argmin(ends))
        ends[level[j]] = t[j]
    return level


def _merge_coincident(pts: list[tuple]) -> list[tuple]:
    """One mark per (time, lane): events of one kind at the same instant on the same lane
    (two slots freed at once, say) share a marker and one label, "②4,5", instead of two
    labels drawn over each other."""
    merged: dict = {}
    for t, lane, text, hover in pts:
        if (t, lane) in merged:
            t_, lane_, text_, hover_ = merged[(t, lane)]
            label = f"{text_},{text.lstrip('①②⚠')}" if text else text_
            merged[(t, lane)] = (t, lane, label, f"{hover_}<br>{hover}")
        else:
            merged[(t, lane)] = (t, lane, text, hover)
    return list(merged.values())


def _window(res: SimResult, window) -> tuple[int, int, float, float]:
    """(first, end) union indices shown and the time span (t0, t1) of their events."""
    n = len(res.flags)
    lo, hi = (0, n) if window is None else (max(0, int(window[0])), min(n, int(window[1])))
    evs = [e for e in res.events if lo <= e.index < hi] or res.events
    t0 = min((e.t_start for e in evs), default=0.0) if (lo, hi) != (0, n) else 0.0
    return lo, hi, t0, max((e.t_end for e in evs), default=0.0)


def _trace_data(res: SimResult, window=None, lists: bool = False) -> list[dict]:
    """Per trace (fixed order: BARS then MARKS), arrays sorted by start time, for the union
    indices ``window = (first, end)`` (all by default).

    Each dict holds ``t0``, ``t1``, ``dt`` (= t1 - t0) and ``y`` (float64 [m]; lists of
    float when ``lists``, as a FigureWidget needs), ``text`` and ``hover`` (lists of str,
    length m).
    """
    lo, hi, t_lo, t_hi = _window(res, window)
    out, span = [], max(t_hi - t_lo, 1e-9) * 1.015
    events = [e for e in res.events if lo <= e.index < hi]
    for kind in BARS:
        evs = [e for e in events if e.kind == kind and e.t_end > e.t_start]
        out.append({"t0": [e.t_start for e in evs], "t1": [e.t_end for e in evs],
                    "y": [LANES[e.actor] for e in evs], "text": [_bar_label(e) for e in evs],
                    "hover": [f"{e.actor} {e.kind} index {e.index} (page {e.page}) slot "
                              f"{e.slot}: {e.t_start:g}–{e.t_end:g}" for e in evs]})
    for kind, (_, _, dy, _, prefix) in MARKS.items():
        if kind == "hazard":
            pts = [(h.t, LANES[h.actor], f"⚠{h.index}", f"{h.kind}: {h.actor} reading index "
                    f"{h.index} (slot {h.slot}) overwritten by load {h.by_index}")
                   for h in res.hazards if lo <= h.index < hi or lo <= h.by_index < hi]
        else:
            pts = [(e.t_start, LANES[e.actor], "" if prefix is None else f"{prefix}{e.index}",
                    f"{e.actor} {kind} index {e.index} (page {e.page}) slot {e.slot} at "
                    f"{e.t_start:g}") for e in events if e.kind == kind]
        pts = _merge_coincident(pts)
        t, lane, text = (np.array([p[k] for p in pts]) for k in range(3))
        level = _stagger(t, lane, text, span) if pts else np.zeros(0)
        out.append({"t0": t, "t1": t, "y": lane + dy + np.sign(dy) * STAGGER * level,
                    "text": [str(s) for s in text], "hover": [p[3] for p in pts]})
    for d in out:
        for k in ("t0", "t1", "y"):
            d[k] = np.round(np.asarray(d[k], dtype=np.float64), 4)
        d["dt"] = d["t1"] - d["t0"]
        if lists:
            d.update({k: d[k].tolist() for k in ("t0", "t1", "dt", "y")})
    return out


def _title(res: SimResult, window=None) -> tuple[str, str]:
    """(short title, statistics subtitle; a deadlock adds a second line)."""
    if res.protocol == "broken":
        mode = "BROKEN protocol (reuse once CTA0 alone released)"
    elif res.deadlock is not None:  # the correct protocol deadlocks only without skip releases
        mode = "DEADLOCK (a skipping CTA never releases)"
    else:
        mode = "correct protocol"
    title = f"cluster kernel pipeline, {res.n_slots} KV slots per CTA: {mode}"
    lo, hi, _, _ = _window(res, window)
    shown = "" if (lo, hi) == (0, len(res.flags)) else (
        f"union indices k = {lo}–{hi - 1} of {len(res.flags)} shown · ")
    sub = f"{shown}makespan {res.makespan:g} (schematic units) · hazards {len(res.hazards)}"
    if res.deadlock is not None:
        dl = res.deadlock
        sub += (f"<br>DEADLOCK: load of index {dl.index} → slot {dl.slot} waits forever for ② "
                f"of index {dl.waiting_for} (no release from {', '.join(dl.missing)})")
    return title, sub


def _traces(data: list[dict]) -> list:
    traces = []
    for d, (name, colour, pattern) in zip(data, BARS.values(), strict=False):
        traces.append(go.Bar(
            name=name, orientation="h", y=d["y"], base=d["t0"], x=d["dt"],
            width=BAR_WIDTH, text=d["text"], hovertext=d["hover"], hoverinfo="text",
            textposition="inside", insidetextanchor="middle", textangle=0,
            textfont={"size": 11}, marker={"color": colour, "line": {"color": "black",
                                                                     "width": 0.5},
                                           "pattern": {"shape": pattern, "fgcolor": "#555",
                                                       "size": 5}}))
    for d, (kind, (name, symbol, _, pos, _)) in zip(data[len(BARS):], MARKS.items(),
                                                     strict=False):
        traces.append(go.Scatter(
            name=name, mode="markers+text", x=d["t0"], y=d["y"], text=d["text"],
            hovertext=d["hover"], hoverinfo="text", textposition=pos, textfont={"size": 10},
            cliponaxis=False, marker={"symbol": symbol, "size": 12 if kind == "hazard" else 8,
                                      "color": "#b2182b" if kind == "hazard" else "black",
                                      "line": {"width": 1.5}}))
    return traces


def _layout(res: SimResult, window=None) -> dict:
    title, sub = _title(res, window)
    return {
        "title": {"text": title, "font": {"size": 16}, "x": 0, "xref": "paper",
                  "xanchor": "left", "y": 0.985, "yref": "container", "yanchor": "top"},
        "annotations": [subtitle_annotation(sub, legend_rows=3)],
        "barmode": "overlay",
        "font": {"family": FONT["family"]},
        "height": 580,
        "margin": {"l": 95, "r": 15, "t": top_margin(2, 3), "b": 70},
        "xaxis": {"title": {"text": X_TITLE}, "range": _x_range(res, window)},
        "yaxis": {"title": {"text": "lane (who acts)"}, "tickvals": [0, 1, 2],
                  "ticktext": LANE_TEXT, "range": [-0.8, 2.8]},
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom",
                   "font": {"size": 11}},
        "uniformtext": {"minsize": 10, "mode": "hide"},
    }


def timeline_figure(res: SimResult, n_frames: int = 40, frame_ms: int = 150) -> go.Figure:
    """Animated timeline of one simulation.

    Parameters
    ----------
    res : SimResult
        Output of :func:`pageweaver_edu.replay.pipeline.simulate`.
    n_frames : int
        Animation frames at evenly spaced times ``t_k`` in ``[0, makespan]``; ``0`` gives a
        static figure.  Frame ``k`` shows the events with ``t_start <= t_k``, bars cut at
        ``t_k``.  The figure opens on the complete timeline.
    frame_ms : int
        Milliseconds per frame when playing.

    Returns
    -------
    go.Figure
        About 100–200 KB of JSON for 20 pages at the default 40 frames.  The ▶ play / ❚❚
        pause buttons sit left of the time slider, whose current value reads at its right end.
    """
    data = _trace_data(res)
    fig = go.Figure(_traces(data), _layout(res))
    if n_frames <= 0 or not res.events:
        return fig
    times = np.round(np.linspace(0.0, res.makespan, n_frames), 4)
    frames = []
    for k, t in enumerate(times):
        fd = []
        for j, d in enumerate(data):
            m = int(np.searchsorted(d["t0"], t, side="right"))  # arrays are start-sorted
            if j < len(BARS):
                fd.append({"type": "bar", "y": d["y"][:m], "base": d["t0"][:m],
                           "x": np.minimum(d["t1"][:m], t) - d["t0"][:m]})
            else:
                fd.append({"type": "scatter", "x": d["t0"][:m], "y": d["y"][:m]})
        now = {"type": "line", "x0": t, "x1": t, "y0": -0.7, "y1": 2.7,
               "line": {"dash": "dot", "width": 1, "color": "black"}}
        frames.append(go.Frame(data=fd, name=str(k), traces=list(range(len(data))),
                               layout={"shapes": [now]}))
    fig.frames = frames
    play = {"frame": {"duration": frame_ms, "redraw": True}, "fromcurrent": False,
            "transition": {"duration": 0}, "mode": "immediate"}
    stop = {"frame": {"duration": 0, "redraw": False}, "mode": "immediate"}
    height, below = 680, 70  # px: the controls start this far below the plot
    plot_px = height - top_margin(2, 3) - 170
    fig.update_layout(
        updatemenus=[{"type": "buttons", "direction": "left", "x": 0.0, "xanchor": "left",
                      "y": -below / plot_px, "yanchor": "top", "showactive": False,
                      "pad": {"t": 28}, "buttons": [
                          {"label": "▶ play", "method": "animate", "args": [None, play]},
                          {"label": "❚❚ pause", "method": "animate", "args": [[None], stop]}]}],
        sliders=[{"active": n_frames - 1, "x": 0.26, "len": 0.74, "y": -below / plot_px,
                  "yanchor": "top", "pad": {"t": 10, "b": 10},
                  "currentvalue": {"prefix": "t ≤ ", "xanchor": "right"},
                  "steps": [{"label": f"{t:.1f}", "method": "animate",
                             "args": [[str(k)], {**play, "frame": {"duration": 0,
                                                                   "redraw": True}}]}
                            for k, t in enumerate(times)]}],
        margin={"b": 170}, height=height)
    return fig


def _x_range(res: SimResult, window=None) -> list[float]:
    _, _, t0, t1 = _window(res, window)
    return [t0, t0 + (t1 - t0) * 1.015 + 1e-9]


def timeline_widget(res: SimResult, window=None) -> go.FigureWidget:
    """A ``go.FigureWidget`` of the (static) timeline, for :func:`update_timeline_widget`;
    ``window = (first, end)`` draws only those union indices."""
    return go.FigureWidget(go.Figure(_traces(_trace_data(res, window, lists=True)),
                                     _layout(res, window)))


def update_timeline_widget(widget: go.FigureWidget, res: SimResult, window=None) -> None:
    """Redraw ``widget`` in place from a new simulation (one ``batch_update``).

    Parameters
    ----------
    widget : go.FigureWidget
        Made by :func:`timeline_widget`.
    res : SimResult
        The new simulation (any durations, protocol, slots or flags).
    window : (int, int), optional
        Union indices ``first .. end - 1`` to draw (the x axis follows them); all by default.
    """
    data = _trace_data(res, window, lists=True)
    with widget.batch_update():
        for tr, d in zip(widget.data, data, strict=True):
            if tr.type == "bar":
                tr.update(y=d["y"], base=d["t0"], x=d["dt"], text=d["text"],
                          hovertext=d["hover"])
            else:
                tr.update(x=d["t0"], y=d["y"], text=d["text"], hovertext=d["hover"])
        set_title(widget, *_title(res, window))
        widget.layout.xaxis.range = _x_range(res, window)
