"""Chapter 13's widget: your own capture under g, B and the chunk size, and the report export.

Each setting (g, B, chunk size) is analysed once by
:func:`pageweaver_edu.report.analysis.analyze_capture` (the same analysis as ``pageweaver
report``) and kept with its figures (:class:`~pageweaver_edu.report.settings.SettingCache`);
the settings one menu change away from the one shown are analysed ahead, in a background
thread, so a change only redraws. :func:`refresh` sends the browser only the trace and layout
properties that changed. The export button writes the report page for the current settings.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from ..notebook.style import widget_ready
from . import figures
from .analysis import CaptureAnalysis, analyze_capture
from .settings import SettingCache

#: The figures the widget shows: name -> the report's figure function.
APP_FIGURES = {"visits": figures.visits_c4_figure, "rho": figures.rho_window_figure,
               "gain": figures.gain_figure}
#: Menu label -> chunk size in queries; 0 = whole requests (no chunking). Not None: a Dropdown
#: whose value is None shows no selection.
CHUNK_CHOICES = [("whole requests", 0), ("4,096 queries", 4096), ("1,024 queries", 1024)]
GROUPS, CAPACITIES = [2, 4, 8], [256, 512, 1024, 2048]


def _same(a, b) -> bool:
    """Equal plotly property values (lists, arrays, dicts or scalars)."""
    try:
        return bool(np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)))
    except (ValueError, TypeError):
        return False


def plotly_props(fig: go.Figure) -> dict:
    """``{"data": [props of each trace, type kept, uid dropped], "layout": props}``: a
    figure as :func:`refresh` compares it (computed once per setting, with the figure)."""
    data = []
    for trace in fig.data:
        props = trace.to_plotly_json()
        props.pop("uid", None)
        data.append(props)
    return {"data": data, "layout": fig.layout.to_plotly_json()}


def refresh(widget: go.FigureWidget, new: dict, old: dict | None) -> None:
    """Make ``widget``, which shows ``old`` (:func:`plotly_props`; None: nothing yet), show
    ``new`` in one batch: traces updated in place when their types match, and the layout,
    each with only the properties that differ (all of them, once, when the traces are new:
    that first full edit is what lets :func:`~..notebook.style.fit_to_output` refit the
    figure once it is on the page)."""
    new_traces = old is None or [t["type"] for t in old["data"]] != [
        t["type"] for t in new["data"]]
    if new_traces:
        widget.data = []
        widget.add_traces([dict(t) for t in new["data"]])
    olds = [{}] * len(new["data"]) if new_traces else old["data"]
    with widget.batch_update():
        for trace, now, props in zip(widget.data, olds, new["data"], strict=True):
            changed = {k: v for k, v in props.items()
                       if k != "type" and (k not in now or not _same(now[k], v))}
            changed |= {k: None for k in now if k not in props}  # gone from the new figure
            if changed:
                trace.update(changed, overwrite=True)
        now, props = {} if new_traces else old["layout"], new["layout"]
        changed = {k: v for k, v in props.items() if k not in now or not _same(now[k], v)}
        changed |= {k: None for k in now if k not in props}
        if changed:
            widget.layout.update(changed, overwrite=True)


def summary_line(a: CaptureAnalysis) -> str:
    """Union visits and ρ_Q of every ordering, and the fallback count, on one line."""
    s0 = a.stats["original"]
    parts = [f"{k}: {s.union_visits:,} ({a.change_pct(k):+.2f} %, ρ_Q {s.rho:.3f})"
             for k, s in a.stats.items() if k != "original"]
    fallback = sum(c["fallback"] for c in a.chunks)
    return (f"g = {a.group}, B = {a.grouping.capacity}, {len(a.chunks):,} chunk(s), "
            f"{fallback:,} in fallback · union visits original {s0.union_visits:,} "
            f"(ρ_Q {s0.rho:.3f}) · " + " · ".join(parts))


def capture_app(capture, source: str = "capture", out=None, group: int = 8,
                capacity: int = 512):
    """A ``VBox`` with ``controls`` (g, B, chunk size, export), ``status``, ``figs`` and, after
    every draw, ``analysis``; the export button writes ``out`` (default ``report.html``)."""
    import ipywidgets as w

    from .estimate import time_estimate
    from .page import build_page, write_atomic

    out = Path(out or "report.html")
    c = {"g": w.Dropdown(options=GROUPS, value=group, description="g"),
         "B": w.Dropdown(options=CAPACITIES, value=capacity, description="B pages"),
         "chunk": w.Dropdown(options=CHUNK_CHOICES, value=0, description="chunk size"),
         "export": w.Button(description="export report", tooltip=f"write {out}")}
    figs = {name: go.FigureWidget() for name in APP_FIGURES}
    status = w.HTML()

    def analysed(key):  # (g, B, chunk) -> (analysis, figures, status line)
        a = analyze_capture(capture, source, group=key[0], capacity=key[1],
                            chunk_size=key[2] or None, quiet=True)
        return a, {n: plotly_props(make(a)) for n, make in APP_FIGURES.items()}, summary_line(a)

    settings = SettingCache(analysed, {0: GROUPS, 1: CAPACITIES,
                                       2: [v for _, v in CHUNK_CHOICES]})

    shown: dict = {}  # name -> plotly_props of the figure it shows

    def draw(_=None):
        key = (c["g"].value, c["B"].value, c["chunk"].value)
        a, drawn, line = settings.get(key)
        for name, props in drawn.items():
            refresh(figs[name], props, shown.get(name))
            shown[name] = props
        status.value = line
        box.analysis = a
        settings.ahead(key)

    def export(_=None):
        path = write_atomic(out, build_page(box.analysis, time_estimate(box.analysis)))
        status.value = summary_line(box.analysis) + f" · wrote {path}"
        box.exported = path

    for key in ("g", "B", "chunk"):
        c[key].observe(draw, names="value")
    c["export"].on_click(export)
    box = w.VBox([w.HBox([c["g"], c["B"], c["chunk"], c["export"]]), status, *figs.values()])
    box.controls, box.status, box.figs, box.export = c, status, figs, export
    box.settings = settings
    draw()
    widget_ready(*figs.values())
    return box
