"""Exercises that check themselves, in the spirit of GPU-Puzzles.

A chapter defines an :class:`Exercise`: what to write, the reference that answers it (the
library's own function, never shown in the chapter), and a generator of cases. The reader
writes a small function in a cell and runs ``EXERCISE.check(my_function)``. Every attempt
draws a fresh seed (printed, so that ``EXERCISE.check(my_function, seed=...)`` replays the
same cases), runs the function against the reference and prints one line: every case agrees,
or the first case that differs (its inputs, the reader's answer and the expected one in the
chapter's notation, where they differ, and a hint when the answer has the wrong type), or the
exception the reader's code raised. A function that still raises ``NotImplementedError`` gets
a line saying that nothing was written yet, so a chapter executes cleanly (and prints the same
line every time) before the reader starts.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from numbers import Number

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


def show_value(value) -> str:
    """A value in full on one line: arrays without NumPy's ``...`` elision, floats with
    every digit (``repr``)."""
    if isinstance(value, np.ndarray):
        text = np.array2string(value, threshold=value.size + 1, max_line_width=10**9)
    else:
        text = repr(value)
    return " ".join(text.split())


def show_set(values) -> str:
    """Set notation for page or query ids: ``{1, 4, 7}``, ``∅`` when empty."""
    items = sorted(int(v) for v in values)
    return "{" + ", ".join(map(str, items)) + "}" if items else "∅"


def show_call(args: tuple, kwargs: dict) -> str:
    """The inputs of a case, every value in full."""
    return ", ".join([show_value(a) for a in args]
                     + [f"{k}={show_value(v)}" for k, v in kwargs.items()])


def _kind(value) -> str:
    """The type of a value with its article: 'an int', 'a float', 'a str'."""
    if isinstance(value, bool):
        name = "bool"
    elif isinstance(value, (int, np.integer)):
        name = "int"
    elif isinstance(value, Number):
        name = "float"
    else:
        name = type(value).__name__
    return ("an " if name[0] in "aeiou" else "a ") + name


def type_hint(got, want) -> str:
    """A hint when the answer has the wrong type or shape for the question, '' otherwise."""
    if got is None and want is not None:
        return "hint: your function returned None; is a `return` missing?"
    if isinstance(got, (str, bytes)) and not isinstance(want, (str, bytes)):
        return (f"hint: you gave the text {got!r}; the answer is {_kind(want)} "
                "(write it without quotes)")
    if isinstance(want, Number) and not isinstance(want, bool):
        if not isinstance(got, Number) and not (isinstance(got, np.ndarray) and got.ndim == 0):
            return f"hint: you returned {_kind(got)}; the answer is {_kind(want)}"
        return ""
    if isinstance(want, tuple) and (not isinstance(got, (tuple, list)) or len(got) != len(want)):
        return f"hint: return a tuple of {len(want)} values"
    if isinstance(want, (set, frozenset)) and not isinstance(got, (set, frozenset)):
        return f"hint: you returned {_kind(got)}; the answer is a set"
    if isinstance(want, (np.ndarray, list)):
        try:
            got_shape, want_shape = np.shape(got), np.shape(want)
        except (TypeError, ValueError):
            return f"hint: you returned {_kind(got)}; the answer is an array"
        if got_shape != want_shape:
            return f"hint: your answer has shape {got_shape}, the expected one {want_shape}"
    return ""


def _first_difference(got, want) -> str:
    """Where two same-shaped arrays (or tuples of them) first differ, '' if not applicable."""
    try:
        return _difference_text(got, want)
    except Exception:  # values that NumPy cannot compare (e.g. FP8 tensors): no pointer
        return ""


def _difference_text(got, want) -> str:
    if isinstance(want, tuple) and isinstance(got, (tuple, list)) and len(got) == len(want):
        for index, (g, w) in enumerate(zip(got, want, strict=True)):
            try:
                same = same_value(g, w)
            except Exception:  # items NumPy cannot compare (e.g. FP8 tensors): look further
                continue
            if not same:
                inner = _difference_text(g, w)
                return (f"item {index} of {len(want)} differs"
                        + (f" ({inner})" if inner else ""))
        return ""
    got_a, want_a = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if got_a.shape != want_a.shape or want_a.ndim == 0:
        return ""
    bad = np.argwhere(~np.isclose(got_a, want_a, rtol=0, atol=0, equal_nan=True))
    if not len(bad):
        return ""
    at = tuple(int(x) for x in bad[0])
    return (f"{len(bad)} of {want_a.size} entries differ, first at {list(at)}: yours "
            f"{float(got_a[at])!r}, expected {float(want_a[at])!r}")


def fresh_seed() -> int:
    """A new six-digit seed for one attempt."""
    return 100_000 + secrets.randbelow(900_000)


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
    seed : int
        The seed the cases were drawn with.
    """

    passed: bool
    cases: int
    message: str
    seed: int


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
        Cases drawn from the generator; include the edge cases (empty sets, ties, a cut
        inside a page).
    same : callable ``(got, want) -> bool``
        How answers are compared (default :func:`same_value`).
    show_inputs : callable ``(args, kwargs) -> str``
        The inputs of a case in the chapter's notation (default: every value in full).
    show_answer : callable ``(answer, args, kwargs) -> str``
        An answer in the chapter's notation (default: :func:`show_value`). It receives the
        reader's value too, so it must not fail on a wrong type (fall back to ``repr``).
    """

    name: str
    task: str
    reference: Callable
    cases: Callable[[np.random.Generator], Iterable[Case]]
    same: Callable[[object, object], bool] = field(default=same_value)
    show_inputs: Callable[[tuple, dict], str] = field(default=show_call)
    show_answer: Callable[[object, tuple, dict], str] = field(
        default=lambda value, args, kwargs: show_value(value))

    def _shown(self, value, args, kwargs) -> str:
        try:
            return self.show_answer(value, args, kwargs)
        except Exception:  # the reader's value may not fit the chapter's notation
            return show_value(value)

    def _differs(self, count: int, seed: int, args, kwargs, got, want) -> str:
        parts = [f"{self.name}: case {count} (seed {seed}) differs. inputs: "
                 f"{self.show_inputs(args, kwargs)}; yours: {self._shown(got, args, kwargs)}; "
                 f"expected: {self._shown(want, args, kwargs)}"]
        where = _first_difference(got, want)
        hint = type_hint(got, want)
        parts += [where] if where else []
        parts += [hint] if hint else []
        return ". ".join(parts) + f". Replay: .check(your_function, seed={seed})"

    def run(self, candidate: Callable, seed: int | None = None) -> CheckResult:
        """Compare ``candidate`` with the reference on the cases drawn with ``seed`` (a fresh
        one when ``None``)."""
        seed = fresh_seed() if seed is None else int(seed)
        count = 0
        for args, kwargs in self.cases(np.random.default_rng(seed)):
            count += 1
            want = self.reference(*args, **kwargs)
            try:
                got = candidate(*args, **kwargs)
            except NotImplementedError:
                return CheckResult(False, count, f"{self.name}: not written yet. {self.task}",
                                   seed)
            except Exception as exc:  # the reader's code: report, never raise
                return CheckResult(False, count, f"{self.name}: case {count} (seed {seed}) "
                                   f"raised {type(exc).__name__}: {exc}. inputs: "
                                   f"{self.show_inputs(args, kwargs)}. Replay: "
                                   f".check(your_function, seed={seed})", seed)
            if not self.same(got, want):
                return CheckResult(False, count,
                                   self._differs(count, seed, args, kwargs, got, want), seed)
        return CheckResult(True, count, f"{self.name}: all {count} cases of seed {seed} agree "
                           "with the reference.", seed)

    def check(self, candidate: Callable, seed: int | None = None) -> bool:
        """Run :meth:`run`, print its one line, return whether every case agreed."""
        result = self.run(candidate, seed)
        print(("✓ " if result.passed else "✗ ") + result.message)
        return result.passed


def check_answer(name: str, answer, expected, advice: str) -> bool:
    """Check a single typed-in answer (not a function): print one line, ``not answered yet``
    while ``answer`` is None, a type hint when the type is wrong, ``advice`` when the value
    is."""
    if answer is None:
        print(f"{name}: not answered yet")
        return False
    if same_value(answer, expected) and type_hint(answer, expected) == "":
        print(f"✓ {name}: {show_value(answer)} is right")
        return True
    hint = type_hint(answer, expected)
    print(f"✗ {name}: {show_value(answer)} is not it. " + (hint if hint else advice))
    return False
