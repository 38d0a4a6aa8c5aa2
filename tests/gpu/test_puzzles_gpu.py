"""The kernel puzzles on a real GPU: the same reader source the CPU simulator runs, compiled by
nvcc and launched through PyCUDA. Every reference solution passes; every plausible wrong answer
fails with its message (or, where a GPU's timing shows the mistake another way, with the
message of a wait that never completed)."""

from __future__ import annotations

import pytest

from pageweaver_edu.puzzles import PUZZLES, check, reference_solution
from tests.helpers.puzzle_answers import WRONG_ANSWERS


@pytest.mark.parametrize("number", sorted(PUZZLES))
def test_reference_solution_passes_on_the_gpu(number):
    result = check(PUZZLES[number], reference_solution(number), device="gpu", quiet=True)
    assert result.solved, result.message


@pytest.mark.parametrize("wrong", WRONG_ANSWERS, ids=lambda w: f"p{w.puzzle}-{w.name}")
def test_wrong_answer_fails_on_the_gpu(wrong):
    result = check(PUZZLES[wrong.puzzle], wrong.source(), device="gpu", quiet=True, seed=1234)
    assert not result.solved
    assert any(text in result.message for text in wrong.expected("gpu")), result.message
