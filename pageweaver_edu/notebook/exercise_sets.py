"""Self-checking exercises of chapters 00 (rows land at π), 08 (eq. 7), 09 (page pairs) and 10
(C4 of one group).

Each is an :class:`~pageweaver_edu.notebook.exercises.Exercise` whose reference is the
definition the chapter states: the scatter ``o[π[r]] = o_exec[r]``, the cost accounting of
arXiv:2610.11201 eq. 7, the reader sets ``R_a`` and ``R_b`` of two pages, and
``C4 = |U_{G_0}| + |U_{G_1}|``. The case generators include the inputs that trip people up:
the identity π, a negative net saving, pages nobody reads, a group shorter than g.
"""

from __future__ import annotations

import numpy as np

from ..core.supports import support_sets
from ..core.union_metrics import union_stats
from .exercises import Exercise, close_value, show_set, show_value


def restore_rows_reference(o_exec, perm):
    """The output in original order: row ``π[r]`` holds ``o_exec[r]`` (float ``[N, ...]``)."""
    o_exec = np.asarray(o_exec)
    out = np.empty_like(o_exec)
    out[np.asarray(perm)] = o_exec
    return out


def _restore_cases(rng: np.random.Generator):
    """Cases ``(o_exec, perm)``: the identity, a swap, then random π over 1–12 queries."""
    yield (np.arange(4.0)[:, None], np.arange(4)), {}
    yield (np.array([[10.0], [20.0], [30.0]]), np.array([2, 0, 1])), {}
    for _ in range(30):
        n = int(rng.integers(1, 13))
        o_exec = np.round(rng.standard_normal((n, 2)), 2)
        yield (o_exec, rng.permutation(n)), {}


#: Chapter 00: member position r writes original row π[r].
RESTORE_ROWS = Exercise(
    "restore rows",
    "Write restore_rows(o_exec, perm): o_exec[r] is the output computed at position r (for "
    "query perm[r]); return the outputs in original query order, as a new array.",
    restore_rows_reference, _restore_cases)


def cost_accounting_reference(t0, t_fixed, t_online):
    """Eq. 7: ``(S_exec, C_online, S_net)`` from the three complete-call times."""
    return t0 - t_fixed, t_online - t_fixed, t0 - t_online


def _accounting_cases(rng: np.random.Generator):
    """Cases ``(T0, T_fixed, T_online)`` in µs: the paper's L43/r1 medians, a call where the
    online path loses, then random calls."""
    yield (1366.33, 1270.37, 1307.92), {}
    yield (448.0, 424.0, 455.0), {}
    for _ in range(30):
        t0 = float(rng.uniform(100, 5000))
        t_fixed = t0 * float(rng.uniform(0.5, 1.05))
        yield (t0, t_fixed, t_fixed + float(rng.uniform(0, 60))), {}


def _show_accounting(value, args, kwargs) -> str:
    s_exec, c_online, s_net = value
    return f"S_exec {s_exec!r} µs, C_online {c_online!r} µs, S_net {s_net!r} µs"


#: Chapter 08: eq. 7.
COST_ACCOUNTING = Exercise(
    "eq. 7",
    "Write cost_accounting(t0, t_fixed, t_online): the three complete-call times in µs; "
    "return (S_exec, C_online, S_net).",
    cost_accounting_reference, _accounting_cases, same=close_value(rtol=1e-9, atol=1e-9),
    show_answer=_show_accounting)


def pair_split_reference(topk, a: int, b: int):
    """The queries of a page pair ``(a, b)``: ``(R_a ∩ R_b, R_a \\ R_b, R_b \\ R_a)`` as sets
    of query ids, ``R_p = {i : p ∈ S_i}``."""
    supports = support_sets(np.asarray(topk))
    r_a = {i for i, s in enumerate(supports) if a in s}
    r_b = {i for i, s in enumerate(supports) if b in s}
    return r_a & r_b, r_a - r_b, r_b - r_a


def _pair_cases(rng: np.random.Generator):
    """Cases ``(topk, a, b)``: the chapter's four queries, a page nobody reads, padding and
    repeats, then random rows over 8 pages."""
    four = np.array([[1, 4], [4, 1], [1, 7], [4, 7]])
    yield (four, 1, 4), {}
    yield (four, 7, 9), {}
    yield (np.array([[2, 2, -1], [-1, -1, -1], [3, 2, 3]]), 2, 3), {}
    for _ in range(30):
        n, k = int(rng.integers(1, 10)), int(rng.integers(1, 5))
        topk = rng.integers(-1, 8, size=(n, k))
        a, b = (int(x) for x in rng.choice(8, size=2, replace=False))
        yield (topk, a, b), {}


def _show_pair_inputs(args, kwargs) -> str:
    topk, a, b = args
    rows = ", ".join(f"S_{i} = {show_set(s)}" for i, s in enumerate(support_sets(topk)))
    return f"(a, b) = ({a}, {b}); {rows}"


def _show_sets(value, args, kwargs) -> str:
    if isinstance(value, tuple) and len(value) == 3:
        return ("common " + show_set(value[0]) + ", only a " + show_set(value[1])
                + ", only b " + show_set(value[2]))
    return show_value(value)


#: Chapter 09: who shares a page pair.
PAIR_SPLIT = Exercise(
    "pair split",
    "Write pair_split(topk, a, b): return (common, only_a, only_b), the sets of query ids "
    "that read both pages, only a, only b (ids < 0 are padding).",
    pair_split_reference, _pair_cases, show_inputs=_show_pair_inputs, show_answer=_show_sets)


def group_c4_reference(topk) -> int:
    """C4 of one group whose member positions r = 0, 1, ... run the rows of ``topk`` in order:
    ``|U_{G_0}| + |U_{G_1}|`` with halves r = 0–3 and r = 4–7 (a short group has a short or
    empty second half)."""
    return int(union_stats(np.asarray(topk), group=8).c4)


def _c4_cases(rng: np.random.Generator):
    """Cases ``(topk,)`` of 1–8 rows: halves that share everything, halves that share nothing,
    a group of three, then random rows over 10 pages with padding."""
    yield (np.array([[1, 2]] * 8),), {}
    yield (np.array([[1, 2]] * 4 + [[3, 4]] * 4),), {}
    yield (np.array([[5, -1], [5, 6], [-1, -1]]),), {}
    for _ in range(30):
        rows = int(rng.integers(1, 9))
        yield (rng.integers(-1, 10, size=(rows, int(rng.integers(1, 5)))),), {}


def _show_c4_inputs(args, kwargs) -> str:
    return "; ".join(f"r={r}: S = {show_set(s)}" for r, s in enumerate(support_sets(args[0])))


#: Chapter 10: the work of one group in C4 rounds.
GROUP_C4 = Exercise(
    "C4 of a group",
    "Write group_c4(topk): row r is the Top-K row of member position r (at most 8 rows); "
    "return |U_G0| + |U_G1| as an int, halves r = 0-3 and r = 4-7.",
    group_c4_reference, _c4_cases, show_inputs=_show_c4_inputs)
