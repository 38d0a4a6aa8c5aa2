"""Alternatives to Algorithm 1 for the open questions (docs/definitions.md#open-questions).

* :func:`c4_greedy_regroup` — Algorithm 1 with a cost that also counts the pages new to the
  CTA half the candidate would join (slots 0–3 or 4–7), so it targets union visits + C4.
* :func:`subgroup_first_regroup` — build 4-query subgroups greedily, then pair subgroups
  into groups of 8 (the construction the paper suggests but did not evaluate).
* :func:`static_seed_regroup` — the *wrong* rule: costs against the seed only, U never grows.

The exhaustive optimum is in :mod:`.optimal`. All use the window table of
:func:`pageweaver_edu.core.windows.window_table` (request- and chunk-local windows, the
capacity fallback keeps the identity order) and return a π that is a bijection inside every
window; :func:`pageweaver_edu.core.union_metrics.cta_balance` and
:func:`~pageweaver_edu.core.union_metrics.window_visits` measure them.
"""

from __future__ import annotations

import numpy as np

from ..core.grouping import Grouping
from ..core.inputs import PageWeaverInputError
from ..core.union_metrics import CTA_SLOTS
from ..core.windows import WindowTable, window_table


def _int_bitmaps(canonical: np.ndarray) -> list[int]:
    """S_i as Python ints (bit p set for page p): unbounded capacity, exact popcounts."""
    return [sum(1 << int(p) for p in row if p >= 0) for row in canonical]


def run_windows(table: WindowTable, body) -> np.ndarray:
    """π from one rule applied to every regrouped window of ``table``.

    Parameters
    ----------
    table : WindowTable
    body : callable
        ``body(bits, ids, g)`` returns the window's ids in execution order; ``ids`` are its
        original ids in order, ``bits`` every S_i as a Python int.

    Returns
    -------
    numpy.ndarray of int32, shape [N]
        Identity in windows under the capacity fallback.
    """
    bits = _int_bitmaps(table.canonical)
    return table.permutation(lambda _, start, end: body(bits, list(range(start, end)),
                                                         table.group))


def _greedy_groups(bits, ids, group, half_weight=0.0, grow=True):
    """Algorithm 1 on one window; ``half_weight`` adds ``w·|S_j \\ U_half|`` to the cost,
    where U_half is the union of the CTA half (slots 0–3 or 4–7) j would join.
    ``grow=False`` keeps U = S_seed (the static-seed variant)."""
    remaining, groups = list(ids), []
    while remaining:
        seed = remaining.pop(0)  # seed = min(R)
        members, union, half_union = [seed], bits[seed], bits[seed]
        while len(members) < group and remaining:
            if len(members) == CTA_SLOTS:
                half_union = 0  # the next pick opens the second CTA half
            best = min(
                remaining,
                key=lambda j: (
                    (bits[j] & ~union).bit_count()
                    + half_weight * (bits[j] & ~half_union).bit_count(),
                    j,
                ),
            )
            remaining.remove(best)
            members.append(best)
            if grow:
                union |= bits[best]
            half_union |= bits[best]
        groups.append(members)
    return groups


def _greedy_body(half_weight=0.0, grow=True):
    """A window ``body`` for :func:`_run`: the flattened groups of :func:`_greedy_groups`."""
    return lambda bits, ids, g: [i for grp in _greedy_groups(bits, ids, g, half_weight, grow)
                                 for i in grp]


def c4_greedy_regroup(
    topk, grouping: Grouping, c4_weight: float = 1.0, *, request_offsets=None, lengths=None,
    page_size: int = 128,
) -> np.ndarray:
    """Greedy regroup with cost ``|S_j \\ U_G| + c4_weight · |S_j \\ U_half|``.

    The first term is Algorithm 1's (pages new to the group: union visits); the second
    counts the pages new to the CTA half that slot would belong to (its increment of C4).
    ``c4_weight = 0`` is exactly Algorithm 1. Ties go to the smaller original id.

    Parameters
    ----------
    topk, grouping, request_offsets, lengths, page_size
        As :func:`pageweaver_edu.regroup.bitmap.greedy_regroup` (topk [N, K] of int).
    c4_weight : float
        Weight of the C4 term.

    Returns
    -------
    numpy.ndarray of int32, shape [N]
        π.
    """
    if c4_weight < 0:
        raise PageWeaverInputError(f"c4_weight must be >= 0, got {c4_weight}")
    table = window_table(topk, grouping, request_offsets=request_offsets, lengths=lengths,
                         page_size=page_size)
    return run_windows(table, _greedy_body(float(c4_weight)))


def subgroup_first_regroup(
    topk, grouping: Grouping, *, request_offsets=None, lengths=None,
    page_size: int = 128,
) -> np.ndarray:
    """Subgroup-first construction: Algorithm 1 with g/2-query subgroups, then pairing.

    Per window, subgroups of ``group // 2`` queries are built with Algorithm 1. Full
    subgroups are then paired in order: the first unpaired one takes the partner that adds
    the fewest pages to its union (ties: the earlier subgroup). The pair becomes one group,
    first subgroup in slots 0..g/2-1 (CTA0), partner in the other half (CTA1). A leftover
    full subgroup and a short subgroup form the window's last (short) group, as the group
    table requires.

    Parameters
    ----------
    topk, grouping, request_offsets, lengths, page_size
        As :func:`pageweaver_edu.regroup.bitmap.greedy_regroup` (topk [N, K] of int).

    Returns
    -------
    numpy.ndarray of int32, shape [N]
        π.
    """
    if grouping.group % 2:
        raise PageWeaverInputError(
            f"subgroup-first needs an even group size, got {grouping.group}")

    def body(bits, ids, g):
        subs = _greedy_groups(bits, ids, g // 2)
        full = [s for s in subs if len(s) == g // 2]
        unions = [_union(bits, s) for s in full]
        order, avail = [], list(range(len(full)))
        while len(avail) >= 2:
            a = avail.pop(0)
            b = min(avail, key=lambda j: ((unions[j] & ~unions[a]).bit_count(), j))
            avail.remove(b)
            order += full[a] + full[b]
        order += [i for j in avail for i in full[j]]
        return order + [i for s in subs if len(s) < g // 2 for i in s]

    table = window_table(topk, grouping, request_offsets=request_offsets, lengths=lengths,
                         page_size=page_size)
    return run_windows(table, body)


def static_seed_regroup(
    topk, grouping: Grouping, *, request_offsets=None, lengths=None,
    page_size: int = 128,
) -> np.ndarray:
    """The variant that does NOT update U: every cost is ``|S_j \\ S_seed|``, so the
    ``g - 1`` lowest ``(cost, j)`` join the seed. Not the paper's rule: chapter 03 compares
    it with Algorithm 1 (the same π when g ≤ 2).

    Parameters
    ----------
    topk, grouping, request_offsets, lengths, page_size
        As :func:`pageweaver_edu.regroup.bitmap.greedy_regroup` (topk [N, K] of int).

    Returns
    -------
    numpy.ndarray of int32, shape [N]
        π.

    Examples
    --------
    >>> rows = [[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]]
    >>> static_seed_regroup(rows, Grouping(6, 3)).tolist()
    [0, 2, 1, 3, 4, 5]
    """
    table = window_table(topk, grouping, request_offsets=request_offsets, lengths=lengths,
                         page_size=page_size)
    return run_windows(table, _greedy_body(grow=False))


def _union(bits, members):
    out = 0
    for i in members:
        out |= bits[i]
    return out
