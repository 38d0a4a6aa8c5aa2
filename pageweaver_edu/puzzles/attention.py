"""Puzzles 6 and 8: the online-softmax step of one page, and a mini Union kernel of 8 queries.

Both are checked against :func:`pageweaver_edu.core.attention.reference_attention` (float64)
with the groups of :func:`pageweaver_edu.core.union_plan.prepare_unions`.
"""

from __future__ import annotations

import numpy as np

from ..core.attention import reference_attention
from ..core.supports import canonical_rows
from ..core.union_plan import prepare_unions
from .checks import TODO, UNWRITTEN, Case, Puzzle, page_set
from .engine import Kernel

PAGE, DIM, POOL = 32, 32, 12  # tokens per page (one per lane), head dim (one per lane), pages
TOLERANCE = 2e-5  # float32 against float64, relative to max(1, |reference|)

SOFTMAX_STARTER = f"""\
// One warp, one query row, one page of 32 tokens. Lane e holds x = the score of the page's
// token e in log2 units (q.k * scale / ln 2), -INFINITY where the token is masked (causal or
// length); lane d holds o = the running output O[d] (not yet divided by l); every lane holds
// the running max m and sum l. v[e * 32 + d] is V of token e. Fold the page into (m, l, o):
//   m' = max(m, max_e x_e)   alpha = 2^(m - m')   p_e = 2^(x_e - m')
//   l = l * alpha + sum_e p_e     o = o * alpha + sum_e p_e v[e][d]      m = m'
// A page may be partly or wholly masked (and m starts at -INFINITY): never produce a NaN.
__device__ void softmax_page(float x, const float* v, float& m, float& l, float& o) {{
  // {TODO}
}}
"""

SOFTMAX_HARNESS = """\
// One block per query: lane t scores token t of each selected page, the reader folds it in.
__global__ void attend_pages(const float* q, const float* k, const float* v, const int* pages,
                             int kpages, const int* limits, float scale_log2, float* out,
                             float* trace) {
  const int i = blockIdx.x, lane = threadIdx.x;
  float m = -INFINITY, l = 0.f, o = 0.f;
  for (int j = 0; j < kpages; ++j) {
    const int page = pages[i * kpages + j];
    if (page < 0) continue;
    float s = 0.f;
    for (int d = 0; d < 32; ++d) s += q[i * 32 + d] * k[(page * 32 + lane) * 32 + d];
    const int token = page * 32 + lane;
    const float x = token < limits[i] ? s * scale_log2 : -INFINITY;
    softmax_page(x, v + page * 32 * 32, m, l, o);
    if (lane == 0) {
      trace[(i * kpages + j) * 2] = m;
      trace[(i * kpages + j) * 2 + 1] = l;
    }
  }
  out[i * 32 + lane] = l > 0.f ? o / l : 0.f;
}
"""
SOFTMAX = Kernel("attend_pages", (("const float*", "q"), ("const float*", "k"),
                                  ("const float*", "v"), ("const int*", "pages"),
                                  ("int", "kpages"), ("const int*", "limits"),
                                  ("float", "scale_log2"), ("float*", "out"),
                                  ("float*", "trace")), harness=SOFTMAX_HARNESS)


def _attention_case(name: str, rng: np.random.Generator, topk, limits) -> Case:
    n = len(topk)
    return Case(name, {"q": rng.standard_normal((n, DIM)).astype(np.float32),
                       "k": rng.standard_normal((POOL, PAGE, DIM)).astype(np.float32),
                       "v": rng.standard_normal((POOL, PAGE, DIM)).astype(np.float32),
                       "topk": np.asarray(topk, np.int32),
                       "limits": np.asarray(limits, np.int32)})


def _softmax_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for r in range(2):
        topk = rng.integers(-1, POOL, size=(4, 4))
        cases.append(_attention_case(f"random {r + 1}", rng, topk,
                                     rng.integers(PAGE, PAGE * POOL, 4)))
    cases.append(_attention_case("a wholly masked first page, then a partial one", rng,
                                 [[9, 1, 2], [11, 3, -1]], [2 * PAGE + 5, 3 * PAGE + 1]))
    cases.append(_attention_case("empty support and no visible token", rng,
                                 [[-1, -1], [6, 7]], [PAGE * POOL, 3]))
    grows = _attention_case("the running max grows on the last page", rng, [[1, 4, 8]],
                            [PAGE * POOL])
    grows.data["k"][8, 3] = grows.data["q"][0]  # token 3 of page 8 scores |q|^2: the max
    return cases + [grows]


def reference_rows(case: Case) -> np.ndarray:
    """float64 attention of every query of the case, ``[N, DIM]``."""
    d = case.data
    out = reference_attention(d["q"][:, None, :], d["k"], d["v"], d["topk"],
                              lengths=d["limits"], scale=1.0 / np.sqrt(DIM))
    return out[:, 0, :]


def _scale_log2() -> float:
    return float(np.float32(1.0 / np.sqrt(DIM)) * np.float32(np.log2(np.e)))


def first_bad_row(out: np.ndarray, want: np.ndarray) -> tuple[int, int] | None:
    """(row, dim) of the first value off by more than :data:`TOLERANCE` (NaN counts)."""
    err = np.abs(out.astype(np.float64) - want) / np.maximum(1.0, np.abs(want))
    bad = np.argwhere(~(err <= TOLERANCE))
    return (int(bad[0][0]), int(bad[0][1])) if len(bad) else None


def _softmax_run(launch, case: Case) -> str | None:
    d = case.data
    rows = canonical_rows(d["topk"]).astype(np.int32)
    n, kp = rows.shape
    out = np.full((n, DIM), np.nan, np.float32)
    trace = np.full((n, kp, 2), np.nan, np.float32)
    launch(n, 32, [d["q"], d["k"], d["v"], rows, kp, d["limits"], _scale_log2(), out, trace])
    want = reference_rows(case)
    nan = np.argwhere(np.isnan(trace) & (rows >= 0)[:, :, None])
    bad = first_bad_row(out, want)
    if bad is None and not len(nan):
        return None
    if len(nan):  # the state went NaN: say so first, even where the output hides it as 0
        i, j = int(nan[0][0]), int(nan[0][1])
        head = (f"your (m, l) became NaN on page {rows[i, j]}: the state must stay a number on "
                f"every page, a wholly masked one and a first page with m = -inf included")
    else:
        i, dim = bad
        head = (f"O[{dim}] = {float(out[i, dim]):.7g}, expected {want[i, dim]:.7g} (float64 "
                f"reference)")
    lines = [f"query {i} (S_i = {page_set(rows[i][rows[i] >= 0])}, visible tokens < "
             f"{d['limits'][i]}): {head}; your (m, l) after each page:"]
    for j in range(kp):
        if rows[i, j] >= 0:
            first = rows[i, j] * PAGE
            vis = int(np.clip(d["limits"][i] - first, 0, PAGE))
            m, lsum = (float(t) for t in trace[i, j])
            lines.append(f"  page {rows[i, j]} (tokens {first}-{first + PAGE - 1}, {vis} "
                         f"visible): m = {m:.7g}, l = {lsum:.7g}")
    return "\n".join(lines)


SOFTMAX_STEP = Puzzle(6, "the online-softmax step of one page", SOFTMAX, SOFTMAX_STARTER,
                      "p6_softmax_page.cu", _softmax_cases, _softmax_run,
                      ("union8.cu", "online-softmax"))

# ---- Puzzle 8: a mini Union kernel -------------------------------------------------------------

UNION_STARTER = f"""\
// One group of `size` <= 8 queries over its union U_G, 256 threads: warp r runs member
// position r, the original query i = perm[r] (π[r]); warps r >= size have no query and
// write nothing. pages[x] (x < n_pages) is U_G in ascending order, masks[x] its membership
// byte (bit r: position r selects the page). q[i * 32 + d], k / v[(page * 32 + e) * 32 + d]
// (32 tokens per page, head dim 32); token e of a page is visible to query i when
// page * 32 + e < limits[i]. Walk U_G, skip the pages your position does not select, fold each
// page into the online softmax (lane e scores token e, lane d owns O[d]), and write
// out[perm[r] * 32 + d] = O[d] / l (0 for a query that sees no token).
__global__ void union_group(const float* q, const float* k, const float* v, const int* pages,
                            const unsigned char* masks, int n_pages, const int* perm, int size,
                            const int* limits, float scale_log2, float* out) {{
  // {TODO}
}}
"""
UNION = Kernel("union_group", (("const float*", "q"), ("const float*", "k"),
                               ("const float*", "v"), ("const int*", "pages"),
                               ("const unsigned char*", "masks"), ("int", "n_pages"),
                               ("const int*", "perm"), ("int", "size"),
                               ("const int*", "limits"), ("float", "scale_log2"),
                               ("float*", "out")))


def _union_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for r in range(2):
        pool = rng.choice(POOL, 6, replace=False)  # shared pages: a real union
        topk = rng.choice(np.r_[pool, -1], size=(8, 3))
        case = _attention_case(f"random group {r + 1}", rng, topk,
                               rng.integers(PAGE, PAGE * POOL, 8))
        case.data["perm"] = rng.permutation(8).astype(np.int32)
        cases.append(case)
    small = _attention_case("5 queries, empty supports, masked pages", rng,
                            [[-1, -1], [4, 5], [5, 4], [-1, 0], [11, 10]],
                            [PAGE * POOL, 4 * PAGE + 1, 5 * PAGE, 0, 11 * PAGE + 31])
    small.data["perm"] = np.array([3, 0, 4, 1, 2], np.int32)
    return cases + [small]


def _union_run(launch, case: Case) -> str | None:
    d = case.data
    n = len(d["topk"])
    plan = prepare_unions(d["topk"], d["perm"], group=8)
    pages, masks = plan.group_pages(0)
    # Rows n .. 7 of perm, q, limits and out exist, so that a warp r >= size that goes on
    # reads in bounds and its write shows in an output row no query owns.
    perm = np.r_[plan.perm, np.arange(n, 8)].astype(np.int32)
    q = np.r_[d["q"], np.ones((8 - n, DIM), np.float32)]
    limits = np.r_[d["limits"], np.full(8 - n, PAGE * POOL)].astype(np.int32)
    out = np.full((8, DIM), UNWRITTEN, np.float32)
    launch(1, 256, [q, d["k"], d["v"], pages.astype(np.int32).copy(),
                    masks.astype(np.uint8).copy(), len(pages), perm, n, limits,
                    _scale_log2(), out])
    extra = [r for r in range(n, 8) if np.any(out[r] != UNWRITTEN)]
    if extra:
        return (f"warp {extra[0]} (r >= size = {n}) went on and wrote an output row: warps "
                f"r >= size have no query (perm, q and limits have size rows, so such a warp "
                f"reads past them and writes where no query's row is)")
    want = reference_rows(case)
    bad = first_bad_row(out[:n], want)
    if bad is None:
        return None
    i, dim = bad
    r = int(np.flatnonzero(plan.perm == i)[0])
    mine = pages[(masks >> r) & 1 == 1]
    state = "was never written" if np.all(out[i] == UNWRITTEN) else \
        f"O[{dim}] = {float(out[i, dim]):.7g}, expected {want[i, dim]:.7g} (float64 reference)"
    return (f"row {i} (member position {r}, perm[{r}] = {i}; its pages "
            f"{page_set(mine)} of U_G = {page_set(pages)}, visible tokens < "
            f"{d['limits'][i]}): {state}")


UNION_KERNEL = Puzzle(8, "a mini Union kernel", UNION, UNION_STARTER, "p8_union_group.cu",
                      _union_cases, _union_run, ("union8ws_ring.cuh", "ws-consumer-walk"))
