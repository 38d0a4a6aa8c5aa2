"""Pair-mask form of the greedy regroup: the H200 default kernel, step by step on the CPU.

The paper's GPU form (§4.1, :mod:`pageweaver_edu.replay.regroup_cta`) pays 16 popcounts per
candidate and a CTA barrier in every one of a window's W dependent rounds. The "pairs" kernels
of ``kernels/regroup.cu`` (K ≤ 16) move that work out of the rounds:

* ``C_p`` — the W-bit column of the window queries that select page p (query i at bit
  :func:`col_pos` (i), which spreads a warp's atomics over every shared-memory bank);
* ``M[j, i]`` — a 16-bit mask over query i's Top-K *slots* k: bit k is set when S_j also
  selects i's page ``p_k(i)`` (a repeated id included), i.e. bit ``col_pos(j)`` of
  ``C_{p_k(i)}``. Thread i builds its column
  ``M[·, i]`` by transposing its 16 × W bit matrix ``(C_{p_k(i)})_k`` in registers, 16 × 16
  bits at a time (:func:`transpose_16x16x2`);
* ``all_i`` — i's valid, distinct slots; then the rounds need only
  ``live_i = all_i & ~M[seed, i]`` for a seed, ``live_i &= ~M[j*, i]`` for a pick and
  ``delta_i = popcount(live_i) = |S_i \\ U_G|``, which one warp does without a barrier;
* storage: each transposed word holds two rows of M, and the kernel stores it as it is
  (:func:`pair_mask_words`); a candidate's reduction key is ``(delta << 22) + tie`` with
  ``tie = j << 15 | row(j)`` (:func:`pair_tie`): ordered by (delta, id), and its low 15 bits
  are the byte offset of row j, so the winner's key is the next load address of every lane.

Everything here follows the kernel's data layout (slots in Top-K order, first occurrence of a
repeated id kept) and gives exactly the π of :func:`pageweaver_edu.regroup.bitmap.greedy_regroup`.
"""

from __future__ import annotations

import numpy as np

from ..core.bitmap import popcount
from ..core.grouping import Grouping
from ..core.inputs import PageWeaverInputError
from ..core.windows import window_table

#: Top-K slots a 16-bit pair mask can name.
PAIR_SLOTS = 16
#: Key layout of the pairs kernels: tie = j << ID_SHIFT | row(j); key = delta << DELTA_SHIFT.
ID_SHIFT, DELTA_SHIFT = 15, 22
ROW_MASK = (1 << ID_SHIFT) - 1
#: The transpose's stages: (shift s, mask of the columns whose bit s is 0). The kernel does the
#: first (whole bytes) with byte permutes and the others with bit-field selects; same result.
BUTTERFLY = ((8, 0x00FF00FF), (4, 0x0F0F0F0F), (2, 0x33333333), (1, 0x55555555))


def slot_masks(rows: np.ndarray, capacity: int = 512) -> np.ndarray:
    """Valid, distinct slots of each row: ``all_i``.

    Parameters
    ----------
    rows : numpy.ndarray of int, shape [W, K], K ≤ 16
        Top-K page ids of a window (``< 0`` padding).
    capacity : int
        B; ids ≥ B are not valid slots (they trigger the capacity fallback instead).

    Returns
    -------
    numpy.ndarray of uint32, shape [W]
        Bit k set when ``0 <= rows[i, k] < B`` and no earlier slot of row i holds that id.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if rows.ndim != 2 or rows.shape[1] > PAIR_SLOTS:
        raise PageWeaverInputError(f"pair masks need rows of shape [W, K <= 16], got {rows.shape}")
    k = rows.shape[1]
    earlier = np.tril(np.ones((k, k), dtype=bool), -1)  # earlier[k, m]: m < k
    repeat = ((rows[:, :, None] == rows[:, None, :]) & earlier).any(axis=2)
    repeats = (repeat.astype(np.uint32) << np.arange(k, dtype=np.uint32)).sum(axis=1,
                                                                              dtype=np.uint32)
    return in_range_slots(rows, capacity) & ~repeats


def in_range_slots(rows: np.ndarray, capacity: int = 512) -> np.ndarray:
    """Slots of each row that hold a page id ``0 <= id < B`` (repeats included).

    Parameters
    ----------
    rows : numpy.ndarray of int, shape [w, K]
        The window's Top-K rows (K <= 16), -1 padding.
    capacity : int
        B.

    Returns
    -------
    numpy.ndarray of uint32, shape [W]
    """
    rows = np.asarray(rows, dtype=np.int64)
    ok = (rows >= 0) & (rows < capacity)
    return (ok.astype(np.uint32) << np.arange(rows.shape[1], dtype=np.uint32)).sum(
        axis=1, dtype=np.uint32)


def col_pos(i, window: int):
    """Position ``32·word + bit`` of window query i in a page column (the kernel's col_pos).

    With CW = W/32 words per column, the 32 lanes of warp ``i // 32`` fill all CW words, 32/CW
    lanes each, so one atomicOr instruction of a warp spreads over every bank. A permutation
    of ``range(W)``.

    Parameters
    ----------
    i : int or numpy.ndarray of int
        Query index (or indices) inside the window.
    window : int
        W, a multiple of 32.
    """
    cw = window // 32
    lanes = 32 // cw
    i = np.asarray(i, dtype=np.int64)
    return 32 * (((i >> 5) + i // lanes) & (cw - 1)) + (i >> 5) * lanes + i % lanes


def page_columns(rows: np.ndarray, used: np.ndarray, window: int,
                 capacity: int = 512) -> np.ndarray:
    """``C_p`` of a window: bit ``col_pos(i) % 32`` of word ``col_pos(i) // 32`` set when query
    i selects page p in a slot of ``used``.

    Parameters
    ----------
    rows
        As :func:`in_range_slots`.
    used : numpy.ndarray of uint32, shape [w]
        Slot bits per row (:func:`in_range_slots`, or first occurrences only).
    window, capacity : int
        W (a multiple of 32) and B.

    Returns
    -------
    numpy.ndarray of uint32, shape [B, W/32]
    """
    rows = np.asarray(rows, dtype=np.int64)
    k = rows.shape[1]
    cols = np.zeros((capacity, window // 32), dtype=np.uint32)
    i, slot = np.nonzero((used[:, None] >> np.arange(k, dtype=np.uint32)) & 1)
    pos = col_pos(i, window)
    bits = (np.uint32(1) << (pos % 32)).astype(np.uint32)
    np.bitwise_or.at(cols, (rows[i, slot], pos // 32), bits)
    return cols


def transpose_16x16x2(x: np.ndarray) -> np.ndarray:
    """The kernel's in-register transpose of two 16 × 16 bit blocks, for many threads at once.

    Parameters
    ----------
    x : numpy.ndarray of uint32, shape [16, T]
        Word k of each of T threads.

    Returns
    -------
    numpy.ndarray of uint32, shape [16, T]
        Bit k of the low (high) half of word t is bit t (16 + t) of input word k.
    """
    x = np.array(x, dtype=np.uint32)
    for s, mask in BUTTERFLY:
        lo = np.array([k for k in range(PAIR_SLOTS) if not k & s])
        t = ((x[lo] >> np.uint32(s)) ^ x[lo + s]) & np.uint32(mask)
        x[lo + s] ^= t
        x[lo] ^= t << np.uint32(s)
    return x


def pair_tie(j: int, window: int) -> int:
    """The kernel's tie of window query j: ``j << 15 | row(j)`` (see :func:`pair_mask_words`).

    With ``r = col_pos(j)``, ``row(j) = (16·(r // 32) + r % 16)·4W + 2·((r // 16) % 2)`` is the
    byte offset of M[j][0]: rows at positions ``32w + t`` and ``32w + 16 + t`` share the words
    ``(16w + t)·W + i`` (low, high half).

    Parameters
    ----------
    j, window : int
        The query's index inside the window, and W.
    """
    r = int(col_pos(j, window))
    row = (16 * (r >> 5) + (r & 15)) * 4 * window + 2 * ((r >> 4) & 1)
    return (j << ID_SHIFT) | row


def pair_mask_words(rows: np.ndarray, window: int,
                    capacity: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """M as the kernel builds and stores it: page columns, transposes, words stored as they are.

    Parameters
    ----------
    rows : numpy.ndarray of int, shape [w, K], w ≤ W, K ≤ 16
    window : int
        W of the kernel (a multiple of 32).
    capacity : int
        B.

    Returns
    -------
    words : numpy.ndarray of uint32, shape [W // 2, W]
        Thread i's transposed word t of column block w at ``words[16w + t, i]``: M of the
        queries at column positions 32w + t (low half) and 32w + 16 + t (high half).
    valid : numpy.ndarray of uint32, shape [w]
        ``all_i`` (see :func:`slot_masks`).
    """
    rows = np.asarray(rows, dtype=np.int64)
    valid = slot_masks(rows, capacity)
    w, k = rows.shape
    used = in_range_slots(rows, capacity)
    cols = page_columns(rows, used, window, capacity)
    take = np.zeros((PAIR_SLOTS, w), dtype=bool)
    take[:k] = ((used[None, :] >> np.arange(k, dtype=np.uint32)[:, None]) & 1).astype(bool)
    pages = np.zeros((PAIR_SLOTS, w), dtype=np.int64)
    pages[:k] = np.where(take[:k], rows.T, 0)
    words = np.zeros((window // 2, window), dtype=np.uint32)
    for block in range(cols.shape[1]):
        x = np.where(take, cols[pages, block], 0).astype(np.uint32)  # [16 slots, w threads]
        words[16 * block:16 * block + PAIR_SLOTS, :w] = transpose_16x16x2(x)
    return words, valid


def pair_masks(rows: np.ndarray, capacity: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """``M`` and ``all`` of a window, read back the way the rounds read them.

    M is built by :func:`pair_mask_words`; M[j][i] is the 16-bit value at byte
    ``(pair_tie(j) & ROW_MASK) | 4i`` of the stored words, the address a lane loads.

    Parameters
    ----------
    rows, capacity
        As :func:`in_range_slots`.

    Returns
    -------
    masks : numpy.ndarray of uint16, shape [w, w]
        ``masks[j, i]`` = M[j][i].
    valid : numpy.ndarray of uint32, shape [w]
        ``all_i`` (see :func:`slot_masks`).
    """
    w = np.asarray(rows).shape[0]
    window = 32 * max(1, -(-w // 32))
    words, valid = pair_mask_words(rows, window, capacity)
    halves = words.astype("<u4").view("<u2").ravel()  # little endian: low half first
    masks = np.zeros((w, w), dtype=np.uint16)
    for j in range(w):
        row = pair_tie(j, window) & ROW_MASK
        masks[j] = halves[(row + 4 * np.arange(w)) // 2]
    return masks, valid


def pairs_window_order(masks: np.ndarray, valid: np.ndarray, group: int) -> np.ndarray:
    """Greedy order of one window from its pair masks (the kernel's single-warp rounds).

    Parameters
    ----------
    masks, valid
        As :func:`pair_masks` returns them.
    group : int
        g.

    Returns
    -------
    numpy.ndarray of int64, shape [W]
        Local π: slot r runs window query ``order[r]``.
    """
    w = len(valid)
    alive = np.ones(w, dtype=bool)
    order = []
    ids = np.arange(w)
    while len(order) < w:
        seed = int(np.flatnonzero(alive)[0])
        alive[seed] = False
        order.append(seed)
        live = valid & ~masks[seed].astype(np.uint32)
        for _ in range(1, group):
            if not alive.any():
                break
            delta = popcount(live).astype(np.int64)
            key = np.where(alive, (delta << 8) | ids, np.iinfo(np.int64).max)
            j = int(np.argmin(key))
            alive[j] = False
            order.append(j)
            live &= ~masks[j].astype(np.uint32)
    return np.array(order, dtype=np.int64)


def pairs_regroup(topk, grouping: Grouping, *, request_offsets=None, lengths=None,
                  page_size: int = 128) -> np.ndarray:
    """π computed the way the "pairs" kernels compute it (identity under the capacity fallback).

    Parameters and result as :func:`pageweaver_edu.regroup.bitmap.greedy_regroup`, with
    K ≤ 16; returns numpy.ndarray of int32, shape [N].
    """
    table = window_table(topk, grouping, request_offsets=request_offsets, lengths=lengths,
                         page_size=page_size)
    raw = np.asarray(topk)
    if raw.ndim == 2 and raw.shape[1] > PAIR_SLOTS:
        raise PageWeaverInputError(
            f"pair masks name at most {PAIR_SLOTS} slots, got K = {raw.shape[1]}")

    def order(_, start, end):
        masks, valid = pair_masks(raw[start:end], grouping.capacity)
        return start + pairs_window_order(masks, valid, grouping.group)

    return table.permutation(order)
