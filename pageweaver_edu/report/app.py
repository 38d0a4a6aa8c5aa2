"""Chapter 13's widget: your own capture under g, B and the chunk size, and the report export.

Every control change reruns :func:`pageweaver_edu.report.analysis.analyze_capture` (the same
analysis as ``pageweaver report``) and redraws the report's figures in place; the export button
writes the report page for the current settings.
"""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go

from ..notebook.style import widget_ready
from . import figures
from .analysis import CaptureAnalysis, analyze_capture

#: The figures the widget shows: name -> the report's figure function.
APP_FIGURES = {"visits": figures.visits_c4_figure, "rho": figures.rho_window_figure,
               "gain": figures.gain_figure}
#: Menu label -> chunk size in queries; 0 = whole requests (no chunking). Not None: a Dropdown
#: whose value is None shows no selection.
CHUNK_CHOICES = [("whole requests", 0), ("4,096 queries", 4096), ("1,024 queries", 1024)]


def refresh(widget: go.FigureWidget, fig: go.Figure) -> None:
    """Make ``widget`` show ``fig``: traces updated in place when their types match (else
    replaced), and the layout, in one batch."""
    if [t.type for t in widget.data] != [t.type for t in fig.data]:
        widget.data = []
        widget.add_traces(list(fig.data))
    with widget.batch_update():
        for old, new in zip(widget.data, fig.data, strict=True):
            props = new.to_plotly_json()
            props.pop("type", None)
            props.pop("uid", None)
            old.update(props, overwrite=True)
        widget.layout.update(fig.layout.to_plotly_json(), overwrite=True)


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
    c = {"g": w.Dropdown(options=[2, 4, 8], value=group, description="g"),
         "B": w.Dropdown(options=[256, 512, 1024, 2048], value=capacity, description="B pages"),
         "chunk": w.Dropdown(options=CHUNK_CHOICES, value=0, description="chunk size"),
         "export": w.Button(description="export report", tooltip=f"write {out}")}
    figs = {name: go.FigureWidget() for name in APP_FIGURES}
    status = w.HTML()

    def draw(_=None):
        a = analyze_capture(capture, source, group=c["g"].value, capacity=c["B"].value,
                            chunk_size=c["chunk"].value or None, quiet=True)
        for name, make in APP_FIGURES.items():
            refresh(figs[name], make(a))
        status.value = summary_line(a)
        box.analysis = a

    def export(_=None):
        path = write_atomic(out, build_page(box.analysis, time_estimate(box.analysis)))
        status.value = summary_line(box.analysis) + f" · wrote {path}"
        box.exported = path

    for key in ("g", "B", "chunk"):
        c[key].observe(draw, names="value")
    c["export"].on_click(export)
    box = w.VBox([w.HBox([c["g"], c["B"], c["chunk"], c["export"]]), status, *figs.values()])
    box.controls, box.status, box.figs, box.export = c, status, figs, export
    draw()
    widget_ready(*figs.values())
    return box
