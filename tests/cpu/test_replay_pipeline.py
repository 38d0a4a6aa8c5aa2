"""Tests for the Figure 3 pipeline simulator (pageweaver_edu.replay.pipeline)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pageweaver_edu.core.inputs import PageWeaverInputError
from pageweaver_edu.replay.pipeline import (
    Durations,
    Event,
    PipelineInputError,
    find_hazards,
    flags_from_masks,
    simulate,
)

dur_values = st.floats(min_value=0.0, max_value=8.0, allow_nan=False, allow_infinity=False)
durations_st = st.builds(
    Durations,
    load=dur_values,
    qk=dur_values,
    softmax=dur_values,
    pv=dur_values,
    skip=st.floats(min_value=0.0, max_value=0.5),
)


@st.composite
def groups(draw, min_pages=0, max_pages=14):
    n = draw(st.integers(min_pages, max_pages))
    bits = draw(st.lists(st.booleans(), min_size=2 * n, max_size=2 * n))
    flags = np.array(bits, dtype=bool).reshape(n, 2)
    pages = np.array(
        sorted(draw(st.sets(st.integers(0, 511), min_size=n, max_size=n))), dtype=np.int64
    )
    return pages, flags


def _by(events, kind, actor=None):
    return [e for e in events if e.kind == kind and (actor is None or e.actor == actor)]


def _one(events, kind, actor, index):
    hits = [e for e in events if e.kind == kind and e.actor == actor and e.index == index]
    assert len(hits) == 1, (kind, actor, index, hits)
    return hits[0]


def _slower_cta1(n=6):
    """CTA0's queries select nothing, CTA1's select every page: CTA1 is the slow consumer."""
    flags = np.zeros((n, 2), dtype=bool)
    flags[:, 1] = True
    return np.arange(100, 100 + n), flags


# ---------------------------------------------------------------- correct protocol properties


@settings(max_examples=300, deadline=None)
@given(groups(), durations_st, st.integers(1, 4))
def test_correct_protocol_never_hazards_or_deadlocks(group, d, n_slots):
    pages, flags = group
    r = simulate(pages, flags, d, n_slots=n_slots)
    assert r.hazards == []
    assert r.deadlock is None
    assert r.ok


@settings(max_examples=200, deadline=None)
@given(groups(), durations_st, st.integers(1, 4), st.sampled_from(["correct", "broken"]))
def test_every_page_loaded_once_in_order(group, d, n_slots, protocol):
    pages, flags = group
    ev = simulate(pages, flags, d, n_slots=n_slots, protocol=protocol).events
    loads = _by(ev, "load")
    assert [e.index for e in loads] == list(range(len(pages)))
    assert [e.page for e in loads] == pages.tolist()
    assert all(e.slot == e.index % n_slots for e in ev)
    for a, b in zip(loads, loads[1:], strict=False):  # one loader, loads issued in order
        assert b.t_start >= a.t_end
    for ld in loads:  # event ① exactly when the load lands
        assert _one(ev, "ready①", "loader", ld.index).t_start == ld.t_end


@settings(max_examples=200, deadline=None)
@given(groups(), durations_st, st.integers(1, 4))
def test_each_cta_computes_its_pages_skips_the_rest_releases_all(group, d, n_slots):
    pages, flags = group
    ev = simulate(pages, flags, d, n_slots=n_slots).events
    n = len(pages)
    for c, actor in enumerate(("cta0", "cta1")):
        want = [i for i in range(n) if flags[i, c]]
        for kind in ("qk", "softmax", "pv"):
            assert [e.index for e in _by(ev, kind, actor)] == want
        assert [e.index for e in _by(ev, "skip", actor)] == [i for i in range(n) if not flags[i, c]]
        assert [e.index for e in _by(ev, "release", actor)] == list(range(n))
        for i in want:  # QK -> softmax -> PV, all after event ①, release after PV
            qk, sm, pv = (_one(ev, k, actor, i) for k in ("qk", "softmax", "pv"))
            assert _one(ev, "ready①", "loader", i).t_start <= qk.t_start
            assert qk.t_end <= sm.t_start and sm.t_end <= pv.t_start
            assert _one(ev, "release", actor, i).t_start >= pv.t_end


@settings(max_examples=200, deadline=None)
@given(groups(), durations_st, st.integers(1, 4))
def test_event2_after_both_releases_and_slot_reuse_order(group, d, n_slots):
    pages, flags = group
    ev = simulate(pages, flags, d, n_slots=n_slots).events
    n = len(pages)
    for i in range(n):
        free = _one(ev, "free②", "loader", i).t_start
        rel = [_one(ev, "release", a, i).t_start for a in ("cta0", "cta1")]
        assert free == max(rel)
        if i + n_slots < n:  # the next page into this slot is written only after event ②
            assert _one(ev, "load", "loader", i + n_slots).t_start >= free
    for e in ev:
        assert e.t_end >= e.t_start >= 0
    # the event list is in time order
    assert [e.t_start for e in ev] == sorted(e.t_start for e in ev)


@settings(max_examples=200, deadline=None)
@given(groups(), durations_st, st.integers(1, 4))
def test_makespan_lower_bound_and_accounting(group, d, n_slots):
    pages, flags = group
    r = simulate(pages, flags, d, n_slots=n_slots)
    per_page = d.qk + d.softmax + d.pv
    n = len(pages)
    work = [flags[:, c].sum() * per_page + (n - flags[:, c].sum()) * d.skip for c in (0, 1)]
    slack = 1e-9 * (1 + r.makespan)
    assert r.makespan + slack >= max(work)
    assert r.makespan + slack >= n * d.load
    if n:
        assert r.makespan + slack >= d.load + max(work)  # nothing computes before load 0 lands
    for c, a in enumerate(("cta0", "cta1")):
        assert r.busy[a] == pytest.approx(work[c])
    for a in ("loader", "cta0", "cta1"):
        assert r.busy[a] + r.idle[a] == pytest.approx(r.makespan)
        assert r.idle[a] >= -slack


@settings(max_examples=50, deadline=None)
@given(groups(), durations_st, st.integers(1, 4), st.booleans())
def test_deterministic(group, d, n_slots, skip_releases):
    pages, flags = group
    a = simulate(pages, flags, d, n_slots=n_slots, skip_releases=skip_releases)
    b = simulate(pages.copy(), flags.copy(), d, n_slots=n_slots, skip_releases=skip_releases)
    assert a.events == b.events and a.deadlock == b.deadlock


def test_figure3_walkthrough():
    """Load0→slot0; compute 0 while Load1→slot1; both release slot0; Load2→slot0."""
    flags = np.ones((3, 2), dtype=bool)
    ev = simulate(np.array([7, 3, 9]), flags, Durations(load=1, qk=1, softmax=1, pv=1)).events
    assert _one(ev, "load", "loader", 0).slot == 0
    assert _one(ev, "load", "loader", 1).t_start == 1.0  # overlaps compute of page 0
    assert _one(ev, "qk", "cta0", 0).t_start == 1.0
    assert _one(ev, "free②", "loader", 0).t_start == 4.0
    load2 = _one(ev, "load", "loader", 2)
    assert (load2.slot, load2.t_start, load2.page) == (0, 4.0, 9)


# ---------------------------------------------------------------- broken protocol / hazards


def test_broken_protocol_reports_write_after_read():
    pages, flags = _slower_cta1()
    r = simulate(pages, flags, Durations(load=1, qk=1, softmax=0.5, pv=1), protocol="broken")
    assert not r.ok and r.deadlock is None
    first = r.hazards[0]
    # page 2's load overwrites slot 0 at t=2 while CTA1 still reads page 0 (until t=3.5)
    assert (first.kind, first.actor, first.index, first.slot, first.by_index, first.t) == (
        "write-after-read",
        "cta1",
        0,
        0,
        2,
        2.0,
    )
    assert all(h.actor == "cta1" and h.kind == "write-after-read" for h in r.hazards)
    # the same input under the correct protocol is clean
    assert simulate(pages, flags, protocol="correct").hazards == []


@settings(max_examples=200, deadline=None)
@given(groups(), durations_st, st.integers(1, 4))
def test_broken_protocol_safe_when_cta1_never_computes(group, d, n_slots):
    pages, flags = group
    flags = flags.copy()
    flags[:, 1] = False
    assert simulate(pages, flags, d, n_slots=n_slots, protocol="broken").hazards == []


def test_find_hazards_on_hand_made_timeline():
    ev = [
        Event("loader", "load", 0, 5, 0, 0.0, 1.0),
        Event("cta1", "qk", 0, 5, 0, 1.0, 3.0),
        Event("loader", "load", 1, 6, 0, 2.0, 2.5),  # same slot, before CTA1 finished
        Event("cta0", "qk", 1, 6, 0, 2.0, 2.2),  # reads before page 1 landed
    ]
    kinds = {(h.kind, h.actor, h.index, h.by_index) for h in find_hazards(ev)}
    assert kinds == {("write-after-read", "cta1", 0, 1), ("read-before-ready", "cta0", 1, 1)}
    assert find_hazards(ev[:2]) == []


# ---------------------------------------------------------------- deadlock


def test_skipping_cta_that_does_not_release_deadlocks():
    pages, flags = _slower_cta1(5)
    flags = flags[:, ::-1].copy()  # CTA1 skips every page
    r = simulate(pages, flags, skip_releases=False)
    assert r.deadlock is not None and not r.ok
    dl = r.deadlock
    assert (dl.index, dl.slot, dl.waiting_for, dl.missing) == (2, 0, 0, ("cta1",))
    assert any("event ② of index 0" in line for line in dl.blocked)
    assert len(_by(r.events, "load")) == 2  # stalled before page 2 could be loaded
    assert simulate(pages, flags, skip_releases=True).deadlock is None


@settings(max_examples=100, deadline=None)
@given(groups(min_pages=1), st.integers(1, 4))
def test_skip_releases_false_deadlocks_iff_a_skipped_slot_is_needed_again(group, n_slots):
    pages, flags = group
    r = simulate(pages, flags, n_slots=n_slots, skip_releases=False)
    n = len(pages)
    skipped = [i for i in range(n) if not flags[i].all()]
    needed = [i for i in skipped if i + n_slots < n]
    if not needed:
        assert r.deadlock is None
    else:
        assert r.deadlock is not None
        assert r.deadlock.waiting_for == needed[0]
        assert r.deadlock.index == needed[0] + n_slots


# ---------------------------------------------------------------- inputs


def test_flags_from_masks():
    got = flags_from_masks(np.array([0x01, 0x10, 0x81, 0x00], dtype=np.uint8))
    assert got.dtype == bool
    assert got.tolist() == [[True, False], [False, True], [True, True], [False, False]]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"flags": np.ones((3, 3), bool)}, "shape"),
        ({"flags": np.ones((2, 2), bool)}, "shape"),
        ({"flags": np.ones((3, 2), np.int8)}, "dtype bool"),
        ({"n_slots": 0}, "n_slots"),
        ({"n_slots": True}, "n_slots"),
        ({"n_slots": 1.5}, "n_slots"),
        ({"protocol": "fast"}, "protocol"),
        ({"pages": np.array([1, 1, 2])}, "repeat"),
        ({"pages": np.zeros((3, 1), np.int64)}, "1-D"),
        ({"pages": np.array([0.0, 1.0, 2.0])}, "integer"),
        ({"durations": {"load": 1.0}}, "Durations"),
    ],
)
def test_bad_inputs(kwargs, match):
    args = {"pages": np.arange(3), "flags": np.ones((3, 2), bool)} | kwargs
    with pytest.raises(ValueError, match=match) as info:
        simulate(**args)
    assert isinstance(info.value, PipelineInputError)
    assert isinstance(info.value, PageWeaverInputError)


@pytest.mark.parametrize("field", ["load", "qk", "softmax", "pv", "skip"])
@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf"), "1"])
def test_bad_durations(field, value):
    with pytest.raises(PipelineInputError, match=field):
        Durations(**{field: value})


def test_bad_masks():
    with pytest.raises(PipelineInputError, match="masks"):
        flags_from_masks(np.zeros((2, 2), np.uint8))


# ---------------------------------------------------------------- plot (optional dependency)


def test_timeline_figure_frames_and_size():
    pytest.importorskip("plotly")
    from pageweaver_edu.notebook.pipeline_plot import X_TITLE, timeline_figure

    rng = np.random.default_rng(0)
    flags = rng.random((20, 2)) < 0.6
    r = simulate(np.arange(20), flags, protocol="broken")
    fig = timeline_figure(r, n_frames=40)
    assert len(fig.to_json()) < 300_000
    assert len(fig.frames) == 40 and fig.layout.sliders and fig.layout.updatemenus
    assert fig.layout.xaxis.title.text == X_TITLE
    load = fig.data[0]
    assert all("<br>b" in t for t in load.text)  # slot b written on every load bar
    hazard = fig.data[-1]
    # one mark per (time, lane): hazards at one instant share it, every index in its label
    assert len(hazard.x) == len({(h.t, h.actor) for h in r.hazards}) > 0
    assert {str(h.index) for h in r.hazards} <= {
        i for label in hazard.text for i in label.lstrip("⚠").split(",")}
    for frame in fig.frames:  # frame k: a start-sorted prefix of every trace, never the future
        for fd, base in zip(frame.data, fig.data, strict=True):
            assert len(fd.y) <= len(base.y)


def test_timeline_widget_updates_in_place():
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from pageweaver_edu.notebook.pipeline_plot import timeline_widget, update_timeline_widget
    from pageweaver_edu.notebook.style import subtitle_text

    flags = np.ones((6, 2), dtype=bool)
    w = timeline_widget(simulate(np.arange(6), flags))
    traces = w.data
    slow = simulate(np.arange(6), flags, Durations(qk=3.0))
    update_timeline_widget(w, slow)
    assert all(a is b for a, b in zip(w.data, traces, strict=True))  # same trace objects
    assert slow.makespan == 28.0 and "makespan 28" in subtitle_text(w)
    assert [float(v) for v in w.data[1].x] == [3.0] * 12  # 2 CTAs × 6 QK bars, now 3 wide


def test_timeline_title_names_the_mode():
    from pageweaver_edu.notebook.pipeline_plot import _title

    pages, flags = np.arange(12), np.ones((12, 2), dtype=bool)
    flags[3, 1] = False
    assert _title(simulate(pages, flags))[0].endswith("correct protocol")
    assert "BROKEN protocol" in _title(simulate(pages, flags, protocol="broken"))[0]
    dead = simulate(pages, flags, skip_releases=False)
    assert dead.deadlock is not None and "DEADLOCK" in _title(dead)[0]
    assert "correct" not in _title(dead)[0]
