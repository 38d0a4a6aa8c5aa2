"""Seeded synthetic Top-K workloads (uniform, capture-like, interleaved).

Every generator takes a ``seed``, draws from one :func:`numpy.random.default_rng` stream and
returns a validated :class:`~pageweaver_edu.core.capture.Capture`; the same arguments always give
the same arrays. Rows are sorted ascending and hold ``min(K, pages available)`` distinct valid
page ids, padded with -1 only when fewer than K pages exist. Named, calibrated instances of
these generators live in :mod:`pageweaver_edu.workloads.presets`.
"""

from __future__ import annotations

import numpy as np

from ..core.capture import Capture
from ..core.inputs import PageWeaverInputError, check_elements, finite_float, positive_int


def _nonneg_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise PageWeaverInputError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def _fraction(value, name: str) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise PageWeaverInputError(f"{name} must be a number, got {value!r}") from None
    if not 0.0 <= value <= 1.0:
        raise PageWeaverInputError(f"{name} must lie in [0, 1], got {value}")
    return value


def distinct_rows(candidates: np.ndarray, limit: np.ndarray, rng: np.random.Generator):
    """Turn candidate page ids into rows of distinct valid ids.

    Duplicates are redrawn uniformly from ``0 .. limit[i] - 1`` until every row holds
    ``min(K, limit[i])`` distinct ids; rows with ``limit[i] <= K`` hold all their pages.

    Parameters
    ----------
    candidates : numpy.ndarray of int64, shape [N, K]
        Proposed ids, each in ``0 .. limit[i] - 1`` (repeats allowed).
    limit : numpy.ndarray of int64, shape [N]
        Number of pages row i may select (ids ``0 .. limit[i] - 1``), at least 1.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int64, shape [N, K]
        Ascending distinct ids per row, then -1 padding.
    """
    n, k = candidates.shape
    out = np.sort(candidates.astype(np.int64), axis=1)
    small = limit <= k
    cols = np.arange(k)[None, :]
    out[small] = np.where(cols < limit[small, None], cols, -1)
    todo = np.flatnonzero(~small)
    for _ in range(32):
        sub = out[todo]
        dup = np.zeros(sub.shape, dtype=bool)
        dup[:, 1:] = sub[:, 1:] == sub[:, :-1]
        bad = dup.any(axis=1)
        todo = todo[bad]
        if len(todo) == 0:
            return out
        r, c = np.nonzero(dup[bad])
        sub = sub[bad]
        sub[r, c] = rng.integers(0, limit[todo[r]])
        out[todo] = np.sort(sub, axis=1)
    for i in todo:  # rare: a row with barely more than K pages; draw without replacement
        keep = np.unique(out[i])
        extra = rng.choice(np.setdiff1d(np.arange(limit[i]), keep), k - len(keep), replace=False)
        out[i] = np.sort(np.concatenate([keep, extra]))
    return out


def uniform_workload(
    n: int,
    num_pages: int,
    k: int = 16,
    seed: int = 0,
    causal: bool = False,
    page_size: int = 128,
) -> Capture:
    """K distinct pages drawn uniformly at random per query.

    Parameters
    ----------
    n : int
        N, number of query positions.
    num_pages : int
        Context size in pages; ids are ``0 .. num_pages - 1``.
    k : int
        K, pages per query.
    seed : int
    causal : bool
        If True the queries are the last N tokens of a ``num_pages * page_size``-token
        context: ``c_i = num_pages * P - N + i``, ``L_i = c_i + 1``, and query i draws only
        from pages ``0 .. c_i // P``. Requires ``N <= num_pages * P``.
    page_size : int
        P.

    Returns
    -------
    Capture
        ``topk`` int64 ``[N, K]``; ``causal_pos`` and ``lengths`` int64 ``[N]`` when causal.
    """
    n, num_pages = _nonneg_int(n, "n"), positive_int(num_pages, "num_pages")
    k, p = positive_int(k, "k"), positive_int(page_size, "page_size")
    rng = np.random.default_rng(_nonneg_int(seed, "seed"))
    pos = lengths = None
    limit = np.full(n, num_pages, dtype=np.int64)
    if causal:
        if n > num_pages * p:
            raise PageWeaverInputError(f"causal: n = {n} exceeds the context of {num_pages * p}")
        pos = num_pages * p - n + np.arange(n, dtype=np.int64)
        lengths, limit = pos + 1, pos // p + 1
    draw = rng.integers(0, limit[:, None], size=(n, k))
    topk = distinct_rows(draw, limit, rng)
    return Capture.from_arrays(topk, lengths=lengths, causal_pos=pos, page_size=p)


def capture_like_workload(
    n: int,
    prefix_tokens: int,
    page_size: int = 128,
    k: int = 16,
    seed: int = 0,
    topic_pages: int = 9,
    drift: float = 1.0,
    run_mean: float = 24.0,
    revisit: float = 0.5,
    memory: int = 4,
) -> Capture:
    """A causal prefill chunk whose selections look like a model capture.

    Query i sits at ``c_i = prefix_tokens + i`` with ``L_i = c_i + 1`` and selects only pages
    ``p`` with ``p * P <= c_i``. Its K pages are: the sink page 0; the local pages
    ``c_i // P`` and the one before; ``topic_pages`` pages of the current topic; the rest
    noise (uniform over the valid pages). Topics come in runs of consecutive queries
    (geometric lengths, mean ``run_mean``). Inside a run each topic slot is resampled with
    probability ``drift / topic_pages`` per query (about ``drift`` new pages per query).
    A new run starts a fresh random topic, or with probability ``revisit`` returns to the
    opening topic of one of the ``memory`` runs before the previous one, so reuse also
    appears between queries that are not neighbours. Collisions are redrawn, so every row
    holds exactly K distinct valid pages when ``c_i // P + 1 >= K``.

    Parameters
    ----------
    n : int
        N, query positions in the chunk.
    prefix_tokens : int
        Tokens before the chunk.
    page_size : int
        P.
    k : int
        K; must be at least ``3 + topic_pages``.
    seed : int
    topic_pages : int
        Topic slots per query.
    drift : float
        Expected topic slots resampled per query inside a run (0 .. topic_pages).
    run_mean : float
        Mean run length in queries (>= 1).
    revisit : float
        Probability in [0, 1] that a run reuses an earlier topic.
    memory : int
        How far back (in runs) a revisit may reach.

    Returns
    -------
    Capture
        ``topk`` int64 ``[N, K]`` (rows ascending), ``causal_pos`` and ``lengths`` int64 ``[N]``.
    """
    n, prefix = _nonneg_int(n, "n"), _nonneg_int(prefix_tokens, "prefix_tokens")
    p, k = positive_int(page_size, "page_size"), positive_int(k, "k")
    t, memory = _nonneg_int(topic_pages, "topic_pages"), positive_int(memory, "memory")
    if k < 3 + t:
        raise PageWeaverInputError(f"k = {k} must be >= 3 + topic_pages = {3 + t}")
    check_elements((n, k), "the workload's topk")
    drift, run_mean = finite_float(drift, "drift"), finite_float(run_mean, "run_mean")
    if not 0.0 <= drift <= max(t, 1):
        raise PageWeaverInputError(f"drift must lie in [0, topic_pages = {t}], got {drift!r}")
    if not float(run_mean) >= 1.0:
        raise PageWeaverInputError(f"run_mean must be >= 1, got {run_mean!r}")
    revisit = _fraction(revisit, "revisit")
    rng = np.random.default_rng(_nonneg_int(seed, "seed"))
    pos = prefix + np.arange(n, dtype=np.int64)
    cur = pos // p
    limit = cur + 1
    rows = np.arange(n)
    start = rng.random(n) < 1.0 / float(run_mean)
    start[:1] = True
    change = rng.random((n, t)) < (float(drift) / t if t else 0.0)
    change[start] = True
    fresh = rng.integers(0, limit[:, None], size=(n, t))
    starts = np.flatnonzero(start)
    back = rng.random(len(starts)) < revisit
    lag = rng.integers(2, 2 + memory, size=len(starts))
    for r in np.flatnonzero(back & (np.arange(len(starts)) >= lag)):
        fresh[starts[r]] = fresh[starts[r - lag[r]]]  # in order, so chains resolve
    last = np.where(change, rows[:, None], 0)
    np.maximum.accumulate(last, axis=0, out=last)
    topic = fresh[last, np.arange(t)[None, :]]
    noise = rng.integers(0, limit[:, None], size=(n, k - 3 - t))
    local = np.stack([np.zeros(n, np.int64), cur, np.maximum(cur - 1, 0)], axis=1)
    topk = distinct_rows(np.concatenate([local, topic, noise], axis=1), limit, rng)
    return Capture.from_arrays(topk, lengths=pos + 1, causal_pos=pos, page_size=p)


def interleaved_workload(
    n: int,
    num_pages: int,
    k: int = 16,
    communities: int | None = None,
    seed: int = 0,
    page_size: int = 128,
) -> Capture:
    """Adjacent queries use different page communities; distant ones share them.

    The pages are shuffled and split into ``C`` communities of ``num_pages // C`` pages
    (leftover pages are never selected). Query i draws K distinct pages from community
    ``i % C``, so the eight queries of an original-order group touch up to eight communities
    while a regrouped window can gather queries of one community into one group.

    Parameters
    ----------
    n : int
        N.
    num_pages : int
        Context size in pages.
    k : int
        K; each community must hold at least K pages.
    communities : int, optional
        C >= 2; default ``max(2, num_pages // (2 * k))`` (communities of about 2K pages).
    seed : int
    page_size : int
        P (recorded in the capture; selections are not causal).

    Returns
    -------
    Capture
        ``topk`` int64 ``[N, K]`` (rows ascending); no lengths or causal positions.
    """
    n, num_pages = _nonneg_int(n, "n"), positive_int(num_pages, "num_pages")
    k = positive_int(k, "k")
    c = max(2, num_pages // (2 * k)) if communities is None else positive_int(communities, "C")
    if c < 2 or num_pages // c < k:
        raise PageWeaverInputError(
            f"communities = {c}: need C >= 2 and num_pages // C >= k ({num_pages} // {c} < {k})"
        )
    rng = np.random.default_rng(_nonneg_int(seed, "seed"))
    size = num_pages // c
    members = rng.permutation(num_pages)[: c * size].reshape(c, size)
    pick = np.argsort(rng.random((n, size)), axis=1)[:, :k]
    topk = np.sort(members[np.arange(n) % c][np.arange(n)[:, None], pick], axis=1)
    return Capture.from_arrays(topk, page_size=positive_int(page_size, "page_size"))
