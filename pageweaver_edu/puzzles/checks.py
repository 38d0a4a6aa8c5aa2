"""The check every puzzle runs: fresh random cases (a printed seed), the project's reference,
and the first difference in the reader's terms.

A puzzle is a :class:`Puzzle`: the kernel around the reader's code, a starter the chapter
shows, a generator of cases (random ones from the seed plus fixed edge cases) and a function
that runs one case and returns None or what differs. :func:`check` never raises: an unsolved
starter prints "not solved yet", a compile error, deadlock or crash prints its message, a wrong
answer prints the seed, the case and the first value that differs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .engine import Kernel, PuzzleLaunchError, compiler_missing, launch

#: Text every starter holds where the reader's code goes; a source still holding it is unsolved.
TODO = "YOUR CODE HERE"
#: The fill of the puzzles' int outputs: a value still equal to it was never written.
UNWRITTEN = -7


def written(value) -> str:
    """An int output as a message shows it: the value, or that nothing was written there."""
    return f"{int(value)} (never written)" if int(value) == UNWRITTEN else str(int(value))


@dataclass(frozen=True)
class Case:
    """One input of a puzzle: a name the messages use and the puzzle's own fields."""

    name: str
    data: dict


@dataclass(frozen=True)
class Puzzle:
    """One kernel puzzle.

    Attributes
    ----------
    number : int
    title : str
    kernel : Kernel
        What is launched around the reader's code.
    starter : str
        The source the chapter starts from (signature, comments, :data:`TODO`).
    solution : str
        File name of the reference solution in ``puzzles/solutions/``.
    cases : callable
        ``cases(rng) -> list[Case]``: random cases from ``rng`` and the fixed edge cases.
    run_case : callable
        ``run_case(launcher, case) -> str | None``: runs the case through ``launcher(grid,
        block, args)`` and returns what differs from the reference (None when all agrees).
    excerpt : tuple of (str, str)
        (kernel file, region) of the real kernel's code that does the same job.
    """

    number: int
    title: str
    kernel: Kernel
    starter: str
    solution: str
    cases: Callable[[np.random.Generator], list[Case]]
    run_case: Callable
    excerpt: tuple[str, str]


@dataclass(frozen=True)
class Result:
    """What :func:`check` found: ``solved`` is True when every case agreed."""

    puzzle: int
    solved: bool
    message: str
    seed: int | None
    seconds: float
    cases: int


def new_seed() -> int:
    """A fresh seed for one attempt (printed with the result so that it can be replayed)."""
    return int(np.random.SeedSequence().entropy % (1 << 31))


def check(puzzle: Puzzle, source: str, *, device: str = "cpu", seed: int | None = None,
          quiet: bool = False) -> Result:
    """Run the reader's ``source`` on every case of ``puzzle`` and print one verdict.

    Parameters
    ----------
    puzzle : Puzzle
    source : str
        The reader's CUDA C.
    device : {"cpu", "gpu"}
        The CPU simulator or the real GPU.
    seed : int, optional
        Replays an earlier attempt; a fresh seed when None.
    quiet : bool
        Return the result without printing it.

    Returns
    -------
    Result
    """
    seed = new_seed() if seed is None else int(seed)
    start = time.perf_counter()
    cases = puzzle.cases(np.random.default_rng(seed))
    where = "the GPU" if device == "gpu" else "the CPU simulator"
    solved, message = False, ""
    if TODO in source:
        message = (f"Puzzle {puzzle.number} ({puzzle.title}): not solved yet — write your code "
                   f"where the starter says {TODO}, then run this cell again.")
    elif device == "cpu" and (missing := compiler_missing()):
        message = f"Puzzle {puzzle.number}: cannot run here: {missing}."
    else:
        def launcher(grid: int, block: int, args: list) -> None:
            launch(puzzle.kernel, source, grid, block, args, device)

        try:
            for case in cases:
                diff = puzzle.run_case(launcher, case)
                if diff is not None:
                    message = (f"Puzzle {puzzle.number}: wrong on case '{case.name}' (seed "
                               f"{seed}; replay with seed={seed}):\n{diff}")
                    break
            else:
                solved = True
        except PuzzleLaunchError as exc:
            message = (f"Puzzle {puzzle.number}: on case '{case.name}' (seed {seed}): {exc}")
    seconds = time.perf_counter() - start
    if solved:
        message = (f"Puzzle {puzzle.number} ({puzzle.title}) solved: {len(cases)} cases agree "
                   f"with the reference on {where} (seed {seed}, {seconds:.1f} s).")
    if not quiet:
        print(message)
    return Result(puzzle.number, solved, message, seed, seconds, len(cases))


def first_difference(got: np.ndarray, want: np.ndarray) -> int | None:
    """Flat index of the first element where ``got`` and ``want`` differ (None when equal)."""
    bad = np.flatnonzero(np.asarray(got).ravel() != np.asarray(want).ravel())
    return int(bad[0]) if bad.size else None


def page_set(pages) -> str:
    """``{3, 7, 12}``: page ids as the chapters write a set."""
    return "{" + ", ".join(str(int(p)) for p in pages) + "}"
