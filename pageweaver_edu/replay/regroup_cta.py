"""Thread-by-thread simulation of one regroup CTA (docs/definitions.md#regroup-on-a-gpu).

One CTA owns one window: thread t holds the 512-page bitmap (16 uint32 words for B = 512) of
the window's t-th query in registers, the group union lives in shared memory. Every round

1. each candidate thread computes ``delta = Σ_w popcount(bits[w] & ~union[w])`` (a seed
   round, which opens a group, uses the key ``(0, id)`` instead so that min(R) wins);
2. each warp finds its minimal ``(delta, id)`` with five shuffle levels (offsets 16, 8, 4, 2,
   1), lane 0 writes the warp winner to shared memory — barrier;
3. warp 0 reduces the per-warp winners, the winner is marked assigned and the union updated
   (reset to the seed's bitmap every g picks) — barrier.

Same π as :func:`pageweaver_edu.regroup.bitmap.greedy_regroup`; it shows where the work and
the serial dependence are, not speed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.bitmap import bitmaps_from_canonical, popcount
from ..core.grouping import Grouping
from ..core.inputs import positive_int
from ..core.windows import window_table

WARP = 32
#: Key of a thread that does not compete (already assigned, or idle past a short window).
SENTINEL = int(np.iinfo(np.int32).max)
SHUFFLE_OFFSETS = (16, 8, 4, 2, 1)


@dataclass(frozen=True)
class CtaRound:
    """One round (one pick) of the simulated CTA.

    Attributes
    ----------
    index, group : int
        Round r in the window and its group ``r // g``.
    is_seed : bool
        The round opens a group: every candidate's key is ``(0, id)``.
    deltas : numpy.ndarray of int32, shape [threads]
        Each thread's delta; 0 for candidates in a seed round, -1 for threads not competing.
    lanes : numpy.ndarray of int32, shape [n_warps, 6, 32, 2]
        (delta, id) held by every lane before the first and after each of the five shuffle
        levels; non-competing lanes hold ``(SENTINEL, SENTINEL)``.
    warp_winners : numpy.ndarray of int32, shape [n_warps, 2]
        Lane 0's (delta, id) per warp, as written to shared memory.
    winner, winner_delta : int
        The thread (local query id) picked and its delta.
    union_before, union_after : numpy.ndarray of uint32, shape [n_words]
    barriers : int
        ``__syncthreads`` executed so far in the window, this round included.
    """

    index: int
    group: int
    is_seed: bool
    deltas: np.ndarray
    lanes: np.ndarray
    warp_winners: np.ndarray
    winner: int
    winner_delta: int
    union_before: np.ndarray
    union_after: np.ndarray
    barriers: int


@dataclass
class CtaTrace:
    """A whole window run by one CTA.

    Attributes
    ----------
    order : numpy.ndarray of int64, shape [n]
        Local query ids in execution order (π of the window minus its first row).
    threads : int
        CTA size: the window width rounded up to whole warps.
    barriers : int
        Total ``__syncthreads`` (two per round).
    word_ops : int
        Bitmap words processed (and-not + popcount): every thread, every non-seed round.
    rounds : list of CtaRound
        Empty unless ``record=True``.
    """

    order: np.ndarray
    threads: int
    barriers: int
    word_ops: int
    rounds: list[CtaRound] = field(default_factory=list)


def _pack(keys: np.ndarray) -> np.ndarray:
    """(δ, id) int32 pairs [..., 2] -> one int64 key δ·2^32 + id (same order, lexicographic)."""
    return (keys[..., 0].astype(np.int64) << 32) | keys[..., 1].astype(np.int64)


def _unpack(packed: np.ndarray) -> np.ndarray:
    """int64 [...] -> int32 (δ, id) [..., 2]."""
    return np.stack([packed >> 32, packed & 0xFFFFFFFF], axis=-1).astype(np.int32)


def _sources(mode: str, offsets) -> list[np.ndarray]:
    """Per level, the lane each lane reads (its own lane where the source is past lane 31)."""
    lane = np.arange(WARP)
    out = []
    for off in offsets:
        src = lane ^ off if mode == "xor" else lane + off
        out.append(np.where(src < WARP, src, lane))
    return out


def _shuffle_levels(packed: np.ndarray, sources: list[np.ndarray]) -> list[np.ndarray]:
    """Shuffle-min levels on packed keys [n_warps, 32]: level k+1 = min(own, read lane)."""
    levels = [packed]
    for src in sources:
        packed = np.minimum(packed, packed[:, src])
        levels.append(packed)
    return levels


def shuffle_argmin(keys: np.ndarray, mode: str = "down", offsets=SHUFFLE_OFFSETS) -> np.ndarray:
    """Warp argmin by register shuffles, every level recorded.

    Parameters
    ----------
    keys : numpy.ndarray of int32, shape [n_warps, 32, 2]
        (delta, id) per lane, both ``>= 0``.
    mode : {"down", "xor"}
        ``__shfl_down_sync`` (lane l reads lane l + o, or keeps its own value past lane 31;
        lane 0 ends with the minimum) or ``__shfl_xor_sync`` (butterfly, lane l reads l ^ o;
        every lane ends with the minimum).
    offsets : sequence of int

    Returns
    -------
    numpy.ndarray of int32, shape [n_warps, len(offsets) + 1, 32, 2]
        Level 0 is the input; the last level's lane 0 holds the warp's minimal (delta, id).

    Notes
    -----
    The pair is compared as one 64-bit key ``delta·2^32 + id`` (as a kernel would shuffle a
    packed pair); its numeric order is the lexicographic order of (delta, id).
    """
    levels = _shuffle_levels(_pack(keys), _sources(mode, offsets))
    return _unpack(np.stack(levels, axis=1))


def simulate_window(bits, group: int = 8, threads: int | None = None, shuffle: str = "down",
                    record: bool = True) -> CtaTrace:
    """Run one window through the simulated CTA.

    Parameters
    ----------
    bits : array_like of uint32, shape [n, n_words]
        Bitmaps of the window's queries, in original order (thread t = local id t).
    group : int
        g; the union resets every g picks.
    threads : int, optional
        CTA size (default: n rounded up to a multiple of 32). Threads past n are idle.
    shuffle : {"down", "xor"}
        Warp shuffle flavour (:func:`shuffle_argmin`).
    record : bool
        Keep a :class:`CtaRound` per round.

    Returns
    -------
    CtaTrace
    """
    group = positive_int(group, "group size g")
    bits = np.asarray(bits, dtype=np.uint32)
    n, n_words = bits.shape
    threads = WARP * max(1, -(-n // WARP)) if threads is None else positive_int(threads, "threads")
    if threads % WARP or threads < n:
        raise ValueError(f"threads = {threads} must be a multiple of 32 and at least n = {n}")
    n_warps = threads // WARP
    regs = np.vstack([bits, np.zeros((threads - n, n_words), np.uint32)])  # registers
    tid = np.arange(threads, dtype=np.int64)
    live = tid < n
    assigned = np.zeros(threads, dtype=bool)
    union = np.zeros(n_words, dtype=np.uint32)  # shared memory
    trace = CtaTrace(np.zeros(n, dtype=np.int64), threads, 0, 0)
    warp_src = _sources(shuffle, SHUFFLE_OFFSETS)
    smem_src = _sources("down", [1 << k for k in reversed(range((n_warps - 1).bit_length()))])
    none = (SENTINEL << 32) | SENTINEL
    for r in range(n):
        seed = r % group == 0
        cand = live & ~assigned
        if seed:
            delta = np.zeros(threads, dtype=np.int64)
        else:
            delta = popcount(regs & ~union).sum(axis=1, dtype=np.int64)
            trace.word_ops += threads * n_words
        keys = np.where(cand, (delta << 32) | tid, none).reshape(n_warps, WARP)
        levels = _shuffle_levels(keys, warp_src)
        warp_winners = levels[-1][:, 0]  # lane 0 of each warp writes shared memory
        trace.barriers += 1
        smem = np.full((1, WARP), none, dtype=np.int64)  # warp 0 reads the per-warp winners
        smem[0, :n_warps] = warp_winners
        best = int(_shuffle_levels(smem, smem_src)[-1][0, 0])
        win, win_delta = best & 0xFFFFFFFF, best >> 32
        before, union = union, (regs[win].copy() if seed else union | regs[win])
        assigned[win] = True
        trace.barriers += 1
        trace.order[r] = win
        if record:
            trace.rounds.append(CtaRound(
                r, r // group, seed, np.where(cand, delta, -1).astype(np.int32),
                _unpack(np.stack(levels, axis=1)), _unpack(warp_winners), win, win_delta,
                before, union, trace.barriers))
    return trace


def trace_window(topk, grouping: Grouping, index: int = 0, *, request_offsets=None,
                 lengths=None, page_size: int = 128,
                 shuffle: str = "down") -> tuple[int, CtaTrace]:
    """Simulate the ``index``-th window of a workload (request-, chunk-local windows).

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
    grouping : Grouping
        W (the CTA has W threads, rounded up to whole warps), g, B and the chunk size.
    index : int
        Window of the window table.
    request_offsets, lengths, page_size
        As :func:`pageweaver_edu.core.windows.window_table`.
    shuffle : {"down", "xor"}
        Warp shuffle flavour (:func:`shuffle_argmin`).

    Returns
    -------
    start : int
        Original id of the window's thread 0.
    trace : CtaTrace
        With a round record per pick.
    """
    table = window_table(topk, grouping, request_offsets=request_offsets, lengths=lengths,
                         page_size=page_size)
    start, end = (int(v) for v in table.windows[index])
    bits = bitmaps_from_canonical(table.canonical[start:end], grouping.capacity)
    return start, simulate_window(bits, grouping.group, _threads(grouping), shuffle,
                                  record=True)


def _threads(grouping: Grouping) -> int:
    """CTA size for W: one thread per query, rounded up to whole warps."""
    return WARP * -(-grouping.window // WARP)


def cta_regroup(topk, grouping: Grouping, *, request_offsets=None, lengths=None,
                page_size: int = 128, shuffle: str = "down") -> np.ndarray:
    """π from simulated CTAs, one per window (identity under the capacity fallback).

    Parameters and result as :func:`pageweaver_edu.regroup.bitmap.greedy_regroup`, plus
    ``shuffle`` (:func:`shuffle_argmin`); returns numpy.ndarray of int32, shape [N].
    """
    table = window_table(topk, grouping, request_offsets=request_offsets, lengths=lengths,
                         page_size=page_size)

    def order(_, start, end):
        bits = bitmaps_from_canonical(table.canonical[start:end], grouping.capacity)
        trace = simulate_window(bits, grouping.group, _threads(grouping), shuffle, record=False)
        return start + trace.order

    return table.permutation(order)
