"""Work and serial depth of the paper's GPU regroup: one CTA per window, W dependent rounds.

The cost model of docs/definitions.md#regroup-on-a-gpu: ``O(N·W·⌈B/32⌉)`` bitmap-word
operations, spread over ⌈N/W⌉ CTAs that run in parallel, each a chain of W rounds with two
barriers and a shuffle reduction per round (:mod:`.regroup_cta` replays one such CTA).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.bitmap import bitmap_words
from ..core.inputs import as_int, positive_int
from .regroup_cta import SHUFFLE_OFFSETS, WARP


@dataclass(frozen=True)
class RegroupCost:
    """Work and serial depth of the CTA-per-window regroup.

    Attributes
    ----------
    queries, window, words : int
        N, W and ⌈B/32⌉.
    windows : int
        CTAs launched, ⌈N/W⌉ (they run in parallel).
    word_ops : int
        ``N·W·⌈B/32⌉``: every round of a window, all W threads process all words.
    serial_rounds : int
        Dependent rounds of the longest window, ``min(W, N)``: round r+1 needs round r's union.
    barriers_per_window : int
        Two ``__syncthreads`` per round.
    shuffle_levels_per_round : int
        5 warp levels plus ⌈log2(W/32)⌉ for the shared-memory winner reduction.
    """

    queries: int
    window: int
    words: int
    windows: int
    word_ops: int
    serial_rounds: int
    barriers_per_window: int
    shuffle_levels_per_round: int


def regroup_cost(queries: int, window: int, capacity: int = 512) -> RegroupCost:
    """Cost model of arXiv:2610.11201 §4.1: O(N·W·⌈B/32⌉) word operations, W rounds per window.

    Parameters
    ----------
    queries : int
        N.
    window : int
        W.
    capacity : int
        B; a bitmap holds ⌈B/32⌉ words.

    Returns
    -------
    RegroupCost

    Examples
    --------
    >>> c = regroup_cost(15_272, 128)
    >>> (c.windows, c.word_ops, c.serial_rounds)
    (120, 31277056, 128)
    """
    n, w = as_int(queries, "queries N"), positive_int(window, "window W")
    words = bitmap_words(capacity)
    rounds = min(w, n)
    n_warps = -(-w // WARP)
    return RegroupCost(n, w, words, -(-n // w), n * w * words, rounds, 2 * rounds,
                       len(SHUFFLE_OFFSETS) + (n_warps - 1).bit_length())
