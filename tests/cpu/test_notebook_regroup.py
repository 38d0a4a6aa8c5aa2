"""Chapter 03 helpers: the traced examples, the widget callbacks, boundaries and the W curve."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.union_metrics import union_stats
from pageweaver_edu.core.windows import chunk_table
from pageweaver_edu.notebook.regroup import (
    G3_EXAMPLE,
    greedy_steps,
    grouping_view_figure,
    round_view_figure,
    summary_text,
    trace_table,
    update_grouping_view,
    update_round_view,
    update_window_curve,
    window_curve_figure,
)
from pageweaver_edu.notebook.regroup_cases import (
    boundary_figure,
    crossing_groups,
    doubling_windows,
    fallback_report,
    window_curve,
)
from pageweaver_edu.notebook.regroup_rounds import (
    MAX_COLUMNS,
    OTHER_IN_U,
    OTHER_NEW,
    member_positions,
)
from pageweaver_edu.notebook.style import subtitle_text
from pageweaver_edu.regroup.bitmap import greedy_regroup
from pageweaver_edu.regroup.sets import greedy_regroup_sets
from pageweaver_edu.workloads import make_preset
from tests.helpers.strategies import grouping_case

# --- the paper's g = 3 example ---------------------------------------------------------------


def test_trace_table_g3():
    text = trace_table(greedy_steps(G3_EXAMPLE, Grouping(6, 3)))
    lines = text.splitlines()
    assert len(lines) == 2 + 6
    assert "q1:2 q2:1 q3:2 q4:2 q5:2" in lines[3] and "q2 (1)" in lines[3]
    assert "q4:1 q5:1" in lines[6] and "q4 (1)" in lines[6]


# --- widget callbacks ------------------------------------------------------------------------


def _plus_count(text_row, columns) -> int:
    """``+`` cells of a row plus its ``other +`` count (the pages not drawn)."""
    count = sum(t == "+" for t, c in zip(text_row, columns, strict=True) if c != OTHER_NEW)
    folded = [t for t, c in zip(text_row, columns, strict=True) if c == OTHER_NEW]
    return count + sum(int(t[1:]) for t in folded if t)


def _check_round_view(steps, fig, k):
    rnd = steps.trace.rounds[k]
    heat, bars, status = fig.data
    text, columns = np.asarray(heat.text), list(heat.x)
    assert list(heat.y[:2]) == ["U before pick", "U after pick"]
    for row, label in enumerate(heat.y[2:], start=2):
        q = int(label[1:])
        if q in rnd.costs:  # the "+" cells of a candidate, drawn or counted, are its δ(j)
            assert _plus_count(text[row], columns) == rnd.costs[q]
    u_after = sum(t == "U" for t in text[1]) + sum(int(t[1:]) for t, c in
                                                   zip(text[1], columns, strict=True)
                                                   if c == OTHER_IN_U and t)
    assert u_after == len(rnd.union_after)
    assert f"q{rnd.choice}" in fig.layout.title.text
    assert any("r = " in s and ("pick" in s or "seed" in s) for s in status.text)
    assert sum(x is not None for x in bars.x) == len(rnd.costs)
    return columns


def test_round_view_plus_marks_equal_costs():
    steps = greedy_steps(G3_EXAMPLE, Grouping(6, 3))
    fig = round_view_figure(steps)
    for k in range(len(steps.trace.rounds)):
        update_round_view(fig, steps, k)
        assert _check_round_view(steps, fig, k) == ["1", "2", "3", "4", "8", "9", "10"]


def test_round_view_of_a_wide_window_draws_the_round_pages_and_counts_the_rest():
    steps = greedy_steps(make_preset("cap64k").topk[:32], Grouping(16))
    fig = round_view_figure(steps)
    positions = member_positions(steps)
    for k, rnd in enumerate(steps.trace.rounds):
        update_round_view(fig, steps, k)
        columns = _check_round_view(steps, fig, k)
        assert len(columns) <= MAX_COLUMNS
        assert columns[:-2] == [str(p) for p in sorted(steps.sets[rnd.choice])]
        assert columns[-2:] == [OTHER_NEW, OTHER_IN_U]
        assert "other pages" in fig.layout.xaxis.title.text
        assert f"r = {positions[k]}" in " ".join(fig.data[2].text)
    assert positions[:8] == list(range(8)) and positions[8] == 0


def test_round_view_follows_windows_of_a_preset():
    steps = greedy_steps(make_preset("cap64k").topk[:64], Grouping(16))
    fig = round_view_figure(steps, 0)
    update_round_view(fig, steps, 40)  # round 40 lies in window 2
    assert fig.data[0].y[2] == "q32" and len(fig.data[0].y) == 2 + 16


def test_grouping_view_summary_matches_union_stats():
    cap = make_preset("cap64k")
    topk = cap.topk[:1000]
    fig = grouping_view_figure()
    s = update_grouping_view(fig, topk, 8, 64)
    perm = greedy_regroup(topk, Grouping(64))
    assert s["visits_original"] == union_stats(topk, group=8).union_visits
    assert s["visits_regrouped"] == union_stats(topk, perm, group=8).union_visits
    assert s["edges"] == union_stats(topk, group=8).edges
    assert list(fig.data[1].y) == union_stats(topk, perm, group=8).union_sizes.tolist()
    assert len(fig.data[0].x) == s["groups"] == 125
    assert "union visits" in summary_text(s) and "→" in subtitle_text(fig)


def test_grouping_view_capacity_fallback_keeps_identity():
    cap = make_preset("beyond-capacity")
    fig = grouping_view_figure()
    s = update_grouping_view(fig, cap.topk[:512], 8, 64, lengths=cap.lengths[:512])
    assert s["fallback_windows"] == 8 and s["visits_regrouped"] == s["visits_original"]
    assert "capacity fallback" in summary_text(s)


def test_window_curve_first_point_is_original_order():
    from pageweaver_edu.core.windows import window_table
    topk = make_preset("cap16k-high-overlap").topk[:600]
    c = window_curve(window_table(topk, Grouping(4, 4)))
    assert c["windows"] == doubling_windows(4) == [4, 8, 16, 32, 64, 128, 256, 512]
    assert c["visits"][0] == c["original"]  # W = g: a window is one group, unions unchanged
    for w, v in zip(c["windows"], c["visits"], strict=True):
        assert v == union_stats(topk, greedy_regroup(topk, Grouping(w, 4)), group=4).union_visits
    fig = window_curve_figure()
    update_window_curve(fig, topk, 4)
    assert list(fig.data[0].y) == c["visits"] and fig.data[1].y[0] == c["original"]


# --- boundaries and the capacity fallback ----------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(case=grouping_case())
def test_groups_never_cross_request_chunk_or_window(case):
    from pageweaver_edu.core.windows import window_table
    topk, window, group, offsets, chunk = case
    perm = greedy_regroup(topk, Grouping(window, group, chunk_size=chunk), request_offsets=offsets)
    plan = window_table(topk, Grouping(window, group, chunk_size=chunk), request_offsets=offsets)
    for spans in (chunk_table(offsets, chunk), plan.windows):
        assert crossing_groups(perm, spans, group, offsets) == []


def test_boundary_figure_marks_crossings():
    topk = np.array([[1, 2, 3], [10, 11, 12], [1, 2, 3], [10, 11, 12]] + [[20, 21, -1]] * 2)
    perm = greedy_regroup(topk, Grouping(4, 2), request_offsets=[0, 2, 6])
    naive = greedy_regroup(topk, Grouping(6, 2))
    fig = boundary_figure({"kept": perm, "naive": naive}, Grouping(4, 2), [0, 2, 6])
    texts = [list(tr.text) for tr in fig.data if tr.type == "scatter"]
    assert not any("✗" in t for t in texts[0]) and any("✗" in t for t in texts[1])


def test_fallback_report_lines():
    topk = [[1, 2], [3, 4], [1, 2], [3, 4], [600, 1], [2, 3], [600, 2], [1, 3]]
    lines = fallback_report(topk, Grouping(4, 2, chunk_size=4))
    assert lines[0].endswith("regrouped") and "needs 601 pages > B = 512" in lines[1]
    lines = fallback_report(topk[:4], Grouping(4, 2), lengths=[70_000] * 4)
    assert "ceil(max L_i / P) = 547" in lines[0] and "identity" in lines[0]


@settings(max_examples=100, deadline=None)
@given(case=grouping_case(), capacity=st.sampled_from([16, 512]))
def test_window_curve_matches_reference_with_boundaries(case, capacity):
    from pageweaver_edu.core.windows import window_table
    topk, window, group, offsets, chunk = case
    grouping = Grouping(group, group, capacity, chunk)
    c = window_curve(window_table(topk, grouping, request_offsets=offsets), [group, window])
    assert c["original"] == union_stats(topk, None, offsets, group).union_visits
    for w, v in zip(c["windows"], c["visits"], strict=True):
        perm = greedy_regroup_sets(topk, grouping.with_window(w), request_offsets=offsets)
        assert v == union_stats(topk, perm, offsets, group).union_visits


def test_chapter_03_apps_redraw_a_setting_seen_before_without_regrouping(monkeypatch):
    from pageweaver_edu.notebook import regroup
    from pageweaver_edu.notebook.regroup_apps import grouping_app, window_curve_app

    caps = {"cap64k": make_preset("cap64k")}
    grouping, curve = grouping_app(caps, n=256), window_curve_app(caps, n=256)
    first = (grouping.summary, curve.curve, list(curve.fig.data[0].y))
    for app in (grouping, curve):
        app.controls["g"].value = 4
    with monkeypatch.context() as m:  # back to g = 8: nothing is regrouped again
        m.setattr(regroup, "_regrouped_summary", lambda *a, **k: pytest.fail("regrouped"))
        m.setattr(regroup, "window_curve", lambda *a, **k: pytest.fail("regrouped"))
        for app in (grouping, curve):
            app.controls["g"].value = 8
    assert grouping.summary is first[0] and curve.curve is first[1]
    assert list(curve.fig.data[0].y) == first[2] and grouping.status.value != ""
