"""Figures and widget updates of chapters 04 and 05, driven without a browser."""

import numpy as np
import plotly.graph_objects as go

from pageweaver_edu import greedy_regroup, prepare_unions
from pageweaver_edu.core.capture import Capture
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.notebook.bitmap import (
    CtaStepper,
    bit_rows_figure,
    bitmap_grid_figure,
    cta_round_figure,
    cta_round_view,
    shuffle_figure,
    update_cta_round,
)
from pageweaver_edu.notebook.style import subtitle_text
from pageweaver_edu.notebook.union import (
    slot_map_figure,
    slot_map_view,
    union_hist_figure,
    union_hist_for,
    union_hist_grid,
    union_size_counts,
    update_slot_map,
    update_union_hist,
)
from pageweaver_edu.replay.regroup_cta import trace_window

G3 = [[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]]


def random_topk(n=300, pages=96, k=8, seed=0):
    rng = np.random.default_rng(seed)
    return np.sort(rng.integers(0, pages, (n, k)), axis=1)


def test_bit_rows_and_grid():
    fig = bit_rows_figure({"U": [1, 2], "S_j": [2, 3], "S_j & ~U": [3]})
    assert fig.data[0].z.tolist()[2][:5] == [0, 0, 0, 1, 0]
    grid = bitmap_grid_figure([0, 33, 511, 33])
    z = np.array(grid.data[0].z)
    assert z.shape == (16, 32) and z.sum() == 3
    assert grid.data[0].text[15][31] == "511" and grid.data[0].text[1][1] == "33"


def test_cta_round_view_of_the_g3_example():
    start, trace = trace_window(G3, Grouping(6, 3), 0)
    v = cta_round_view(trace, 1, start)
    assert v["bar_x"] == [1, 2, 3, 4, 5] and v["bar_y"] == [2, 1, 2, 2, 2]
    assert v["off_x"][0] == 0 and len(v["off_x"]) == 32 - 5
    assert v["warp_x"] == [2] and v["win_text"] == ["WINNER q2"]
    assert "|U| 2 → 3" in v["subtitle"]
    assert "seed round" in cta_round_view(trace, 3, start)["title"]


def test_cta_round_figure_updates_in_place():
    start, trace = trace_window(random_topk(), Grouping(64), 1)
    fig = cta_round_figure(trace, 0, start, widget=True)
    assert isinstance(fig, go.FigureWidget) and len(fig.layout.shapes) == 1
    update_cta_round(fig, trace, 9, start)
    assert fig.layout.title.text.startswith("round 9 (group 1)")
    assert len(fig.data[0].x) == 64 - 9 and len(fig.data[1].x) == 9
    assert fig.data[3].text[0] == f"WINNER q{start + trace.order[9]}"


def test_cta_stepper_sends_one_edit_per_change_and_keeps_traces():
    topk = random_topk(n=300)
    app = CtaStepper(topk, window=128, index=0)
    for window, index in ((64, 0), (64, 1), (128, 0)):
        edits = app.fig._last_layout_edit_id  # edits sent to the browser so far
        app.update(window, index, 3)
        assert app.fig._last_layout_edit_id == edits + 1  # the browser redraws once
    assert list(app.traces) == [(64, 0), (64, 1), (128, 0)]
    kept = app.traces[(64, 0)]
    app.update(64, 0, 4)
    assert app.traces[(64, 0)] is kept and app.trace is kept[1]


def test_cta_stepper_follows_window_changes():
    topk = random_topk(n=200)
    app = CtaStepper(topk, window=64, index=0)
    assert app.update(64, 0, 5) == 64
    assert app.update(128, 1, 500) == 72  # short tail window: rounds are clipped
    assert len(app.fig.layout.shapes) == 3 and app.fig.layout.xaxis.range == (-1, 128)
    assert app.fig.layout.title.text.startswith("round 71")


def test_shuffle_figure_rows():
    _, trace = trace_window(random_topk(), Grouping(128), 0)
    fig = shuffle_figure(trace, 1, warp=2)
    assert np.array(fig.data[0].z).shape == (6, 32)
    assert fig.data[0].y[-1] == "after shfl_down 1"


def test_slot_map_view_and_update():
    topk = random_topk()
    perm = greedy_regroup(topk, Grouping(64))
    plan = prepare_unions(topk, perm)
    v = slot_map_view(plan, 3)
    ids = perm[24:32]
    assert v["ids"].tolist() == ids.tolist()
    assert sorted(v["ids"][np.argsort(v["rank"])]) == sorted(ids.tolist())
    for r, q in enumerate(ids):  # bit r of every byte = position r's query selects p
        assert set(v["pages"][v["z"][r] == 1].tolist()) == set(topk[q].tolist())
    assert v["rows"][8:] == ["byte (hex)", "CTA0 has work", "CTA1 has work"]
    cta0 = v["z"][:4].any(axis=0)
    assert (v["z"][9] == cta0).all() and ((v["text"][9] == "–") == ~cta0).all()
    _, masks = plan.group_pages(3)
    assert v["text"][8].tolist() == [f"{m:02X}" for m in masks]
    fig = slot_map_figure(plan, 0, widget=True)
    update_slot_map(fig, plan, 3)
    arrows = [a for a in fig.layout.annotations if a.showarrow]
    assert len(arrows) == 8 and len(fig.layout.annotations) == 11  # + 2 panel titles, subtitle
    assert fig.layout.title.text.startswith("group 3: π[24..31], member positions r = 0–7")
    shown = min(len(v["pages"]), 24)  # the figure pages the union 24 columns at a time
    assert list(fig.data[2].y) == v["rows"] and len(fig.data[2].x) == shown


def test_union_histograms():
    topk = random_topk(n=203)
    counts = union_size_counts(topk, {"original": None, "W64": greedy_regroup(topk, Grouping(64))})
    assert all(c.sum() == 26 for c in counts.values())
    cap = Capture.from_arrays(topk)
    counts, title = union_hist_for(cap, 160, 64)
    assert list(counts) == ["original", "W64"] and title.startswith("first 160 queries")
    fig = union_hist_figure(counts, widget=True, title=title)
    counts2, title2 = union_hist_for(cap, 80, 64)
    update_union_hist(fig, counts2, title2)
    assert sum(fig.data[0].y) == 10 and subtitle_text(fig) == title2
    grid = union_hist_grid({"a": counts, "b": counts2})
    assert len(grid.data) == 4 and sum(t.showlegend for t in grid.data) == 2
