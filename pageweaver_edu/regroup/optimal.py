"""The exhaustive optimum of a regroup window: how far Algorithm 1 is from the best grouping.

For tiny windows only: :func:`optimal_regroup` searches every partition of a window into
groups of g (and one short group) for the least union visits (docs/definitions.md#open-questions).
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations
from math import comb, factorial

import numpy as np

from ..core.bitmap import popcount
from ..core.grouping import Grouping
from ..core.inputs import PageWeaverInputError
from ..core.windows import window_table
from .variants import run_windows


def partition_count(n: int, group: int) -> int:
    """Number of ways to split n queries into groups of g plus one short group of n mod g
    (group order ignored): what :func:`optimal_regroup` searches per window.

    Parameters
    ----------
    n : int
        Queries in the window.
    group : int
        g.

    Returns
    -------
    int

    Examples
    --------
    >>> partition_count(16, 8)
    6435
    """
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
    topk, grouping: Grouping, *, request_offsets=None, lengths=None, page_size: int = 128,
    max_partitions: int = 100_000,
) -> np.ndarray:
    """π minimizing union visits exactly inside every window, by exhaustive search.

    Only for tiny windows: a window of n queries has :func:`partition_count` ``(n, g)``
    partitions (W16/g8: 6,435; W12/g4: 5,775; W8/g2: 105); more than ``max_partitions``
    raises. The search is a memoized recursion over the set of unassigned queries.

    Parameters
    ----------
    topk, grouping, request_offsets, lengths, page_size
        As :func:`pageweaver_edu.regroup.bitmap.greedy_regroup` (topk [N, K] of int).
    max_partitions : int
        Largest search per window allowed.

    Returns
    -------
    numpy.ndarray of int32, shape [N]
        π (groups ordered by smallest member; the short group, if any, last).
    """
    window, group = grouping.window, grouping.group
    if partition_count(window, group) > max_partitions:
        raise PageWeaverInputError(
            f"W = {window}, g = {group} has {partition_count(window, group):,} partitions per "
            f"window (> max_partitions = {max_partitions:,}); use a smaller window"
        )
    table = window_table(topk, grouping, request_offsets=request_offsets, lengths=lengths,
                         page_size=page_size)
    return run_windows(table, _optimal_window)
