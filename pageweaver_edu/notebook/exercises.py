"""Exercises that check themselves, in the spirit of GPU-Puzzles.

A chapter defines an :class:`Exercise`: what to write, the reference that answers it (the
library's own function, never shown in the chapter), and a generator of random cases. The
reader writes a small function in a cell and runs ``EXERCISE.check(my_function)``; the check
runs it against the reference on fresh random cases and prints one line: every case agrees,
or the first case that differs (its inputs, the reader's answer and the expected one), or the
exception the reader's code raised. A function that still raises ``NotImplementedError`` gets
a line saying that nothing was written yet, so a chapter executes cleanly before the reader
starts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

Case = tuple[tuple, dict]


def same_value(got, want) -> bool:
    """Equality for exercise answers: arrays element-wise (shape and values), floats exactly,
    sets, tuples and lists item by item."""
    if isinstance(want, np.ndarray) or isinstance(got, np.ndarray):
        try:
            got_a, want_a = np.asarray(got), np.asarray(want)
        except (TypeError, ValueError):
            return False
        return got_a.shape == want_a.shape and bool(np.array_equal(got_a, want_a,
                                                                   equal_nan=True))
    if isinstance(want, (tuple, list)) and isinstance(got, (tuple, list)):
        return len(got) == len(want) and all(
            same_value(g, w) for g, w in zip(got, want, strict=True))
    try:
        return bool(got == want)
    except (TypeError, ValueError):
        return False


def close_value(rtol: float = 1e-6, atol: float = 1e-9) -> Callable[[object, object], bool]:
    """A comparison for float answers: same shape, equal within ``rtol``/``atol``."""
    def close(got, want) -> bool:
        try:
            got_a, want_a = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
        except (TypeError, ValueError):
            return False
        return got_a.shape == want_a.shape and bool(np.allclose(got_a, want_a, rtol=rtol,
                                                                atol=atol, equal_nan=True))
    return close


def _short(value, limit: int = 160) -> str:
    text = np.array2string(value, threshold=40) if isinstance(value, np.ndarray) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _call_text(args: tuple, kwargs: dict) -> str:
    parts = [_short(a, 80) for a in args] + [f"{k}={_short(v, 80)}" for k, v in kwargs.items()]
    return ", ".join(parts)


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one :meth:`Exercise.check`.

    Attributes
    ----------
    passed : bool
        Every case agreed with the reference.
    cases : int
        Cases run (up to the first that differed).
    message : str
        The one line the check printed.
    """

    passed: bool
    cases: int
    message: str


@dataclass(frozen=True)
class Exercise:
    """A small function the reader writes, checked against the library's reference.

    Attributes
    ----------
    name : str
        Short name, printed in the check's line (e.g. ``"A_i"``).
    task : str
        One sentence: what the function takes and returns.
    reference : callable
        The answer (a library function with the same signature).
    cases : callable ``(numpy.random.Generator) -> iterable of (args, kwargs)``
        Fresh random cases; include the edge cases (empty sets, ties, a cut inside a page).
    same : callable ``(got, want) -> bool``
        How answers are compared (default :func:`same_value`).
    """

    name: str
    task: str
    reference: Callable
    cases: Callable[[np.random.Generator], Iterable[Case]]
    same: Callable[[object, object], bool] = field(default=same_value)

    def run(self, candidate: Callable, seed: int = 0) -> CheckResult:
        """Compare ``candidate`` with the reference on the cases drawn with ``seed``."""
        count = 0
        for args, kwargs in self.cases(np.random.default_rng(seed)):
            count += 1
            want = self.reference(*args, **kwargs)
            try:
                got = candidate(*args, **kwargs)
            except NotImplementedError:
                return CheckResult(False, count, f"{self.name}: not written yet. {self.task}")
            except Exception as exc:  # the reader's code: report, never raise
                return CheckResult(False, count, f"{self.name}: case {count} raised "
                                   f"{type(exc).__name__}: {exc} (inputs: "
                                   f"{_call_text(args, kwargs)})")
            if not self.same(got, want):
                return CheckResult(False, count, f"{self.name}: case {count} differs: inputs "
                                   f"{_call_text(args, kwargs)}; yours {_short(got)}, "
                                   f"expected {_short(want)}")
        return CheckResult(True, count, f"{self.name}: all {count} random cases agree with "
                           "the reference.")

    def check(self, candidate: Callable, seed: int = 0) -> bool:
        """Run :meth:`run`, print its one line, return whether every case agreed."""
        result = self.run(candidate, seed)
        print(("✓ " if result.passed else "✗ ") + result.message)
        return result.passed
