"""Puzzles 3 and 4: one greedy pick by warp shuffles, and a group's union with membership bytes.

Checked against :func:`pageweaver_edu.regroup.bitmap.greedy_regroup` (π with the series'
tie-breaks) and :func:`pageweaver_edu.core.union_plan.prepare_unions` (U_G and its bytes).
"""

from __future__ import annotations

import numpy as np

from ..core.bitmap import encode_bitmaps
from ..core.grouping import Grouping
from ..core.union_plan import prepare_unions
from ..regroup.bitmap import greedy_regroup
from .checks import TODO, UNWRITTEN, Case, Puzzle, page_set, written
from .engine import Kernel
from .selection import BITMAP_PRELUDE, WORDS

# ---- Puzzle 3: the warp-level arg-min of one greedy round ---------------------------------------

PICK_STARTER = f"""\
// One greedy round of a window of at most 32 queries, called by all 32 lanes of the warp:
// lane j is query j, with delta = δ(j), the pages S_j adds to the group's union (0 .. K), and
// alive = j is still unassigned (false for lanes past the window; at least one lane is
// alive). Return, in EVERY lane, the query the round picks: the alive query with the smallest
// delta, ties to the smallest id. Use warp shuffles (the kernel never goes through shared
// memory here).
__device__ int pick_winner(int delta, bool alive) {{
  // {TODO}
  return 0;
}}
"""

GREEDY_HARNESS = """\
// The greedy of one window around pick_winner: seeds are min(R), U_G resets every g picks.
__global__ void greedy_window(const unsigned* bits, int n, int group, int* perm, int* picks,
                              int* deltas) {
  const int lane = threadIdx.x;
  unsigned S[PW_WORDS], U[PW_WORDS];
  for (int w = 0; w < PW_WORDS; ++w) S[w] = lane < n ? bits[lane * PW_WORDS + w] : 0u;
  unsigned R = n >= 32 ? 0xffffffffu : (1u << n) - 1u;
  bool alive = lane < n;
  int slot = 0, round = 0;
  while (slot < n) {
    const int seed = __ffs(R) - 1;
    R &= ~(1u << seed);
    if (lane == 0) perm[slot] = seed;
    alive = alive && lane != seed;
    ++slot;
    int delta = 0;
    for (int w = 0; w < PW_WORDS; ++w) {
      U[w] = bits[seed * PW_WORDS + w];
      delta += __popc(S[w] & ~U[w]);
    }
    for (int members = 1; members < group && slot < n; ++members, ++slot, ++round) {
      deltas[round * 32 + lane] = alive ? delta : -1;
      const int mine = pick_winner(delta, alive);
      picks[round * 32 + lane] = mine;
      const int j = __shfl_sync(0xffffffffu, mine, 0);  // the harness follows lane 0
      if (lane == 0) perm[slot] = j;
      if (j < 0 || j >= n || !((R >> j) & 1u)) return;  // not a candidate: the check says so
      R &= ~(1u << j);
      alive = alive && lane != j;
      for (int w = 0; w < PW_WORDS; ++w) {
        const unsigned fresh = bits[j * PW_WORDS + w] & ~U[w];
        U[w] |= fresh;
        delta -= __popc(S[w] & fresh);
      }
    }
  }
}
"""
GREEDY = Kernel("greedy_window", (("const unsigned*", "bits"), ("int", "n"), ("int", "group"),
                                  ("int*", "perm"), ("int*", "picks"), ("int*", "deltas")),
                prelude=BITMAP_PRELUDE, harness=GREEDY_HARNESS)


def _window(name: str, topk) -> Case:
    return Case(name, {"topk": np.asarray(topk, dtype=np.int32)})


def _greedy_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(3):
        n = int(rng.integers(9, 33))
        pool = rng.choice(32 * WORDS, 12, replace=False)  # few pages: overlaps and ties
        cases.append(_window(f"random window of {n}", rng.choice(pool, size=(n, 4))))
    cases.append(_window("all supports equal (every delta ties)", [[3, 9, 40]] * 16))
    cases.append(_window("empty supports, partial last group", [[-1, -1]] * 3 + [[1, 2]] * 8))
    cases.append(_window("one query", [[7]]))
    return cases


def _greedy_run(launch, case: Case) -> str | None:
    topk = case.data["topk"]
    n = topk.shape[0]
    bits = np.zeros(32 * WORDS, np.uint32)
    bits[:n * WORDS] = encode_bitmaps(topk, 32 * WORDS).ravel()
    perm = np.full(n, -7, np.int32)
    picks = np.full(32 * n, -7, np.int32)
    deltas = np.full(32 * n, -7, np.int32)
    launch(1, 32, [bits, n, 8, perm, picks, deltas])
    want = greedy_regroup(topk, Grouping(32, 8, 32 * WORDS))
    rounds = [r for r in range(n) if r % 8]  # positions of π picked by a round (not a seed)
    for number, slot in enumerate(rounds):
        lanes = picks[32 * number:32 * number + 32]
        if np.any(lanes != lanes[0]):
            odd = int(np.flatnonzero(lanes != lanes[0])[0])
            return (f"round {number} (π[{slot}]): lane 0 got {lanes[0]} but lane {odd} got "
                    f"{lanes[odd]}: every lane must hold the winner\n"
                    f"{_round_diagram(deltas[32 * number:32 * number + 32], lanes)}")
        if perm[slot] != want[slot]:
            d = deltas[32 * number:32 * number + 32]
            got = perm[slot]
            got_d = (f"delta {d[got]}" if 0 <= got < 32 and d[got] >= 0
                     else "not a candidate: already in a group or past the window")
            return (f"round {number} (π[{slot}], group {slot // 8}): picked query {got} "
                    f"({got_d}); the series picks query {want[slot]} (delta "
                    f"{d[want[slot]]}): the smallest delta among alive queries (delta -1 = "
                    f"assigned), ties to the smallest id\n{_round_diagram(d, lanes)}")
    return None


def _round_diagram(deltas: np.ndarray, picks: np.ndarray) -> str:
    """Every lane's delta (-- where not alive) and the winner it returned."""
    lanes = [i for i in range(32) if deltas[i] != -7]
    head = "lane   " + " ".join(f"{i:>3}" for i in lanes)
    delta = "delta  " + " ".join(" --" if deltas[i] < 0 else f"{deltas[i]:>3}" for i in lanes)
    won = "winner " + " ".join(f"{picks[i]:>3}" for i in lanes)
    return "\n".join((head, delta, won))


GREEDY_PICK = Puzzle(3, "one greedy round: the warp arg-min", GREEDY, PICK_STARTER,
                     "p3_pick_winner.cu", _greedy_cases, _greedy_run,
                     ("regroup.cu", "winner-pick"))

# ---- Puzzle 4: U_G in ascending order with membership bytes ----------------------------------

UNION_WORDS = 32  # B = 1024: lane w owns word w of every member position's bitmap
UNION_STARTER = f"""\
// One warp, one group of `size` <= 8 queries at member positions r = 0 .. size - 1.
// bits[r * 32 + w] is word w of position r's bitmap (pages 32 w .. 32 w + 31, B = 1024;
// positions r >= size are all zero), and lane w owns word w. Write U_G (every page of any
// position) in ascending order to pages[0 .. |U_G| - 1], with masks[x] = the membership byte
// of pages[x] (bit r set when position r selects it), and *count = |U_G|. Each lane must know
// where its pages start: a prefix sum over the lanes' popcounts.
__global__ void emit_union(const unsigned* bits, int size, int* pages, unsigned char* masks,
                           int* count) {{
  // {TODO}
}}
"""
UNION = Kernel("emit_union", (("const unsigned*", "bits"), ("int", "size"), ("int*", "pages"),
                              ("unsigned char*", "masks"), ("int*", "count")))


def _union_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(3):
        size = int(rng.integers(1, 9))
        pool = rng.choice(32 * UNION_WORDS, 24, replace=False)
        topk = rng.choice(np.r_[pool, -1], size=(size, 8))
        cases.append(_window(f"random group of {size}", topk))
    cases.append(_window("eight equal supports", [[0, 31, 32, 1023]] * 8))
    cases.append(_window("empty supports", [[-1, -1]] * 5))
    cases.append(_window("one page per lane", np.arange(32 * 8).reshape(8, 32) * 4))
    return cases


def _union_run(launch, case: Case) -> str | None:
    topk = case.data["topk"]
    size = topk.shape[0]
    bits = np.zeros((8, UNION_WORDS), np.uint32)
    bits[:size] = encode_bitmaps(topk, 32 * UNION_WORDS)
    pages = np.full(32 * UNION_WORDS, UNWRITTEN, np.int32)
    masks = np.zeros(32 * UNION_WORDS, np.uint8)
    count = np.full(1, UNWRITTEN, np.int32)
    launch(1, 32, [bits.ravel(), size, pages, masks, count])
    want_pages, want_masks = prepare_unions(topk, group=8).group_pages(0)
    if count[0] != len(want_pages):
        return (f"*count = {written(count[0])}, expected |U_G| = {len(want_pages)}: U_G = "
                f"{page_set(want_pages)}\n{_offsets_diagram(bits, pages)}")
    for x, (page, mask) in enumerate(zip(want_pages, want_masks, strict=True)):
        if pages[x] != page:
            return (f"pages[{x}] = {written(pages[x])}, expected page {page} (U_G ascending = "
                    f"{page_set(want_pages)})\n{_offsets_diagram(bits, pages)}")
        if masks[x] != mask:
            got = [r for r in range(8) if (int(masks[x]) >> r) & 1]
            return (f"page {page} (pages[{x}]): membership byte 0x{int(masks[x]):02x} = "
                    f"positions {page_set(got)}, expected 0x{int(mask):02x} = positions "
                    f"{page_set(r for r in range(8) if (int(mask) >> r) & 1)} (bit r is bit "
                    f"{page % 32} of word {page // 32} of position r's bitmap)")
    return None


def _offsets_diagram(bits: np.ndarray, pages: np.ndarray) -> str:
    """The lanes that own pages: their popcount, where their pages start in U_G, and what the
    reader wrote there."""
    counts = [int(np.bitwise_or.reduce(bits[:, w]).bit_count()) for w in range(UNION_WORDS)]
    starts = np.cumsum([0, *counts[:-1]])
    lanes = [w for w in range(UNION_WORDS) if counts[w]]
    yours = ["-" if pages[starts[w]] == UNWRITTEN else str(pages[starts[w]]) for w in lanes]
    return "\n".join((
        "lane              " + " ".join(f"{w:>4}" for w in lanes),
        "its pages         " + " ".join(f"{counts[w]:>4}" for w in lanes),
        "they start at     " + " ".join(f"{starts[w]:>4}" for w in lanes),
        "pages[start] yours" + " ".join(f"{y:>4}" for y in yours)))


UNION_EMIT = Puzzle(4, "union emission with membership bytes", UNION, UNION_STARTER,
                    "p4_emit_union.cu", _union_cases, _union_run,
                    ("union_emit.cuh", "membership-byte"))
