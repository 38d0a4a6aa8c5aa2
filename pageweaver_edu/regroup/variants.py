"""Alternatives to Algorithm 1 for the open questions of PAGEWEAVER.md §10.

* :func:`optimal_regroup` — exhaustive search of the partition of each (tiny) window into
  groups of g that minimizes union visits: how far greedy is from optimal.
* :func:`c4_greedy_regroup` — Algorithm 1 with a cost that also counts the pages new to the
  CTA half the candidate would join (slots 0–3 or 4–7), so it targets union visits + C4.
* :func:`subgroup_first_regroup` — build 4-query subgroups greedily, then pair subgroups
  into groups of 8 (the construction the paper suggests but did not evaluate).
* :func:`static_seed_regroup` — the *wrong* rule: costs against the seed only, U never grows.

All use the window table of :func:`pageweaver_edu.core.windows.plan_windows` (request- and
chunk-local windows, the capacity fallback keeps the identity order) and return a π that is
a bijection inside every window. :func:`cta_balance` and :func:`window_visits` measure them.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations
from math import comb, factorial

import numpy as np

from ..core.bitmap import popcount
from ..core.inputs import PageWeaverInputError, as_request_offsets, check_grouping, positive_int
from ..core.union_metrics import CTA_SLOTS, slot_pages, union_stats
from ..core.windows import chunk_table, group_table, plan_windows, split_spans


def _int_bitmaps(canonical: np.ndarray) -> list[int]:
    """S_i as Python ints (bit p set for page p): unbounded capacity, exact popcounts."""
    return [sum(1 << int(p) for p in row if p >= 0) for row in canonical]


def _run(topk, window, group, capacity, request_offsets, chunk_size, lengths, page_size, body):
    plan = plan_windows(
        topk, window, group, capacity, request_offsets, chunk_size, lengths, page_size
    )
    bits = _int_bitmaps(plan.canonical)
    perm = np.arange(len(bits), dtype=np.int32)
    for (start, end), identity in zip(plan.windows, plan.identity, strict=True):
        if not identity:
            order = body(bits, list(range(int(start), int(end))), plan.group)
            perm[start:end] = order
    return perm


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
    topk, window: int, group: int = 8, c4_weight: float = 1.0, capacity: int = 512,
    request_offsets=None, chunk_size=None, lengths=None, page_size: int = 128,
) -> np.ndarray:
    """Greedy regroup with cost ``|S_j \\ U_G| + c4_weight · |S_j \\ U_half|``.

    The first term is Algorithm 1's (pages new to the group: union visits); the second
    counts the pages new to the CTA half that slot would belong to (its increment of C4).
    ``c4_weight = 0`` is exactly Algorithm 1. Ties go to the smaller original id.

    Returns
    -------
    numpy.ndarray of int32, shape [N]
        π.
    """
    if c4_weight < 0:
        raise PageWeaverInputError(f"c4_weight must be >= 0, got {c4_weight}")
    return _run(topk, window, group, capacity, request_offsets, chunk_size, lengths, page_size,
                _greedy_body(float(c4_weight)))


def subgroup_first_regroup(
    topk, window: int, group: int = 8, capacity: int = 512, request_offsets=None,
    chunk_size=None, lengths=None, page_size: int = 128,
) -> np.ndarray:
    """Subgroup-first construction: Algorithm 1 with g/2-query subgroups, then pairing.

    Per window, subgroups of ``group // 2`` queries are built with Algorithm 1. Full
    subgroups are then paired in order: the first unpaired one takes the partner that adds
    the fewest pages to its union (ties: the earlier subgroup). The pair becomes one group,
    first subgroup in slots 0..g/2-1 (CTA0), partner in the other half (CTA1). A leftover
    full subgroup and a short subgroup form the window's last (short) group, as the group
    table requires.

    Returns
    -------
    numpy.ndarray of int32, shape [N]
        π.
    """
    if group % 2:
        raise PageWeaverInputError(f"subgroup-first needs an even group size, got {group}")

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

    return _run(topk, window, group, capacity, request_offsets, chunk_size, lengths, page_size,
                body)


def static_seed_regroup(
    topk, window: int, group: int = 8, capacity: int = 512, request_offsets=None,
    chunk_size=None, lengths=None, page_size: int = 128,
) -> np.ndarray:
    """The variant that does NOT update U: every cost is ``|S_j \\ S_seed|``, so the
    ``g - 1`` lowest ``(cost, j)`` join the seed. Not the paper's rule: chapter 03 compares
    it with Algorithm 1 (the same π when g ≤ 2).

    >>> static_seed_regroup([[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]], 6, 3).tolist()
    [0, 2, 1, 3, 4, 5]
    """
    return _run(topk, window, group, capacity, request_offsets, chunk_size, lengths, page_size,
                _greedy_body(grow=False))


def _union(bits, members):
    out = 0
    for i in members:
        out |= bits[i]
    return out


def partition_count(n: int, group: int) -> int:
    """Number of ways to split n queries into groups of g plus one short group of n mod g
    (group order ignored): what :func:`optimal_regroup` searches per window."""
    tail, full = n % group, n // group
    return comb(n, tail) * factorial(n - tail) // (factorial(group) ** full * factorial(full))


@lru_cache(maxsize=64)
def _subsets(n: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """All ``size``-subsets of ``range(n)`` as index rows and bit masks, by ascending mask."""
    combos = np.array(list(combinations(range(n), size)), dtype=np.int64).reshape(-1, size)
    masks = (np.int64(1) << combos).sum(axis=1)
    order = np.argsort(masks)
    return combos[order], masks[order]


def _optimal_window(bits: list[int], ids: list[int], group: int) -> list[int]:
    """Exhaustive minimum of Σ|U_G| over the partitions of one window (a deterministic
    optimum). Groups come in order of their smallest member, members ascending, the short
    group last."""
    n = len(ids)
    words = max(1, -(-max((bits[i].bit_length() for i in ids), default=1) // 64))
    arr = np.array([[(bits[i] >> (64 * w)) & (2**64 - 1) for w in range(words)] for i in ids],
                   dtype=np.uint64).reshape(n, words)

    def table(size):
        combos, masks = _subsets(n, size)
        return masks, popcount(np.bitwise_or.reduce(arr[combos], axis=1)).sum(axis=1, dtype=int)

    masks, sizes = table(group)
    memo: dict[int, tuple[int, list[int]]] = {0: (0, [])}

    def best(mask: int) -> tuple[int, list[int]]:
        if mask in memo:
            return memo[mask]
        low = mask & -mask
        sel = np.flatnonzero(((masks & ~mask) == 0) & ((masks & low) != 0))
        if mask.bit_count() == 2 * group:  # both groups at once, vectorized
            rest = np.searchsorted(masks, mask ^ masks[sel])
            total = sizes[sel] + sizes[rest]
            k = int(np.argmin(total))
            result = (int(total[k]), [int(masks[sel[k]]), int(masks[rest[k]])])
        else:
            result = (1 << 62, [])
            for s in sel:
                cost, tail = best(mask ^ int(masks[s]))
                if cost + int(sizes[s]) < result[0]:
                    result = (cost + int(sizes[s]), [int(masks[s])] + tail)
        memo[mask] = result
        return result

    everyone = (1 << n) - 1
    short = n % group
    if short:
        tmasks, tsizes = table(short)
        options = [
            (best(everyone ^ int(m))[0] + int(s), int(m))
            for m, s in zip(tmasks, tsizes, strict=True)
        ]
        tmask = min(options, key=lambda o: o[0])[1]
        groups = best(everyone ^ tmask)[1] + [tmask]
    else:
        groups = best(everyone)[1]
    return [ids[i] for m in groups for i in range(n) if m >> i & 1]


def optimal_regroup(
    topk, window: int, group: int = 8, capacity: int = 512, request_offsets=None,
    chunk_size=None, lengths=None, page_size: int = 128, max_partitions: int = 100_000,
) -> np.ndarray:
    """π minimizing union visits exactly inside every window, by exhaustive search.

    Only for tiny windows: a window of n queries has :func:`partition_count` ``(n, g)``
    partitions (W16/g8: 6,435; W12/g4: 5,775; W8/g2: 105); more than ``max_partitions``
    raises. The search is a memoized recursion over the set of unassigned queries.

    Returns
    -------
    numpy.ndarray of int32, shape [N]
        π (groups ordered by smallest member; the short group, if any, last).
    """
    window, group = positive_int(window, "window W"), positive_int(group, "group size g")
    if partition_count(window, group) > max_partitions:
        raise PageWeaverInputError(
            f"W = {window}, g = {group} has {partition_count(window, group):,} partitions per "
            f"window (> max_partitions = {max_partitions:,}); use a smaller window"
        )
    return _run(topk, window, group, capacity, request_offsets, chunk_size, lengths, page_size,
                _optimal_window)


def cta_balance(topk, perm=None, request_offsets=None, group: int = 8) -> dict:
    """Union visits, C4 and the balance of the two CTA halves of every group.

    Returns
    -------
    dict
        ``union_visits`` Σ|U_G|; ``c4`` Σ(|U_G0| + |U_G1|); ``critical`` Σ max(|U_G0|,
        |U_G1|) (the rounds of the busier CTA); ``imbalance`` = critical / (c4 / 2) ≥ 1;
        ``one_sided`` Σ(|U_G| − |U_G0 ∩ U_G1|): pages only one CTA computes on.
    """
    sp = slot_pages(topk, perm, request_offsets, group)
    n_groups = len(sp.groups)
    halves = sp.group_of_edge * 2 + (sp.slot_of_edge >= CTA_SLOTS)
    stride = int(sp.page_of_edge.max(initial=0)) + 1
    half_keys = np.unique(halves * stride + sp.page_of_edge) // stride
    per_half = np.bincount(half_keys, minlength=2 * n_groups).reshape(n_groups, 2)
    stats = union_stats(topk, perm, request_offsets, group)
    c4, critical = int(per_half.sum()), int(per_half.max(axis=1).sum())
    overlap = c4 - stats.union_visits
    return {
        "union_visits": stats.union_visits,
        "c4": c4,
        "critical": critical,
        "imbalance": critical / (c4 / 2) if c4 else float("nan"),
        "one_sided": stats.union_visits - overlap,
    }


def window_visits(topk, perm, window: int, group: int = 8, request_offsets=None,
                  chunk_size=None, union_sizes=None) -> np.ndarray:
    """Union visits per window of the window table (groups never cross windows), [M].

    ``union_sizes`` (|U_G| per group, e.g. ``union_stats(...).union_sizes``) skips
    recomputing the unions of π.
    """
    n = np.asarray(topk).shape[0]
    offsets = as_request_offsets(request_offsets, n)
    window, group, chunk_size = check_grouping(window, group, chunk_size)
    windows = split_spans(chunk_table(offsets, chunk_size), window)
    sizes = (union_stats(topk, perm, offsets, group).union_sizes if union_sizes is None
             else np.asarray(union_sizes))
    starts = group_table(offsets, group)[:, 0]
    which = np.searchsorted(windows[:, 0], starts, side="right") - 1
    return np.bincount(which, weights=sizes, minlength=len(windows)).astype(np.int64)
