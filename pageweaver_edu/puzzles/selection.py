"""Puzzles 1 and 2: which tokens a query sees, and a window's bitmaps with their popcounts.

Checked against :func:`pageweaver_edu.core.supports.token_support`,
:func:`pageweaver_edu.core.bitmap.encode_bitmaps` and
:func:`pageweaver_edu.core.bitmap.popcount_delta`.
"""

from __future__ import annotations

import numpy as np

from ..core.bitmap import decode_bitmap, encode_bitmaps, popcount_delta
from ..core.supports import token_support
from .checks import TODO, UNWRITTEN, Case, Puzzle, page_set, written
from .engine import Kernel

# ---- Puzzle 1: A_i, one thread per (Top-K entry, token offset) --------------------------------

VISIBLE_STARTER = f"""\
// One block of k * page_size threads per query i (blockIdx.x), one thread per (Top-K entry,
// token offset): thread tid looks at entry e = tid / page_size of the row topk[i * k ..
// i * k + k - 1], page p = topk[i * k + e], and offset o = tid % page_size. Write
// tokens[i * k * page_size + tid] = the token t = p * page_size + o when t is in A_i, else -1.
// A_i = tokens of the selected pages p >= 0 (a page selected twice counts once: only its
// first entry writes its tokens, later ones write -1), with t < lengths[i] (L_i) and
// t <= causal_pos[i] (c_i).
__global__ void visible_tokens(const int* topk, int k, int page_size, const int* lengths,
                               const int* causal_pos, int* tokens) {{
  // {TODO}
}}
"""

VISIBLE = Kernel("visible_tokens", (("const int*", "topk"), ("int", "k"), ("int", "page_size"),
                                    ("const int*", "lengths"), ("const int*", "causal_pos"),
                                    ("int*", "tokens")))


def _visible_cases(rng: np.random.Generator) -> list[Case]:
    def make(name, topk, page_size, lengths, causal):
        topk = np.asarray(topk, dtype=np.int32)
        return Case(name, {"topk": topk, "P": page_size,
                           "lengths": np.asarray(lengths, dtype=np.int32),
                           "causal": np.asarray(causal, dtype=np.int32)})

    cases = []
    for r in range(3):
        n, k, p = 4, 4, 8
        topk = rng.integers(-1, 12, size=(n, k))
        cases.append(make(f"random {r + 1}", topk, p, rng.integers(1, 12 * p, n),
                          rng.integers(0, 12 * p, n)))
    cases.append(make("empty support and padding", [[-1, -1, -1], [3, -1, 3]], 4,
                      [100, 100], [100, 100]))
    cases.append(make("partial pages (length and causal mid-page)", [[0, 1, 2], [2, 1, 0]], 8,
                      [13, 24], [23, 4]))
    cases.append(make("pages past the length", [[5, 0, 9]], 4, [8], [40]))
    return cases


def _token_reason(page: int, first: bool, token: int, length: int, causal: int) -> str:
    if page < 0:
        return "padding (page id < 0)"
    if not first:
        return f"page {page} was already selected by an earlier entry"
    if token >= length:
        return f"token {token} >= L_i = {length}"
    if token > causal:
        return f"token {token} > c_i = {causal}"
    return f"token {token} is in A_i"


def _visible_run(launch, case: Case) -> str | None:
    d = case.data
    topk, size = d["topk"], d["P"]
    n, k = topk.shape
    out = np.full(n * k * size, UNWRITTEN, dtype=np.int32)
    launch(n, k * size, [topk.ravel().copy(), k, size, d["lengths"], d["causal"], out])
    out = out.reshape(n, k, size)
    for i in range(n):
        visible = set(token_support(topk[i], size, int(d["lengths"][i]), int(d["causal"][i])))
        for c in range(k):
            page = int(topk[i, c])
            first = page >= 0 and page not in topk[i, :c]
            for o in range(size):
                token = page * size + o
                want = token if first and token in visible else -1
                if out[i, c, o] != want:
                    return (f"query {i} (S_i = {page_set(sorted(set(topk[i][topk[i] >= 0])))}, "
                            f"L_i = {d['lengths'][i]}, c_i = {d['causal'][i]}), thread "
                            f"{c * size + o} (entry {c} = page {page}, offset {o}): "
                            f"wrote {written(out[i, c, o])}, expected {want} — "
                            f"{_token_reason(page, first, token, d['lengths'][i], d['causal'][i])}"
                            f"\n{_visible_diagram(out[i], topk[i], size, visible)}")
    return None


def _visible_diagram(out: np.ndarray, row: np.ndarray, size: int, visible: set) -> str:
    """One line per Top-K entry: what each thread wrote (#: a token, .: -1, ?: neither) beside
    the expected."""
    lines = ["entry page  yours" + " " * (size - 3) + "expected   (#: a token of A_i, .: -1, "
             "?: anything else)"]
    for c, page in enumerate(row):
        first = page >= 0 and page not in row[:c]
        yours = "".join("#" if v >= 0 else "." if v == -1 else "?" for v in out[c])
        want = "".join("#" if first and page * size + o in visible else "."
                       for o in range(size))
        lines.append(f"{c:>5} {int(page):>4}  {yours}  {want}")
    return "\n".join(lines)


VISIBLE_TOKENS = Puzzle(1, "a query's visible tokens A_i", VISIBLE, VISIBLE_STARTER,
                        "p1_visible_tokens.cu", _visible_cases, _visible_run,
                        ("union8.cu", "stage-wait"))

# ---- Puzzle 2: a window's bitmaps and popcount(b & ~u), one warp --------------------------------

WORDS = 4  # B = 128 pages: 4 uint32 words per bitmap
BITMAP_PRELUDE = f"#define PW_WORDS {WORDS}  // uint32 words per bitmap (B = {32 * WORDS})\n"
BITMAP_STARTER = f"""\
// One warp: lane j < n owns query j of the window (n <= 32; topk, bits and delta hold n rows,
// and lanes j >= n own no query: they read and write nothing). Build S_j's bitmap (bit p % 32
// of word p / 32 for every selected page p >= 0 in topk[j * k .. j * k + k - 1], pages < 32 *
// PW_WORDS) and write it to bits[j * PW_WORDS + w]; then delta[j] = sum over w of
// popcount(bits_j[w] & ~u[w]), the pages of S_j not yet in the group's union U.
__global__ void window_bitmaps(const int* topk, int n, int k, const unsigned* u,
                               unsigned* bits, int* delta) {{
  // {TODO}
}}
"""
BITMAPS = Kernel("window_bitmaps", (("const int*", "topk"), ("int", "n"), ("int", "k"),
                                    ("const unsigned*", "u"), ("unsigned*", "bits"),
                                    ("int*", "delta")), prelude=BITMAP_PRELUDE)


def _bitmap_cases(rng: np.random.Generator) -> list[Case]:
    def make(name, topk, union_rows):
        topk = np.asarray(topk, dtype=np.int32)
        u = np.bitwise_or.reduce(encode_bitmaps(topk[union_rows], 32 * WORDS), axis=0) \
            if len(union_rows) else np.zeros(WORDS, np.uint32)
        return Case(name, {"topk": topk, "u": u.astype(np.uint32)})

    cases = []
    for _ in range(3):
        n = int(rng.integers(2, 33))
        topk = rng.integers(-1, 32 * WORDS, size=(n, 8))
        cases.append(make(f"random window of {n}", topk, rng.choice(n, 2, replace=False)))
    edges = np.array([[0, 31, 32, 63, 64, 95, 96, 127]] * 32)
    cases.append(make("full warp, word boundaries", edges, [0]))
    cases.append(make("empty supports and duplicates", [[-1] * 8, [5, 5, 5, -1, 40, 40, 2, 2]],
                      []))
    return cases


def _bitmap_run(launch, case: Case) -> str | None:
    topk, u = case.data["topk"], case.data["u"]
    n, k = topk.shape
    bits = np.full(32 * WORDS, 0xDEADBEEF, dtype=np.uint32)
    delta = np.full(32, UNWRITTEN, dtype=np.int32)
    # rows past n hold pages too, so that a lane j >= n that reads them writes something
    padded = np.r_[topk, np.arange(k)[None, :].repeat(32 - n, axis=0)].astype(np.int32)
    launch(1, 32, [padded.ravel(), n, k, u, bits, delta])
    past = [j for j in range(n, 32)
            if delta[j] != UNWRITTEN or np.any(bits[j * WORDS:(j + 1) * WORDS] != 0xDEADBEEF)]
    if past:
        return (f"lane {past[0]} wrote bits[{past[0] * WORDS}..{past[0] * WORDS + WORDS - 1}] or "
                f"delta[{past[0]}], but the window has n = {n} queries: lanes j >= n own no query "
                f"(they would read topk past its n rows and write over the next window's)")
    want_bits = encode_bitmaps(topk, 32 * WORDS)
    want_delta = popcount_delta(want_bits, u)
    got = bits.reshape(32, WORDS)[:n]
    for j in range(n):
        for w in range(WORDS):
            if got[j, w] != want_bits[j, w]:
                return (f"query {j} (S_j = {page_set(decode_bitmap(want_bits[j]))}): bitmap word "
                        f"{w} = 0x{int(got[j, w]):08x} (pages "
                        f"{page_set(32 * w + decode_bitmap([got[j, w]]))}), expected "
                        f"0x{int(want_bits[j, w]):08x} (pages "
                        f"{page_set(32 * w + decode_bitmap([want_bits[j, w]]))})")
        if delta[j] != want_delta[j]:
            new = decode_bitmap(want_bits[j] & ~u)
            return (f"query {j}: delta = {written(delta[j])}, expected popcount(b & ~u) summed "
                    f"over the words = {want_delta[j]}: the pages {page_set(new)} of S_j are not "
                    f"in U = {page_set(decode_bitmap(u))}")
    return None


BITMAP_DELTAS = Puzzle(2, "a window's bitmaps and popcount(b & ~u)", BITMAPS, BITMAP_STARTER,
                       "p2_window_bitmaps.cu", _bitmap_cases, _bitmap_run,
                       ("regroup.cu", "greedy-round"))
