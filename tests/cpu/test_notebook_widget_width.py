"""Figure widgets fill their output area (pageweaver_edu.notebook.style.fit_to_output)."""

from __future__ import annotations

import pytest

go = pytest.importorskip("plotly.graph_objects")
pytest.importorskip("anywidget")

from pageweaver_edu.notebook.style import widget_ready  # noqa: E402


def _sent(fig) -> list:
    sent = []
    fig._send_relayout_msg = lambda data, source_view_id=None: sent.append(data)
    return sent


def test_first_drawing_report_refits_the_widget_once():
    fig = go.FigureWidget(go.Bar(x=[1, 2], y=[3, 4]))
    sent = _sent(fig)
    widget_ready(fig)
    assert fig._config.get("responsive") is True and sent == []
    delta = {"trace_deltas": [{}], "trace_edit_id": None}
    fig._js2py_traceDeltas = delta  # what the view sends after its first drawing
    assert sent == [{"autosize": True, "width": None}]
    fig._js2py_traceDeltas = dict(delta)  # later reports (after every edit) change nothing
    assert len(sent) == 1


def test_an_explicit_width_is_kept():
    fig = go.FigureWidget(go.Bar(x=[1], y=[1]))
    fig.layout.width = 500
    sent = _sent(fig)
    widget_ready(fig)
    fig._js2py_traceDeltas = {"trace_deltas": [{}], "trace_edit_id": None}
    assert sent == [] and not fig._config.get("responsive")
