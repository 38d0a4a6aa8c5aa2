"""Every FigureWidget of the series holds plain lists, never NumPy arrays, in its traces.

plotly sends a NumPy array to the browser as a typed-array spec (``{"dtype", "bdata"}``); the
browser's answer (the trace defaults it computed) then carries that spec, and plotly's merge
of the answer (``BaseFigureWidget._remove_overlapping_props``) tests ``not value`` on the
array it kept: ``ValueError: The truth value of an array ... is ambiguous``, raised in the
kernel after every redraw (the browser test catches it in the page). Lists never take that
path. Each app is built and each of its controls moved; then every trace property and the
layout are searched for arrays.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.workloads import make_preset


def _arrays(value, path=()):
    """Paths of every NumPy array inside a nested dict / list / tuple."""
    if isinstance(value, np.ndarray):
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _arrays(v, (*path, k))]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in _arrays(v, (*path, i))]
    return []


def _assert_plain(fig, what: str = "") -> None:
    assert isinstance(fig, go.FigureWidget)
    found = [(k, t.type, *p) for k, t in enumerate(fig.data) for p in _arrays(t._props)]
    found += [("layout", *p) for p in _arrays(fig._layout)]
    assert not found, f"{what}: NumPy arrays in a FigureWidget: {found[:8]}"


def _widget_figs(box) -> list:
    """Every FigureWidget inside an ipywidgets container."""
    if isinstance(box, go.FigureWidget):
        return [box]
    return [f for child in getattr(box, "children", ()) for f in _widget_figs(child)]


def _move_each(controls) -> None:
    """Give every value control another value (next option, next step, flipped box)."""
    import ipywidgets as w

    for ctl in controls:
        if isinstance(ctl, w.Checkbox):
            ctl.value = not ctl.value
        elif isinstance(ctl, (w.Dropdown, w.ToggleButtons, w.SelectionSlider)):
            values = [o[1] if isinstance(o, tuple) else o for o in ctl.options]
            ctl.value = values[(values.index(ctl.value) + 1) % len(values)]
        elif isinstance(ctl, (w.IntSlider, w.FloatSlider)):
            ctl.value = ctl.max if ctl.value != ctl.max else ctl.min


def _controls(box) -> list:
    import ipywidgets as w

    if isinstance(box, w.ValueWidget) and not isinstance(box, (w.HTML, w.Label, w.Text)):
        return [box]
    return [c for child in getattr(box, "children", ()) for c in _controls(child)]


@pytest.fixture(scope="module")
def cap():
    return make_preset("cap64k")


def _apps(cap):
    from pageweaver_edu.notebook import open_questions, pagepairs, supports
    from pageweaver_edu.notebook.fp8 import budget_app
    from pageweaver_edu.notebook.pipeline import pipeline_explorer
    from pageweaver_edu.notebook.regroup import G3_EXAMPLE, greedy_steps
    from pageweaver_edu.notebook.regroup_apps import (
        grouping_app,
        round_stepper_app,
        window_curve_app,
    )
    from pageweaver_edu.replay.fp8_budget import make_case
    from pageweaver_edu.report.app import capture_app
    from pageweaver_edu.workloads import capture_like_workload

    top = cap.topk[:256]
    small = {"cap64k": cap}
    yield "token strip", supports.token_strip_app()
    yield "group editor", supports.group_editor_app()
    yield "preset profile", supports.preset_profile_app(top, n=256)
    yield "round stepper", round_stepper_app({"g3": greedy_steps(G3_EXAMPLE, Grouping(6, 3))})
    yield "grouping", grouping_app(small, n=256)
    yield "W curve", window_curve_app(small, n=256)
    yield "pipeline", _pipeline_box(cap, pipeline_explorer)
    yield "C4 weight", open_questions.c4_weight_app(top)
    yield "page pairs", pagepairs.sweep_app(pagepairs.community_sweep((2, 8), n=512))
    small = capture_like_workload(n=8, prefix_tokens=4096, seed=0)
    yield "FP8 budget", budget_app(make_case(small.topk, small.causal_pos, small.lengths, seed=1))
    yield "capture", capture_app(cap, "cap64k")


def _pipeline_box(cap, pipeline_explorer):
    from pageweaver_edu.core.union_plan import prepare_unions
    from pageweaver_edu.regroup.bitmap import greedy_regroup
    from pageweaver_edu.replay.pipeline import flags_from_masks

    top = cap.topk[:256]
    plan = prepare_unions(top, greedy_regroup(top, Grouping(128)))
    pages, masks = plan.group_pages(0)
    return pipeline_explorer(pages, flags_from_masks(masks), n_show=12).box


def test_every_app_keeps_lists_after_every_control_moves(cap):
    for name, box in _apps(cap):
        figs = _widget_figs(box)
        assert figs, f"{name}: no FigureWidget found"
        for fig in figs:
            _assert_plain(fig, name)
        _move_each(_controls(box))
        for fig in figs:
            _assert_plain(fig, f"{name}, controls moved")


def test_chapter_04_05_redraws_keep_lists(cap):
    from pageweaver_edu.core.union_plan import prepare_unions
    from pageweaver_edu.notebook import bitmap, union
    from pageweaver_edu.regroup.bitmap import greedy_regroup

    top = cap.topk[:512]
    stepper = bitmap.CtaStepper(top, window=128, index=0, lengths=cap.lengths[:512],
                                page_size=cap.page_size)
    _assert_plain(stepper.fig)
    for args in ((128, 0, 5), (64, 1, 0), (128, 2, 3)):
        stepper.update(*args)
        _assert_plain(stepper.fig)
    plan = prepare_unions(top, greedy_regroup(top, Grouping(128)))
    slots = union.slot_map_figure(plan, 3, widget=True)
    union.update_slot_map(slots, plan, 5, 24)
    _assert_plain(slots)
    counts, title = union.union_hist_for(cap, 512, 128)
    hist = union.union_hist_figure(counts, widget=True, title=title)
    union.update_union_hist(hist, *union.union_hist_for(cap, 256, 64))
    _assert_plain(hist)
