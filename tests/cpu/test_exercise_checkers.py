"""The exercise checkers: a fresh seed per attempt (printed, replayable), messages in the
chapter's notation with the differing value in full, a hint for a wrong type, and the checked
exercises of chapters 00, 08, 09 and 10 (right answers pass, slips fail with the message a
reader needs)."""

import numpy as np
import pytest

from pageweaver_edu.core.supports import support_sets
from pageweaver_edu.notebook import exercises
from pageweaver_edu.notebook.bitmap import DELTA as BITMAP_DELTA
from pageweaver_edu.notebook.exercise_sets import (
    COST_ACCOUNTING,
    GROUP_C4,
    PAIR_SPLIT,
    RESTORE_ROWS,
)
from pageweaver_edu.notebook.union import MEMBERSHIP


def _restore_right(o_exec, perm):
    out = np.zeros_like(o_exec)
    for r, i in enumerate(perm):
        out[i] = o_exec[r]
    return out


def _restore_gather(o_exec, perm):  # o_exec[π] instead of a scatter through π
    return np.asarray(o_exec)[np.asarray(perm)]


def _accounting_right(t0, t_fixed, t_online):
    return t0 - t_fixed, t_online - t_fixed, t0 - t_online


def _accounting_against_t0(t0, t_fixed, t_online):  # C_online measured from T0
    return t0 - t_fixed, t_online - t0, t0 - t_online


def _readers(topk, page):
    return {i for i, s in enumerate(support_sets(topk)) if page in s}


def _pair_right(topk, a, b):
    r_a, r_b = _readers(topk, a), _readers(topk, b)
    return r_a & r_b, r_a - r_b, r_b - r_a


def _pair_readers_not_split(topk, a, b):  # R_a and R_b without removing the common queries
    r_a, r_b = _readers(topk, a), _readers(topk, b)
    return r_a & r_b, r_a, r_b


def _c4_right(topk):
    s = support_sets(topk)
    return len(set().union(*s[:4])) + len(set().union(*s[4:8]))


def _c4_one_union(topk):  # |U_G| instead of the two halves
    return len(set().union(*support_sets(topk)))


@pytest.mark.parametrize("exercise, right, wrong, shown", [
    (RESTORE_ROWS, _restore_right, _restore_gather, "entries differ, first at"),
    (COST_ACCOUNTING, _accounting_right, _accounting_against_t0, "C_online"),
    (PAIR_SPLIT, _pair_right, _pair_readers_not_split, "common {"),
    (GROUP_C4, _c4_right, _c4_one_union, "r=0: S = {"),
], ids=["00-restore", "08-eq7", "09-pairs", "10-c4"])
def test_new_exercise_accepts_right_and_rejects_a_slip(exercise, right, wrong, shown, capsys):
    for seed in (1, 2, 3):
        assert exercise.check(right, seed=seed)
    assert capsys.readouterr().out.count("✓") == 3
    bad = [exercise.run(wrong, seed=seed) for seed in (1, 2, 3)]
    assert not any(b.passed for b in bad)
    assert all("differs" in b.message and shown in b.message and "\n" not in b.message
               for b in bad)


def test_every_attempt_draws_a_fresh_seed_and_prints_it():
    seeds = {GROUP_C4.run(_c4_one_union).seed for _ in range(5)}
    assert len(seeds) > 1
    first = GROUP_C4.run(_c4_one_union)
    assert f"(seed {first.seed})" in first.message
    assert f".check(your_function, seed={first.seed})" in first.message
    assert GROUP_C4.run(_c4_one_union, seed=first.seed).message == first.message  # replays
    ok = GROUP_C4.run(_c4_right)
    assert ok.passed and f"seed {ok.seed}" in ok.message


def test_bitmaps_show_as_sets_and_hex_words():
    def overlap(bits, union):
        return int(np.bitwise_count(bits & union).sum())

    msg = BITMAP_DELTA.run(overlap, seed=0).message
    assert "S_j = {" in msg and "U = " in msg and "= 0x" in msg and "…" not in msg
    assert exercises.show_set([]) == "∅"


def test_membership_bytes_show_in_binary_with_bit_zero_on_the_right():
    from pageweaver_edu.notebook.union import show_byte

    assert show_byte(0b00000101) == "0b00000101 (0x05, positions {0, 2})"
    msg = MEMBERSHIP.run(lambda topk, members, p: 0, seed=0).message
    assert "r=0: query" in msg and "expected: 0b" in msg


def test_long_values_are_never_elided():
    big = np.arange(2000)
    assert "..." not in exercises.show_value(big) and "1999" in exercises.show_value(big)


@pytest.mark.parametrize("got, want, words", [
    ("512", 512, "the text '512'; the answer is an int"),
    (None, 3, "returned None"),
    ([1, 2], 3, "you returned a list; the answer is an int"),
    ((1, 2), (1, 2, 3), "tuple of 3 values"),
    (np.zeros(3), np.zeros(4), "shape (3,)"),
    ([1, 2], {1, 2}, "the answer is a set"),
])
def test_a_wrong_type_gets_a_hint(got, want, words):
    assert words in exercises.type_hint(got, want)


def test_right_types_get_no_hint():
    assert exercises.type_hint(np.int64(3), 3) == ""
    assert exercises.type_hint(2.5, 3) == ""
    assert exercises.type_hint(np.zeros(3), np.ones(3)) == ""


def test_check_answer_hints_at_a_string(capsys):
    assert not exercises.check_answer("best window", "512", 512, "compare the union visits")
    assert "hint: you gave the text '512'" in capsys.readouterr().out
    assert not exercises.check_answer("best window", 128, 512, "compare the union visits")
    assert "compare the union visits" in capsys.readouterr().out
    assert exercises.check_answer("best window", 512, 512, "")
    assert not exercises.check_answer("best window", None, 512, "")
    assert capsys.readouterr().out.splitlines()[-1] == "best window: not answered yet"


@pytest.mark.parametrize("chapter", ["08_online_regroup_cost", "09_page_pairs",
                                     "10_open_questions"])
def test_later_chapters_have_a_checked_exercise(chapter):
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "notebooks" / f"{chapter}.ipynb"
    cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
             if c["cell_type"] == "code"]
    checks = [c for c in cells if ".check(" in "".join(c["source"])
              and "NotImplementedError" in "".join(c["source"])]
    assert checks, f"{chapter} has no exercise cell with a starter and a check"
    for cell in checks:
        assert "".join(cell["source"]).startswith("# NBVAL_CHECK_OUTPUT")
        text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
        assert "not written yet" in text
