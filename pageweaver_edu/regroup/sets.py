"""Greedy regroup, the readable set-based form of Algorithm 1 (docs/definitions.md#greedy-regroup).

This version mirrors the algorithm line by line with Python sets; it is the definition the
vectorized bitmap version (:mod:`.bitmap`) and the CUDA kernel are
checked against. With ``trace=True`` it also records every round, which the notebooks use
to animate the greedy choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.grouping import Grouping
from ..core.windows import window_table


@dataclass
class GreedyRound:
    """One pick of Algorithm 1.

    Attributes
    ----------
    window : int
        Index of the window in the window table.
    group : int
        Index of the group inside its window (0, 1, ...).
    costs : dict of int to int
        ``|S_j \\ U|`` for every unassigned candidate j before the pick (empty for a seed).
    choice : int
        The original query id taken (the seed for the first round of a group).
    union_before, union_after : frozenset of int
        U before and after the pick.
    is_seed : bool
        True for the round that opens a group with ``min(R)``.
    """

    window: int
    group: int
    costs: dict[int, int]
    choice: int
    union_before: frozenset[int]
    union_after: frozenset[int]
    is_seed: bool


@dataclass
class GreedyTrace:
    """All rounds of a regroup run, in execution order."""

    rounds: list[GreedyRound] = field(default_factory=list)


def _regroup_window(
    sets: list[frozenset[int]], start: int, end: int, group: int, w: int, trace: GreedyTrace | None
) -> list[int]:
    """Algorithm 1 on the rows ``start..end-1``; returns their execution order."""
    remaining = list(range(start, end))  # R, kept in ascending id order
    order: list[int] = []
    group_index = 0
    while remaining:
        seed = remaining.pop(0)  # seed = min(R)
        members = [seed]
        union = set(sets[seed])  # the union resets for every new group
        if trace is not None:
            trace.rounds.append(
                GreedyRound(w, group_index, {}, seed, frozenset(), frozenset(union), True)
            )
        while len(members) < group and remaining:
            costs = {j: len(sets[j] - union) for j in remaining}
            best = min(remaining, key=lambda j: (costs[j], j))  # fewest new pages, then id
            before = frozenset(union)
            remaining.remove(best)
            members.append(best)
            union |= sets[best]
            if trace is not None:
                trace.rounds.append(
                    GreedyRound(w, group_index, costs, best, before, frozenset(union), False)
                )
        order.extend(members)
        group_index += 1
    return order


def greedy_regroup_sets(topk, grouping: Grouping, *, request_offsets=None, lengths=None,
                        page_size: int = 128, trace: bool = False):
    """Greedy regroup with Python sets (Algorithm 1, exact tie-breaks).

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
        Top-K page ids; ``< 0`` is padding, duplicates count once.
    grouping : Grouping
        W, g, B and the chunk size; a (request, chunk) needing more than B pages keeps the
        identity order.
    request_offsets : array_like of int, shape [R + 1], optional
    lengths : array_like of int, shape [N], optional
        L_i, for the capacity fallback.
    page_size : int
        P.
    trace : bool
        Also return a :class:`GreedyTrace` of every round.

    Returns
    -------
    perm : numpy.ndarray of int32, shape [N]
        π: execution slot r runs original query ``perm[r]``.
    trace : GreedyTrace
        Only when ``trace=True``.

    Examples
    --------
    >>> rows = [[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]]
    >>> greedy_regroup_sets(rows, Grouping(window=6, group=3)).tolist()
    [0, 2, 3, 1, 4, 5]
    """
    table = window_table(topk, grouping, request_offsets=request_offsets, lengths=lengths,
                         page_size=page_size)
    sets = [frozenset(int(p) for p in row if p >= 0) for row in table.canonical]
    record = GreedyTrace() if trace else None
    perm = table.permutation(
        lambda index, start, end: _regroup_window(sets, start, end, table.group, index, record))
    return (perm, record) if trace else perm
