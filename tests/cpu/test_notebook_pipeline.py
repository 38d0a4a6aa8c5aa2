"""Tests for the chapter 06 helpers (pageweaver_edu.notebook.pipeline)."""

from __future__ import annotations

import numpy as np
import pytest

from pageweaver_edu.core.union_plan import prepare_unions
from pageweaver_edu.notebook.pipeline import (
    busy_table,
    cta_page_counts,
    deadlock_text,
    group_table,
    hazard_text,
    largest_lead,
    lockstep_table,
    pick_group,
    pipeline_explorer,
    status_line,
)
from pageweaver_edu.notebook.style import subtitle_text
from pageweaver_edu.replay.pipeline import flags_from_masks, simulate


def _plan():
    # group 0: slots 0-3 select {1, 2}, slots 4-7 select {2}; group 1: all select {5}
    topk = np.array([[1, 2]] * 4 + [[2, -1]] * 4 + [[5, -1]] * 8)
    return prepare_unions(topk)


def test_cta_page_counts_and_pick_group():
    plan = _plan()
    counts = cta_page_counts(plan)
    assert counts.tolist() == [[2, 1], [1, 1]]
    for g in range(2):
        _, masks = plan.group_pages(g)
        assert counts[g].tolist() == flags_from_masks(masks).sum(axis=0).tolist()
    assert pick_group(plan, min_diff=1) == 0
    with pytest.raises(ValueError):
        pick_group(plan, min_diff=2)


def test_group_table_rows():
    pages, masks = _plan().group_pages(0)
    text = group_table(pages, masks)
    assert "| 0 | 1 | 0 | `····` | `1111` | compute | skip |" in text
    assert "| 1 | 2 | 1 | `1111` | `1111` | compute | compute |" in text
    assert "bits 7–4 (CTA1) | bits 3–0 (CTA0)" in text
    assert "(1 more)" in group_table(pages, masks, n_show=1)


def test_texts_for_hazard_and_deadlock():
    pages = np.array([10, 11, 12, 13])
    flags = np.array([[1, 1], [0, 1], [0, 1], [0, 1]], dtype=bool)
    broken = simulate(pages, flags, protocol="broken")
    assert broken.hazards
    assert hazard_text(broken.hazards[0]).startswith("write-after-read: load of index 3")
    assert "hazards: 1" in status_line(broken) and "deadlock: none" in status_line(broken)
    flags[:, 0] = False
    stuck = simulate(pages, flags, skip_releases=False)
    assert "waits for event ② of index 0" in deadlock_text(stuck.deadlock)
    assert "DEADLOCK" in status_line(stuck)
    ok = simulate(pages, flags)
    assert status_line(ok).startswith(f"makespan {ok.makespan:g}")
    table = busy_table({"a": ok})
    assert "| a | " in table and table.count("\n") == 3


def test_explorer_updates_in_place():
    pytest.importorskip("ipywidgets")
    pages = np.arange(20, 30)
    flags = np.ones((10, 2), dtype=bool)
    flags[::2, 0] = False
    ex = pipeline_explorer(pages, flags, n_show=6)
    fig = ex.fig
    assert ex.result.ok and len(ex.result.flags) == 6
    ex.controls["pages"].value = 10
    assert len(ex.result.flags) == 10 and ex.fig is fig
    ex.controls["qk"].value = 3.0
    assert ex.result.durations.qk == 3.0
    assert f"makespan {ex.result.makespan:g}" in subtitle_text(fig)
    ex.controls["broken"].value = True
    assert ex.result.protocol == "broken" and ex.result.hazards
    assert "first: write-after-read" in ex.status.value
    ex.controls["broken"].value = False
    ex.controls["no_release"].value = True
    assert ex.result.deadlock is not None and "DEADLOCK" in ex.status.value
    ex.controls["no_release"].value = False
    ex.controls["slots"].value = 3
    assert ex.result.n_slots == 3 and ex.result.ok


def test_largest_lead_is_the_ring_depth_less_one():
    # CTA1 selects nothing: it skips every page as soon as it lands, so it runs ahead of CTA0
    # until the loader waits for CTA0's release of the page depth slots back
    pages = np.arange(12)
    one_sided = np.array([[True, False]] * 12)
    both = np.ones((12, 2), dtype=bool)
    for depth in (1, 2, 3, 4, 6):
        assert largest_lead(simulate(pages, one_sided, n_slots=depth)) == depth - 1
        assert largest_lead(simulate(pages, both, n_slots=depth)) == 0


def test_lockstep_table_rows_match_the_simulator():
    pages = np.arange(10)
    flags = np.array([[True, False], [False, True]] * 5)
    table = lockstep_table(pages, flags, depths=(2, 6)).splitlines()
    assert len(table) == 4
    for line, depth in zip(table[2:], (2, 6), strict=True):
        r = simulate(pages, flags, n_slots=depth)
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells == [str(depth), f"{r.makespan:g}", f"{r.idle['cta0']:g}",
                         f"{r.idle['cta1']:g}", str(largest_lead(r))]
    deep, shallow = (simulate(pages, flags, n_slots=k).makespan for k in (6, 2))
    assert deep < shallow  # alternating members: a deeper ring lets each half run ahead
