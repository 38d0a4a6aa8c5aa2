"""Chapters 04-07 as a newcomer reads them: openings, kernel excerpts, exercises, paged views.

Every exercise must accept its reference and reject, with one line, an answer a reader could
plausibly write; the references themselves are checked against the library (simulator,
union plan, float64 softmax), so an exercise cannot drift from what the chapter teaches.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pageweaver_edu import Grouping, greedy_regroup, prepare_unions
from pageweaver_edu.notebook.bitmap import DELTA, regroup_cost_table
from pageweaver_edu.notebook.pipeline import SLOT_SCHEDULE, pipeline_explorer
from pageweaver_edu.notebook.union import MEMBERSHIP, slot_map_figure, slot_map_view
from pageweaver_edu.notebook.union8_live import ONLINE_STEP, online_softmax_step, state_figure
from pageweaver_edu.replay.pipeline import simulate
from pageweaver_edu.workloads import make_preset

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ("04_bitmap_popcount", "05_union_preparation", "06_figure3_pipeline",
            "07_union8_kernel")


def _cells(chapter: str) -> list[dict]:
    return json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text("utf-8"))["cells"]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_opens_with_what_why_and_time(chapter):
    first = "".join(_cells(chapter)[0]["source"])
    for start in ("You will learn", "You need", "Time: about"):
        assert re.search(rf"^\*?\*?{start}", first, re.M), f"{chapter}: no '{start}' line"
    assert re.search(r"Time: about \d+ minutes", first), chapter


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_shows_kernel_code_and_a_checked_exercise(chapter):
    cells = _cells(chapter)
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert any("kernel_excerpt(" in c for c in code), f"{chapter} shows no kernel code"
    checks = [c for c in code if ".check(" in c and "NotImplementedError" in c]
    assert checks, f"{chapter} has no exercise cell"
    assert all(c.startswith("# NBVAL_CHECK_OUTPUT") for c in checks)
    text = "".join("".join(o.get("text", "")) for c in cells if c["cell_type"] == "code"
                   and "".join(c["source"]) in checks for o in c.get("outputs", []))
    assert "not written yet" in text, f"{chapter}: the saved exercise output is missing"


def _unwritten(*_):
    raise NotImplementedError


def _delta_overlap(bits, union):  # counts the pages already in U instead of the new ones
    return int(np.bitwise_count(bits & union).sum())


def _byte_by_query_id(topk, members, p):  # bit i of the query instead of bit r of the position
    return sum(1 << (i % 8) for i in members if p in topk[i])


def _schedule_previous_page(k, n):  # waits for the page before, not the slot's last user
    return k % n, (k // n) & 1, (k - 1 if k >= n else None)


def _online_no_rescale(m, l, o, z, v):  # noqa: E741  forgets α on ℓ
    m2 = max(m, float(np.max(z)))
    p = np.exp2(np.asarray(z) - m2)
    return m2, l + p.sum(), np.exp2(m - m2) * np.asarray(o) + p @ v


@pytest.mark.parametrize("exercise, wrong", [
    (DELTA, _delta_overlap), (MEMBERSHIP, _byte_by_query_id),
    (SLOT_SCHEDULE, _schedule_previous_page), (ONLINE_STEP, _online_no_rescale),
], ids=["04-delta", "05-membership", "06-schedule", "07-online-step"])
def test_exercise_accepts_reference_and_rejects_a_slip(exercise, wrong, capsys):
    assert exercise.check(exercise.reference)
    assert capsys.readouterr().out.startswith("✓")
    bad = exercise.run(wrong)
    assert not bad.passed and "differs" in bad.message and "\n" not in bad.message
    todo = exercise.run(_unwritten)
    assert not todo.passed and todo.message.startswith(f"{exercise.name}: not written yet.")


def test_delta_cases_cover_the_edges():
    deltas = [DELTA.reference(*args) for args, _ in DELTA.cases(np.random.default_rng(0))]
    assert deltas[-5:] == [1, 0, 2, 0, 3]  # worked example, ∅, U = ∅, S_j ⊆ U, page 511


def test_membership_reference_is_the_union_plan_byte():
    topk = np.sort(np.random.default_rng(1).integers(0, 40, (64, 6)), axis=1)
    perm = greedy_regroup(topk, Grouping(64))
    plan = prepare_unions(topk, perm)
    for g in (0, 3, 7):
        base, size = plan.group_slots[g]
        members = plan.perm[base:base + size].tolist()
        pages, masks = plan.group_pages(g)
        assert [MEMBERSHIP.reference(topk, members, int(p)) for p in pages] == masks.tolist()
    assert MEMBERSHIP.reference(topk, members, 10_000) == 0


@pytest.mark.parametrize("n_slots", [1, 2, 3])
def test_slot_schedule_reference_matches_the_simulator(n_slots):
    flags = np.random.default_rng(n_slots).random((17, 2)) < 0.6
    res = simulate(np.arange(17), flags, n_slots=n_slots)
    free = {e.index: e.t_start for e in res.events if e.kind == "free②"}
    used = {}
    for e in (e for e in res.events if e.kind == "load"):
        b, parity, after = SLOT_SCHEDULE.reference(e.index, n_slots)
        assert e.slot == b and parity == used.get(b, 0) & 1
        used[b] = used.get(b, 0) + 1
        if after is None:
            assert e.index < n_slots
        else:
            assert e.t_start >= free[after] and after % n_slots == b


def test_online_steps_give_the_softmax():
    rng = np.random.default_rng(3)
    z, v = rng.normal(0, 3, 40), rng.normal(size=(40, 5))
    z[[3, 17]] = -np.inf
    m, l, o = -np.inf, 0.0, np.zeros(5)  # noqa: E741
    for lo in range(0, 40, 8):
        m, l, o = online_softmax_step(m, l, o, z[lo:lo + 8], v[lo:lo + 8])  # noqa: E741
    p = np.exp2(z - z.max())
    np.testing.assert_allclose(o / l, (p / p.sum()) @ v, rtol=1e-12)


def test_state_figure_axes_name_their_quantities():
    trace = [{"slot": 0, "page": p, "stage": s, "m": float(p), "l": 1.0 + p}
             for p in (3, 9) for s in (0, 1)] + [{"slot": 1, "page": 4, "stage": 0, "m": 0.0,
                                                  "l": 1.0}]
    fig = state_figure(trace, 0)
    assert fig.layout.yaxis.title.text == "m (log2 units)"
    assert fig.layout.yaxis2.title.text.startswith("ℓ")
    assert list(fig.data[0].x) == ["p3·st0", "p3·st1", "p9·st0", "p9·st1"]


def test_slot_map_pages_a_long_union():
    cap = make_preset("cap64k")
    plan = prepare_unions(cap.topk[:2048])
    g = int(np.argmax(plan.page_counts))
    n = int(plan.page_counts[g])
    assert n > 48
    v = slot_map_view(plan, g, first=24, width=24)
    assert v["z"].shape[1] == 24 and v["pages"].tolist() == plan.group_pages(g)[0][24:48].tolist()
    assert f"|U<sub>G</sub>| = {n} pages, union indices k = 24–47 shown" in v["subtitle"]
    computes = plan.cta_any[plan.page_offsets[g]:plan.page_offsets[g + 1]].sum(axis=0)
    assert f"CTA0 computes {computes[0]}, CTA1 {computes[1]}" in v["subtitle"]
    assert len(slot_map_figure(plan, g).data[2].x) == 24
    tail = slot_map_view(plan, g, first=10_000, width=24)  # past the end: the last 24 pages
    assert tail["pages"].tolist() == plan.group_pages(g)[0][-24:].tolist()


def test_explorer_pages_the_timeline():
    pytest.importorskip("ipywidgets")
    flags = np.random.default_rng(0).random((50, 2)) < 0.7
    ex = pipeline_explorer(np.arange(50), flags, n_show=12)
    c = ex.controls
    c["pages"].value = 50
    assert c["view"].max == 49 and len(ex.result.flags) == 50
    c["view"].value = 24
    drawn = {int(s.split("<br>")[0][1:]) for s in ex.fig.data[0].text}
    assert drawn == set(range(24, 36))
    assert ex.fig.layout.xaxis.range[0] > 0
    c["broken"].value = True
    assert "hazards: 0" not in ex.status.value  # the status counts the whole walk


def test_cost_table_splits_warp_and_shared_memory_levels():
    lines = regroup_cost_table(make_preset("cap64k")).splitlines()
    head = lines[0].split()
    assert "warp" in head and "smem" in head
    w64, w128 = (line.split() for line in lines[1:3])
    shfl = head.index("shfl") - 1  # "warp shfl" and "smem lvls" are two-word titles
    assert (w64[shfl], w64[shfl + 1], w128[shfl], w128[shfl + 1]) == ("5", "1", "5", "2")


