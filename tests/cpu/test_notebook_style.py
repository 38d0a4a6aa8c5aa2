"""The shared figure style (pageweaver_edu.notebook.style): title, subtitle, legend room, labels."""

from __future__ import annotations

import pytest

go = pytest.importorskip("plotly.graph_objects")

from pageweaver_edu.notebook.style import (  # noqa: E402
    set_title,
    style,
    subtitle_text,
    thin_labels,
    top_margin,
    widget_ready,
)


def test_title_at_the_top_and_room_for_subtitle_and_legend():
    fig = style(go.Figure(), "short title", "x (unit)", "y (unit)", subtitle="a<br>b",
                legend_rows=2)
    t = fig.layout.title
    assert (t.yref, t.yanchor, t.text) == ("container", "top", "short title")
    assert fig.layout.margin.t == top_margin(2, 2) > top_margin(0, 1) >= 80
    assert subtitle_text(fig) == "a<br>b" and fig.layout.legend.yanchor == "bottom"
    set_title(fig, "new", "stats")
    assert fig.layout.title.text == "new" and subtitle_text(fig) == "stats"
    assert len(fig.layout.annotations) == 1  # replaced in place, not added
    plain = style(go.Figure(), "t", "x", "y")
    assert subtitle_text(plain) == "" and not plain.layout.annotations


def test_thin_labels_drops_labels_that_would_sit_on_each_other():
    out = thin_labels({"a": [1.04, 1.65], "b": [0.53, 0.54], "c": [0.53, 0.6],
                       "d": [1.03, None]})
    assert out == {"a": ["1.04", "1.65"], "b": ["0.53", "0.54"], "c": ["", ""],
                   "d": ["", ""]}
    assert thin_labels({"a": [5.0]}, fmt="{:.0f}") == {"a": ["5"]}


def test_widget_ready_syncs_the_figure_state():
    pytest.importorskip("anywidget")
    fig = go.FigureWidget()
    fig.add_bar(x=[1, 2], y=[3, 4], textposition="none")
    set_title(fig, "t", "s")
    assert widget_ready(fig) is fig
    assert fig._widget_data[0]["textposition"] == "none"
    assert fig._widget_layout["title"]["text"] == "t"
