"""Self-checking exercises of chapters 01 (A_i) and 02 (U_G and ρ_Q).

Each exercise is an :class:`~pageweaver_edu.notebook.exercises.Exercise` whose reference is the
library's own definition (:func:`pageweaver_edu.core.supports.token_support`,
:func:`pageweaver_edu.core.union_metrics.union_stats`). The case generators mix random rows with
the inputs that trip people up: ``-1`` padding, repeated ids, empty supports, a length or causal
cut inside a page, a causal position past the length, and a last group shorter than g.
"""

from __future__ import annotations

import numpy as np

from ..core.supports import token_support
from ..core.union_metrics import union_stats
from .exercises import Exercise, close_value


def _random_row(rng: np.random.Generator, k: int, pages: int) -> list[int]:
    """A Top-K row over ``pages`` ids with padding (``-1``) and repeats mixed in."""
    row = rng.integers(0, pages, size=k)
    row[rng.random(k) < 0.25] = -1
    if k > 1 and rng.random() < 0.5:
        row[-1] = row[0]  # a repeated id (or repeated padding)
    return [int(p) for p in row]


def _attended_cases(rng: np.random.Generator):
    """Cases ``(pages, page_size, length, causal_pos)`` for the A_i exercise."""
    yield ([0, 2], 4, 11, 9), {}                    # the worked example of the chapter
    yield ([-1, -1, -1], 4, 11, 9), {}              # empty support
    yield ([5, 5, 5, 5], 4, 40, 40), {}             # one page four times
    yield ([1, 3], 4, 14, 12), {}                   # causal cut on a page's first token
    yield ([0, 1], 4, 6, 2), {}                     # c_i far below L_i, both inside a page
    yield ([2, 0], 8, 0, 30), {}                    # L_i = 0: nothing exists yet
    for _ in range(40):
        page_size = int(rng.choice([1, 2, 4, 8]))
        row = _random_row(rng, int(rng.integers(1, 7)), 8)
        top = 8 * page_size
        length = int(rng.integers(0, top + 1))
        causal = int(rng.integers(0, top + 1))
        if length > 0 and rng.random() < 0.3:
            causal = length - 1  # the decode case L_i = c_i + 1
        yield (row, page_size, length, causal), {}


def _attended_reference(pages, page_size, length, causal_pos):
    return token_support(pages, page_size, length, causal_pos)


#: Chapter 01: the token set A_i of one query.
ATTENDED_TOKENS = Exercise(
    "A_i",
    "Write attended_tokens(pages, page_size, length, causal_pos): the ascending token "
    "positions t with floor(t / P) a valid selected page, t < L_i and t <= c_i.",
    _attended_reference,
    _attended_cases,
)


def _rho_cases(rng: np.random.Generator):
    """Cases ``(topk, g)`` for the ρ_Q exercise (groups in original order)."""
    yield ([[1, 4, 7], [1, 4, 9]], 2), {}                        # the paper's example: 1.5
    yield ([[1, 4, 7], [2, 3, 5], [1, 4, 9]], 2), {}             # a short last group
    yield ([[3, 3, -1], [3, -1, -1], [-1, -1, -1], [5, 3, 3]], 4), {}  # repeats and an empty row
    yield ([[-1, -1], [-1, -1]], 2), {}                          # no edge at all: NaN
    for _ in range(40):
        n, k = int(rng.integers(1, 14)), int(rng.integers(1, 6))
        topk = [_random_row(rng, k, int(rng.integers(2, 12))) for _ in range(n)]
        if rng.random() < 0.2:
            topk[int(rng.integers(0, n))] = [-1] * k            # an empty support
        yield (topk, int(rng.choice([1, 2, 3, 4, 8]))), {}


def _rho_reference(topk, g):
    return union_stats(topk, group=g).rho


#: Chapter 02: ρ_Q of groups of g consecutive queries.
RHO_Q = Exercise(
    "rho_Q",
    "Write rho_q(topk, g): groups are queries 0..g-1, g..2g-1, ... (the last one may be "
    "short); return sum_i |S_i| / sum_G |U_G| as a float, and float('nan') when no query "
    "selected any page.",
    _rho_reference,
    _rho_cases,
    same=close_value(rtol=1e-12, atol=0.0),
)
