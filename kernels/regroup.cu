// Greedy regroup, GPU form (docs/definitions.md#regroup-on-a-gpu; arXiv:2610.11201, Algorithm 1).
//
// One CTA per window of W consecutive queries of one (request, chunk); windows of every
// chunk, request and KV head run in parallel (grid = [windows, heads]). Inside a window the
// rule is the CPU reference's, bit for bit:
//   R = unassigned local ids; repeat: seed = min(R), G = [seed], U_G = S_seed;
//   while |G| < g and R non-empty: j* = argmin_{j in R} (|S_j \ U_G|, j); U_G |= S_j*.
// The output is π only: position r runs original query π[r]. Q is never touched.
// A window is W dependent rounds (one per position), so its time is a fixed part (loads, build,
// epilogue) plus W x the latency of one round: the two families below attack that round.
//
// Family "bits" (the paper's GPU form, any K; kernels regroup_bits_t<W>): one thread per
// query; each S_i is a 512-page bitmap of 16 uint32 words in the registers of its thread and
// in a shared row (for the broadcast of S_j*). Each candidate keeps delta_j = |S_j \ U_G|:
//   key_j = delta_j << 8 | j   (lexicographic (delta, id); ids < 256)
//   warp winner: one redux.sync min; CTA winner: each warp's lane 0 writes its key to a
//   double-buffered shared word, ONE __syncthreads, every thread takes the min of the words;
//   update: fresh = S_j* & ~U_G; U_G |= S_j*; delta_j -= Σ_w popcount(bits_j[w] & fresh[w]).
// A round is 16 popcounts per thread (the POPC pipe runs at 1/8 of the warp rate) plus the
// chain redux → bar.sync → shared loads → update.
//
// Family "pairs" (K <= 16, W <= 128; kernels regroup_pairs_w<W>): the CTA first builds, for
// every ordered pair of window queries (j, i), the 16-bit mask M[j][i] of S_i's Top-K slots
// k whose page S_j also selects. Then ONE warp runs all W rounds without a barrier: lane l
// holds candidates i = l + 32q and keeps live_i = S_i's slots not yet in U_G:
//   seed s : live_i = all_i & ~M[s][i]      pick j* : live_i &= ~M[j*][i]
//   delta_i = popcount(live_i); j* = redux.sync min over (delta_i << 22) + tie_i, where
//   tie_i = i << 15 | row(i) orders by id and carries the byte offset of i's row in M, so
//   the winner's key gives every lane its next load address with one LOP3 (see pair_tie)
// A round is Q shared loads, ANDs and popcounts (Q = candidates per lane) and one redux;
// the lane's candidates are compacted (Q 4 → 3 → 2 → 1) as they leave R. For g = 8 a group's
// eight rounds run unrolled and its seed needs no redux (see pair_rounds). A round's chain is
// redux.sync, a move, one LOP3, one shared load, a popcount and a few ALU steps (what each
// costs on the H200: benchmarks/bench_gpu_regroup_notes.md).
// M is built without a pair loop: C_p = the W-bit column of window queries selecting page p
// (shared, one atomicOr per edge); thread i gathers C_{p_k} of its own slots k (a 16 x W
// bit matrix, one 8- or 16-byte load per slot) and transposes it in registers, 16 x 16 bits
// at a time (a byte permute and three masked shift stages), into M[·][i]; each transposed
// word holds two rows of M and is stored as it is (M is kept as row pairs).
//
// Capacity fallback (docs/definitions.md#capacity-fallback), decided on the GPU without a host
// sync: a window that sees a valid page id >= B (or a length L_i > B·P) writes the identity;
// the windows of a multi-window chunk meet in two 64-bit words of global scratch per (head,
// chunk), which the launcher zeroes on the launch's stream before every launch:
//   arrived += 1 | flagged << 32 once per window, right after its build; while the rounds
//   run, an idle warp of the CTA polls `arrived` until all windows are in.
// At the end a window is "clean" when all windows arrived and none is flagged: its π is final
// and it stores it with no fence and no global atomic (the common case: one wave). Otherwise
// (flagged, or some window still missing) it stores π or the identity, fences and counts
// itself in `finished`; the window that makes `finished` complete rewrites the whole chunk
// with the identity if any window was flagged. A clean window exists only when no window is
// flagged, so `finished` may stay short of complete exactly when no rewrite is due.
// Ids >= B never index a bitmap or a column: they only raise the flag.
#include "cluster_pipeline.cuh"
#include "pageweaver_common.cuh"
#include "union_emit.cuh"

#include <stdint.h>

#ifdef PW_PHASE_CLOCKS
// Benchmark-only instrumentation (benchmarks/bench_gpu_regroup.py, phase table): thread 0
// of every CTA stores clock64() at each phase boundary: 0 entry, 1 own ids range-checked,
// 2 page columns C_p complete, 3 pair masks M complete, 4 rounds done, 5 epilogue done.
constexpr int kPhases = 6;
extern "C" {
__device__ long long pw_phase_cycles[kPhases * 65536];
}
#define PW_PHASE(p)                                                                        \
  if (threadIdx.x == 0)                                                                    \
  pw_phase_cycles[(blockIdx.y * gridDim.x + blockIdx.x) * kPhases + (p)] = clock64()
#else
#define PW_PHASE(p)
#endif

namespace pageweaver {
namespace regroup {

constexpr int kRowStride = 20;  // words per shared bitmap row: 16 + 4 pad (conflict-free 128-bit loads)

struct Args {
  const int* __restrict__ topk;         // [H, N, K] int32 page ids, < 0 = padding
  const long long* __restrict__ lengths;  // [N] L_i or nullptr (shared by all heads)
  const int4* __restrict__ windows;     // [M] (start, size, chunk, 0), head-local rows
  const int4* __restrict__ chunks;      // [C] (start, size, number of windows, 0)
  int* __restrict__ perm;               // [H, N] π, head-local ids
  unsigned long long* __restrict__ scratch;  // [H, C, 2] (arrived, finished), zeroed per launch
  long long len_limit;                  // B·P: L_i above it needs more than B pages
  int n;                                // N rows per head
  int k;                                // K ids per row
  int num_chunks;                       // C
  int group;                            // g
  int capacity;                         // B <= 512
  int uniform;                          // W when window m is rows [m·W, min((m+1)·W, N)) of
                                        // one chunk holding every row (no table loads), else 0
};

// π[start + r] = start + local[r] for r < size (the identity when local is nullptr).
__device__ __forceinline__ void store_perm(int* perm, int start, int size, const int* local) {
  for (int r = threadIdx.x; r < size; r += blockDim.x)
    perm[start + r] = start + (local != nullptr ? local[r] : r);
}

// Family "bits": loads the window's ids (16-byte loads when K % 4 == 0, four in flight per
// thread), sets the bits of S_i in the shared rows and reports whether any id or length
// needs the capacity fallback.
template <int NT>
__device__ __forceinline__ bool build_rows(const Args& a, const int* rows, int start, int size,
                                          uint32_t* sm_rows) {
  constexpr int kInFlight = 4;  // independent loads issued before the first use
  const int tid = threadIdx.x;
  // L_i of the owned query, loaded first (consumed last)
  const long long len = (a.lengths != nullptr && tid < size) ? __ldg(a.lengths + start + tid) : 0;
  bool over = len > a.len_limit;
  auto add = [&](int p, int r) {
    if (p < 0) return;
    if (p >= a.capacity) {
      over = true;  // never indexes a bitmap
    } else {
      atomicOr(sm_rows + r * kRowStride + (p >> 5), 1u << (p & 31));
    }
  };
  const int total = size * a.k;
  if ((a.k & 3) == 0) {
    const int4* rows4 = reinterpret_cast<const int4*>(rows);
    const int total4 = total >> 2;
    for (int base = 0; base < total4; base += kInFlight * NT) {
      int4 v[kInFlight];
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        const int e = base + i * NT + tid;
        v[i] = e < total4 ? __ldg(rows4 + e) : make_int4(-1, -1, -1, -1);
      }
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        const int e = base + i * NT + tid;
        if (e < total4) {
          const int r = (4 * e) / a.k;
          add(v[i].x, r);
          add(v[i].y, r);
          add(v[i].z, r);
          add(v[i].w, r);
        }
      }
    }
  } else {
    for (int base = 0; base < total; base += kInFlight * NT) {
      int v[kInFlight];
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        const int e = base + i * NT + tid;
        v[i] = e < total ? __ldg(rows + e) : -1;
      }
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        const int e = base + i * NT + tid;
        if (e < total) add(v[i], e / a.k);
      }
    }
  }
  return __syncthreads_or(over) != 0;
}

// Clear bit `id` of the W-bit mask R (branch-free selects: R stays in registers).
template <int RW>
__device__ __forceinline__ void clear_bit(uint32_t (&R)[RW], int id) {
  const uint32_t keep = ~(1u << (id & 31));
#pragma unroll
  for (int w = 0; w < RW; ++w) R[w] &= ((id >> 5) == w) ? keep : 0xffffffffu;
}

template <int RW>
__device__ __forceinline__ int lowest_bit(const uint32_t (&R)[RW]) {
  int id = -1;
#pragma unroll
  for (int w = RW - 1; w >= 0; --w)
    if (R[w] != 0u) id = 32 * w + __ffs(R[w]) - 1;
  return id;
}

template <int RW>
__device__ __forceinline__ void init_remaining(uint32_t (&R)[RW], int size) {
#pragma unroll
  for (int w = 0; w < RW; ++w) {
    const int left = size - 32 * w;
    R[w] = left >= 32 ? 0xffffffffu : (left > 0 ? (1u << left) - 1u : 0u);
  }
}

__device__ __forceinline__ void load_row(const uint32_t* sm_bits, int id, uint32_t (&S)[kBitmapWords]) {
  const uint4* row = reinterpret_cast<const uint4*>(sm_bits + id * kRowStride);
#pragma unroll
  for (int v = 0; v < kBitmapWords / 4; ++v) {
    const uint4 x = row[v];
    S[4 * v + 0] = x.x;
    S[4 * v + 1] = x.y;
    S[4 * v + 2] = x.z;
    S[4 * v + 3] = x.w;
  }
}

// region: winner-pick
// CTA-wide min of a (delta << 8 | id) key: redux.sync inside each warp, then (with several
// warps) one shared word per warp, ONE __syncthreads, and every thread reads all words.
// The words are double-buffered by `parity`, so round r+1's barrier protects round r's reads.
template <int NT>
__device__ __forceinline__ unsigned cta_min(unsigned key, unsigned* sm_key, int& parity) {
  constexpr int NWARP = NT / 32;
  key = __reduce_min_sync(0xffffffffu, key);
  if constexpr (NWARP > 1) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sm_key[parity * NWARP + warp] = key;
    __syncthreads();
    const unsigned* keys = sm_key + parity * NWARP;
    if constexpr (NWARP % 4 == 0) {
#pragma unroll
      for (int v = 0; v < NWARP / 4; ++v) {
        const uint4 k4 = reinterpret_cast<const uint4*>(keys)[v];
        key = min(min(key, k4.x), min(k4.y, min(k4.z, k4.w)));
      }
    } else {
#pragma unroll
      for (int v = 0; v < NWARP; ++v) key = min(key, keys[v]);
    }
    parity ^= 1;
  }
  return key;
}
// endregion: winner-pick

// The greedy of one window (size <= NT), one thread per query; thread 0 writes the local π.
// Every candidate keeps S_j and delta_j = |S_j \ U_G| in registers; the seed is min(R), which
// every thread knows from its copy of the W-bit mask R without any communication.
template <int NT>
__device__ __forceinline__ void greedy_bits(const Args& a, int* sm_perm, int size,
                                            const uint32_t* sm_bits, unsigned* sm_key) {
  constexpr int RW = (NT + 31) / 32;
  const int tid = threadIdx.x;
  uint32_t bits[kBitmapWords];  // S_j of this thread's query j = tid
  load_row(sm_bits, tid, bits);
  bool alive = tid < size;      // j still in R
  int delta = 0;
  uint32_t R[RW];
  init_remaining(R, size);
  uint32_t U[kBitmapWords];  // U_G, identical in every thread
  int slot = 0, parity = 0;
  // region: greedy-round
  while (slot < size) {
    const int seed = lowest_bit(R);
    clear_bit(R, seed);
    if (tid == 0) sm_perm[slot] = seed;
    alive = alive && tid != seed;
    ++slot;
    load_row(sm_bits, seed, U);
    delta = 0;
#pragma unroll
    for (int w = 0; w < kBitmapWords; ++w) delta += __popc(bits[w] & ~U[w]);
    for (int members = 1; members < a.group && slot < size;) {
      unsigned key = alive ? (static_cast<unsigned>(delta) << 8) | tid : 0xffffffffu;
      key = cta_min<NT>(key, sm_key, parity);
      const int j = static_cast<int>(key & 0xffu);
      if (tid == 0) sm_perm[slot] = j;
      alive = alive && tid != j;
      clear_bit(R, j);
      ++slot;
      ++members;
      if (members == a.group || slot == size) break;  // U_G resets: no update needed
      uint32_t S[kBitmapWords];
      load_row(sm_bits, j, S);
#pragma unroll
      for (int w = 0; w < kBitmapWords; ++w) {
        const uint32_t fresh = S[w] & ~U[w];  // pages j* adds to U_G
        U[w] |= S[w];
        delta -= __popc(bits[w] & fresh);
      }
    }
  }
  // endregion: greedy-round
}

// ---- Family "pairs" (K <= 16, W <= 128): see the file comment.
constexpr int kPairSlots = 16;  // Top-K slots per query a 16-bit pair mask can name

// A candidate's key is (delta << kDeltaShift) + tie with tie = (j << kIdShift) | row(j):
// ordered as (delta, j), and its low kIdShift bits are row(j), the byte offset of M[j][0]
// in M. M is stored as row pairs: 32-bit word (16w + t)·W + i holds M[32w + t][i] in its low
// half and M[32w + 16 + t][i] in its high half (thread i's transposed words, stored as they
// are), so row(j) = (16w + t)·4W + 2h for j = 32w + 16h + t, and M[j][i] is the 16-bit value
// at byte row(j) + 4i. row(j) only sets bit 1 and bits from log2(4W) up, 4i only the bits in
// between, so lane i's offset is (key & kRowMask) | 4i: one LOP3 after the reduction (the
// shared base of M rides in the load). A candidate that left R has tie kDeadTie, above every
// live key (delta <= 16, no overflow).
constexpr int kIdShift = 15;                            // row(j) < 2·128² bytes = 32 KiB
constexpr int kDeltaShift = 22;                         // j < 128
constexpr unsigned kRowMask = (1u << kIdShift) - 1u;
constexpr unsigned kTieMask = (1u << kDeltaShift) - 1u;
constexpr unsigned kDeadTie = 1u << 30;
constexpr unsigned kNoSeed = 0xffffffffu;  // the next group's seed is not known yet

// Where query i sits in a page column C_p (CW = W/32 words): word c(i), bit b(i), returned as
// 32·c(i) + b(i), a permutation of [0, W). The 32 lanes of warp w = i / 32 fill all CW words,
// 32 / CW lanes each (c(i) = (w + i / (32/CW)) mod CW), so a warp's atomicOr into the columns of
// its pages spreads over every bank instead of the 32 / CW banks that word w of each column
// maps to (Top-K rows are sorted by page id, so the pages of one slot are close together).
template <int W>
__host__ __device__ constexpr int col_pos(int i) {
  constexpr int CW = W / 32, lanes = 32 / CW;
  return 32 * (((i >> 5) + i / lanes) & (CW - 1)) + (i >> 5) * lanes + i % lanes;
}

// row(j) is the byte offset of the row of M at column position r = col_pos(j) (see above).
template <int W>
__host__ __device__ constexpr unsigned pair_tie(int j) {
  const int r = col_pos<W>(j);
  return (static_cast<unsigned>(j) << kIdShift) |
         static_cast<unsigned>((16 * (r >> 5) + (r & 15)) * 4 * W + 2 * ((r >> 4) & 1));
}

template <int W>
struct PairsShared {
  static constexpr int CW = W / 32;                 // words of a page column C_p
  uint32_t pairs[W * W / 2];                        // M as row pairs (see pair_tie); first
  uint32_t cols[kBitmapCapacity * CW + 4];          // C_p (query i at col_pos(i)), then a
                                                    // zero column for unused slots
  uint32_t all[W];                                  // all_i: S_i's valid, distinct slots
  int perm[W];                                      // local π of the window
  uint4 moved[W];                                   // candidates in flight during a compaction
};

// Bits of `if_set` where `mask` is set, else bits of `if_clear`: one LOP3 (ptxas splits the
// C++ form (a & ~m) | (b & m) into two when an operand is reused).
__device__ __forceinline__ uint32_t bit_select(uint32_t mask, uint32_t if_set, uint32_t if_clear) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xCA;" : "=r"(r) : "r"(mask), "r"(if_set), "r"(if_clear));
  return r;
}

// In-register transpose of two 16 x 16 bit blocks held side by side in 16 words: afterwards
// bit k of the low (high) half of x[t] is bit t (16 + t) of the original x[k]. Stage s swaps
// the s x s sub-blocks off the diagonal: s = 8 moves whole bytes (two PRMTs per word pair),
// s = 4, 2, 1 are bit-field selects (per word one shift and one LOP3; the left shifts compile
// to IMAD.SHL on the FMA pipe, so the integer pipe, the build's bottleneck, takes 3 of a
// pair's 4 instructions). A shifted bit never crosses into the other half.
__device__ __forceinline__ void transpose_16x16x2(uint32_t (&x)[kPairSlots]) {
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const uint32_t lo = x[k], hi = x[k + 8];
    x[k] = __byte_perm(lo, hi, 0x6240);      // bytes (lo.0, hi.0, lo.2, hi.2)
    x[k + 8] = __byte_perm(lo, hi, 0x7351);  // bytes (lo.1, hi.1, lo.3, hi.3)
  }
  constexpr uint32_t kMask[3] = {0x0F0F0F0Fu, 0x33333333u, 0x55555555u};
#pragma unroll
  for (int stage = 0; stage < 3; ++stage) {
    const int s = 4 >> stage;
    const uint32_t m = kMask[stage];
#pragma unroll
    for (int k = 0; k < kPairSlots; ++k) {
      if (k & s) continue;
      const uint32_t lo = x[k], hi = x[k + s];
      x[k] = bit_select(m << s, hi << s, lo);
      x[k + s] = bit_select(m, lo >> s, hi);
    }
  }
}

// Starts the loads of query i's Top-K row (K <= 16) into p (-1 past K or for no query).
__device__ __forceinline__ void load_own_ids(const Args& a, const int* row, bool present,
                                             int (&p)[kPairSlots]) {
  if (present && (a.k & 3) == 0) {
    const int4* row4 = reinterpret_cast<const int4*>(row);
#pragma unroll
    for (int v = 0; v < kPairSlots / 4; ++v) {
      const int4 x = 4 * v < a.k ? __ldg(row4 + v) : make_int4(-1, -1, -1, -1);
      p[4 * v] = x.x;
      p[4 * v + 1] = x.y;
      p[4 * v + 2] = x.z;
      p[4 * v + 3] = x.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kPairSlots; ++k) p[k] = present && k < a.k ? __ldg(row + k) : -1;
  }
}

// The slots holding a page id 0 <= id < B; `over` is raised by an id >= B.
__device__ __forceinline__ uint32_t in_range_slots(const Args& a, const int (&p)[kPairSlots],
                                                   bool& over) {
  uint32_t used = 0u;
#pragma unroll
  for (int k = 0; k < kPairSlots; ++k) {
    over = over || p[k] >= a.capacity;
    used |= static_cast<uint32_t>(p[k] >= 0 && p[k] < a.capacity) << k;
  }
  return used;
}

// all_i: the slots of `used` whose id no earlier slot holds (first occurrences). Rows whose
// used ids strictly increase (Top-K lists sorted by page id, as in the captures and presets
// here) have no repeat: 16 compares instead of 120.
__device__ __forceinline__ uint32_t first_slots(const int (&p)[kPairSlots], uint32_t used) {
  bool ascending = true;
  int last = -1;
#pragma unroll
  for (int k = 0; k < kPairSlots; ++k) {
    const bool u = (used >> k) & 1u;
    ascending = ascending && (!u || p[k] > last);
    last = u ? p[k] : last;
  }
  if (ascending) return used;
  uint32_t first = used;
#pragma unroll
  for (int k = 1; k < kPairSlots; ++k) {
    bool repeat = false;
#pragma unroll
    for (int m = 0; m < k; ++m) repeat = repeat || p[m] == p[k];
    first &= repeat ? ~(1u << k) : ~0u;
  }
  return first;
}

// Column C_p of one page, all CW words in one shared load (8 or 16 bytes for W = 64, 128).
template <int CW>
__device__ __forceinline__ void load_column(const uint32_t* col, uint32_t (&x)[CW]) {
  if constexpr (CW == 4) {
    const uint4 v = *reinterpret_cast<const uint4*>(col);
    x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
  } else if constexpr (CW == 2) {
    const uint2 v = *reinterpret_cast<const uint2*>(col);
    x[0] = v.x, x[1] = v.y;
  } else {
    x[0] = *col;
  }
}

// Builds C_p and M for the window (one thread per query) and reports the capacity fallback.
// `while_loading()` runs in every thread while its ids are in flight (the fused plan's
// barrier inits); NoWork for the regroup alone.
struct NoWork {
  __device__ __forceinline__ void operator()() const {}
};
template <int W, class WhileLoading = NoWork>
__device__ __forceinline__ bool build_pairs(const Args& a, const int* rows, int start, int size,
                                            PairsShared<W>& sm,
                                            const WhileLoading& while_loading = WhileLoading()) {
  constexpr int CW = PairsShared<W>::CW;
  const int i = threadIdx.x;
  const bool present = i < size;
  int p[kPairSlots];
  load_own_ids(a, rows + i * a.k, present, p);
  const long long len = (a.lengths != nullptr && present) ? __ldg(a.lengths + start + i) : 0;
  while_loading();
  {  // zero the columns (and the zero column) while the ids are in flight
    uint4* z = reinterpret_cast<uint4*>(sm.cols);
    for (int e = i; e < (kBitmapCapacity * CW + 4) / 4; e += W)
      z[e] = make_uint4(0u, 0u, 0u, 0u);
  }
  bool over = len > a.len_limit;
  const uint32_t used = in_range_slots(a, p, over);
  PW_PHASE(1);
  int col[kPairSlots];  // word offset of C_{p_k}, or of the zero column for an unused slot
#pragma unroll
  for (int k = 0; k < kPairSlots; ++k)
    col[k] = ((used >> k) & 1u) ? p[k] * CW : kBitmapCapacity * CW;
  const int pos = col_pos<W>(i);
  const uint32_t bit = 1u << (pos & 31);
  __syncthreads();  // the columns are zero
  // No branch: an unused slot ORs nothing into the zero column. A repeated id ORs its bit
  // twice and gets the same M bit as its first occurrence; all_i leaves it out, so no live
  // mask ever holds it. The first occurrences are found while the atomics drain.
#pragma unroll
  for (int k = 0; k < kPairSlots; ++k)
    atomicOr(sm.cols + col[k] + (pos >> 5), ((used >> k) & 1u) ? bit : 0u);
  sm.all[i] = first_slots(p, used);
  if (__syncthreads_or(over)) return true;
  PW_PHASE(2);
  uint32_t x[CW][kPairSlots];  // x[w][k]: word w of C_{p_k}, the window queries selecting slot k's page
#pragma unroll
  for (int k = 0; k < kPairSlots; ++k) {
    uint32_t c[CW];
    load_column<CW>(sm.cols + col[k], c);
#pragma unroll
    for (int w = 0; w < CW; ++w) x[w][k] = c[w];
  }
#pragma unroll
  for (int w = 0; w < CW; ++w) {
    transpose_16x16x2(x[w]);  // x[w][t] = M[32w + t][i] | M[32w + 16 + t][i] << 16
#pragma unroll
    for (int t = 0; t < kPairSlots; ++t) sm.pairs[(16 * w + t) * W + i] = x[w][t];
  }
  __syncthreads();
  return false;
}

// Candidates held by one lane of the greedy warp, Q per lane (key layout: see pair_tie).
template <int Q>
struct Candidates {
  unsigned tie[Q];   // pair_tie(j) while j is in R, else kDeadTie
  uint32_t live[Q];  // live_j: j's slots whose page is not in U_G
  uint32_t all[Q];   // all_j
  uint32_t col[Q];   // byte offset of M[0][j] in M: 4j
};


// The tie held in slot d = lane + 32q of the lanes' candidates (d warp-uniform; kDeadTie for
// d < 0): one shuffle.
template <int Q>
__device__ __forceinline__ unsigned tie_in_slot(const unsigned (&tie)[Q], int d) {
  unsigned v = 0u;  // tie[d >> 5], masked in (a select of array elements would become an
#pragma unroll    // indexed load, and the candidates would move to local memory)
  for (int q = 0; q < Q; ++q) v |= tie[q] & (0u - static_cast<unsigned>((d >> 5) == q));
  v = __shfl_sync(0xffffffffu, v, d & 31);
  return d < 0 ? kDeadTie : v;
}

// The two smallest ties still in R (kDeadTie where R holds fewer). Slot d = lane + 32q of the
// lanes' candidates runs in id order (and compact keeps it so), so they are the first two
// set bits of the Q ballots "slot holds a candidate in R": votes and two shuffles, no redux.
template <int Q>
__device__ __forceinline__ void two_smallest(const unsigned (&tie)[Q], unsigned& s0,
                                             unsigned& s1) {
  int d0 = -1, d1 = -1;
#pragma unroll
  for (int q = 0; q < Q; ++q) {
    unsigned in_r = __ballot_sync(0xffffffffu, tie[q] != kDeadTie);
    if (d0 < 0 && in_r != 0u) {
      d0 = 32 * q + __ffs(in_r) - 1;
      in_r &= in_r - 1u;
    }
    if (d0 >= 0 && d1 < 0 && in_r != 0u) d1 = 32 * q + __ffs(in_r) - 1;
  }
  s0 = tie_in_slot(tie, d0);
  s1 = tie_in_slot(tie, d1);
}

// Rounds until `end` slots of the window are filled (one pick per round). A group's first
// round takes its seed min(R) (the smallest tie still in R), every other round the smallest
// key, each found by one redux.sync. Then the picked j leaves R and every candidate i drops
// the slots j also selects: live_i &= ~M[j][i]. π's slot goes to shared memory (lane 0).
// For g = 8 whole groups run fully unrolled (no per-round loop test), and a group's last
// round also finds the two smallest ties s0 < s1 of R beside its pick j, off the dependent
// chain; the next seed min(R \ {j}) is then s1 if j = s0, else s0, and needs no redux.
// `publish(slot)` runs in every lane when a group is complete (π[0, slot) is final): the
// fused plan emits groups while the rounds go on; NoPublish for π alone.
struct NoPublish {
  __device__ __forceinline__ void operator()(int) const {}
};
template <int W, int Q, class Publish>
__device__ __forceinline__ void pair_rounds(const Args& a, PairsShared<W>& sm, Candidates<Q>& c,
                                            int& slot, int& members, unsigned& next_seed,
                                            int end, const Publish& publish) {
  constexpr int kGroup = 8;  // the g of the unrolled path (Union8's g)
  const char* m = reinterpret_cast<const char*>(sm.pairs);
  auto take = [&](unsigned tie) {  // j = tie >> kIdShift leaves R and joins G
    if (threadIdx.x == 0) sm.perm[slot] = static_cast<int>(tie >> kIdShift);
    // also after a group's last member, where the next seed resets live: no branch
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      c.live[q] &= ~*reinterpret_cast<const uint16_t*>(m + ((tie & kRowMask) | c.col[q]));
      c.tie[q] = c.tie[q] == tie ? kDeadTie : c.tie[q];
    }
    ++slot;
  };
  auto seed = [&]() {  // U_G restarts from S_seed
    unsigned first = c.tie[0];
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      c.live[q] = c.all[q];
      first = min(first, c.tie[q]);
    }
    if (next_seed == kNoSeed) next_seed = __reduce_min_sync(0xffffffffu, first);
    take(next_seed);
    next_seed = kNoSeed;
    members = 1;
  };
  auto pick = [&]() {  // the smallest (delta, id) key joins G; returns its tie
    unsigned key = 0xffffffffu;
#pragma unroll
    for (int q = 0; q < Q; ++q)
      key = min(key, (static_cast<unsigned>(__popc(c.live[q])) << kDeltaShift) + c.tie[q]);
    const unsigned tie = __reduce_min_sync(0xffffffffu, key) & kTieMask;
    take(tie);
    return tie;
  };
  if (a.group == kGroup) {
    while (members == 0 && slot + kGroup <= end) {
      seed();
#pragma unroll
      for (int r = 1; r < kGroup - 1; ++r) pick();
      unsigned s0, s1;  // of R before the group's last pick
      two_smallest(c.tie, s0, s1);
      const unsigned tie = pick();
      next_seed = tie == s0 ? s1 : s0;
      members = 0;
      publish(slot);
    }
  }
  while (slot < end) {  // any g, and a window's last, partial group
    if (members == 0) seed();
    for (; members < a.group && slot < end; ++members) pick();
    if (members == a.group) {
      members = 0;
      publish(slot);
    }
  }
}

// Moves the candidates still in R (at most 32·(Q-1) of them) into Q-1 per lane, in id order.
template <int W, int Q>
__device__ __forceinline__ Candidates<Q - 1> compact(PairsShared<W>& sm, const Candidates<Q>& c) {
  const unsigned lane = threadIdx.x, below = (1u << lane) - 1u;
  int base = 0;
  __syncwarp();
#pragma unroll
  for (int q = 0; q < Q; ++q) {
    const bool in_r = c.tie[q] != kDeadTie;
    const unsigned mask = __ballot_sync(0xffffffffu, in_r);
    if (in_r)
      sm.moved[base + __popc(mask & below)] = make_uint4(c.tie[q], c.live[q], c.all[q], c.col[q]);
    base += __popc(mask);
  }
  __syncwarp();
  Candidates<Q - 1> out;
#pragma unroll
  for (int q = 0; q < Q - 1; ++q) {
    const int d = lane + 32 * q;
    const uint4 v = d < base ? sm.moved[d] : make_uint4(kDeadTie, 0u, 0u, 0u);
    out.tie[q] = v.x, out.live[q] = v.y, out.all[q] = v.z, out.col[q] = v.w;
  }
  return out;
}

// Rounds with Q candidates per lane while more than 32·(Q-1) remain, then compaction to Q-1
// (each step removes one load and one popcount from every later round; the popcount pipe
// runs at 1/8 of the warp rate, so every candidate slot a lane drops shortens the round).
template <int W, int Q, class Publish>
__device__ __forceinline__ void pair_phases(const Args& a, PairsShared<W>& sm, Candidates<Q>& c,
                                            int& slot, int& members, unsigned& next_seed,
                                            int size, const Publish& publish) {
  if constexpr (Q == 1) {
    pair_rounds<W>(a, sm, c, slot, members, next_seed, size, publish);
  } else {
    pair_rounds<W>(a, sm, c, slot, members, next_seed, size - 32 * (Q - 1), publish);
    Candidates<Q - 1> fewer = compact<W>(sm, c);
    pair_phases<W>(a, sm, fewer, slot, members, next_seed, size, publish);
  }
}

// The W rounds of the window in warp 0 alone (no barrier): lane l starts with candidates
// l + 32q. The local π goes to sm.perm; publish(size) at the end (the last, partial group).
template <int W, class Publish = NoPublish>
__device__ __forceinline__ void greedy_pairs(const Args& a, int size, PairsShared<W>& sm,
                                             const Publish& publish = Publish()) {
  constexpr int Q = W / 32;
  const int lane = threadIdx.x;
  Candidates<Q> c;
#pragma unroll
  for (int q = 0; q < Q; ++q) {
    const int i = lane + 32 * q;
    c.tie[q] = i < size ? pair_tie<W>(i) : kDeadTie;
    c.all[q] = sm.all[i];
    c.live[q] = 0u;
    c.col[q] = 4u * i;
  }
  int slot = 0, members = 0;
  unsigned next_seed = kNoSeed;
  pair_phases<W>(a, sm, c, slot, members, next_seed, size, publish);
  publish(size);
}

// ---- The chunk handshake of the capacity fallback (see the file comment).
enum ChunkStatus : int {
  kChunkOpen = 0,     // some window of the chunk has not arrived yet
  kChunkClean = 1,    // every window arrived and none is flagged: π is final
  kChunkFlagged = 2,  // some window is flagged: the chunk ends as the identity
};

struct ChunkShared {
  unsigned long long rounds_done;  // mbarrier, one arrival: the rounds are over (the poll stops)
  int status;                      // ChunkStatus of this window at its end
  int rewrite;                     // this window completed `finished` of a flagged chunk
};

// Words (arrived, finished) of (head, chunk) in scratch.
__device__ __forceinline__ unsigned long long* chunk_words(const Args& a, int head, int chunk) {
  return a.scratch + 2 * (static_cast<long long>(head) * a.num_chunks + chunk);
}

__device__ __forceinline__ int chunk_status(unsigned long long arrived, int windows) {
  if ((arrived >> 32) != 0ull) return kChunkFlagged;
  return static_cast<int>(arrived & 0xffffffffull) == windows ? kChunkClean : kChunkOpen;
}

__device__ __forceinline__ unsigned long long load_relaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// `arrived` as seen by a window that arrived with `seen` (what its atomic returned, plus its
// own arrival): reloaded while the chunk is open, until the rounds are over (`rounds_done`).
// A whole warp runs it (every lane loads the same word), so the loop stays converged.
__device__ __forceinline__ int poll_chunk(const unsigned long long* words,
                                          unsigned long long seen, int windows,
                                          uint32_t rounds_done) {
  int status = chunk_status(seen, windows);
  while (status == kChunkOpen) {
    status = chunk_status(load_relaxed(words), windows);
    if (status != kChunkOpen || pipeline::mbar_test(rounds_done, 0)) break;
    __nanosleep(256);
  }
#ifdef PW_CHUNK_NEVER_CLEAN  // test builds: every multi-window chunk takes the counted path
  if (status == kChunkClean) status = kChunkOpen;
#endif
  return status;
}

// End of a window of a multi-window chunk whose stores are issued (see the file comment);
// `rewrite(ch)` writes what else the identity of the whole chunk changes (the fused plan).
template <class Rewrite>
__device__ __forceinline__ void chunk_finish(unsigned long long* words, int status, int* perm,
                                             int4 ch, ChunkShared& cs, const Rewrite& rewrite) {
  if (status == kChunkClean) return;  // π is final everywhere: nothing to order or count
  __threadfence();                    // this window's stores are visible before it is counted
  __syncthreads();
  if (threadIdx.x == 0) {
    int rewrite = 0;
    if (atomicAdd(words + 1, 1ull) == static_cast<unsigned long long>(ch.z - 1)) {
      __threadfence();  // every window of the chunk has stored (and arrived before that)
      rewrite = (load_relaxed(words) >> 32) != 0ull;
    }
    cs.rewrite = rewrite;
  }
  __syncthreads();
  if (cs.rewrite) {
    store_perm(perm, ch.x, ch.y, nullptr);
    rewrite(ch);
  }
}

// One window: `build` fills the family's shared state and returns the capacity-fallback flag
// (CTA-uniform); then `greedy(window)` (window = (start, size, chunk, first group)) writes
// the local π to `local` unless the window is flagged (the fused plan's greedy also emits the
// groups as they complete). kPollWarp is a warp that the greedy leaves idle (it polls the chunk while the
// rounds run), or -1: thread 0 then looks at the chunk once after the rounds. After π is
// stored, `emit(window, local π or nullptr for the identity)` runs in every thread (the fused
// plan; before the window counts itself in a chunk), and a chunk that ends as the identity
// is passed to `emit(chunk, nullptr)` in the window that rewrites it.
struct NoPlan {
  __device__ __forceinline__ void operator()(int4, const int*) const {}
};
template <int kPollWarp, class Build, class Greedy, class Emit = NoPlan>
__device__ __forceinline__ void regroup_window(const Args& a, const int* local, ChunkShared& cs,
                                               const Build& build, const Greedy& greedy,
                                               const Emit& emit = Emit()) {
  PW_PHASE(0);
  const int head = blockIdx.y;
  int4 win, ch;  // (start, size, chunk, 0) and (start, size, windows, 0)
  if (a.uniform > 0) {  // .w: the first group of the window / chunk (the fused plan's rows)
    const int first = static_cast<int>(blockIdx.x) * a.uniform;
    win = make_int4(first, min(a.uniform, a.n - first), 0, first / a.group);
    ch = make_int4(0, a.n, static_cast<int>(gridDim.x), 0);
  } else {
    win = a.windows[blockIdx.x];
    ch = a.chunks[win.z];
  }
  const int start = win.x, size = win.y, chunk = win.z;
  int* perm = a.perm + static_cast<long long>(head) * a.n;
  const int* rows = a.topk + (static_cast<long long>(head) * a.n + start) * a.k;
  // only a multi-window chunk needs the handshake
  unsigned long long* words = ch.z > 1 ? chunk_words(a, head, chunk) : nullptr;
  const uint32_t rounds_done = pipeline::smem_addr(&cs.rounds_done);
  if (threadIdx.x == 0) pipeline::mbar_init(rounds_done, 1);  // published by the build's barriers
  const bool over = build(rows, start, size);
  PW_PHASE(3);
  const int warp = threadIdx.x >> 5;
  constexpr int kArriveWarp = kPollWarp >= 0 ? kPollWarp : 0;
  int status = over ? kChunkFlagged : kChunkClean;  // a one-window chunk decides alone
  unsigned long long seen = 0ull;
  if (words != nullptr && warp == kArriveWarp) {
    const unsigned long long add = 1ull + (over ? (1ull << 32) : 0ull);
    if ((threadIdx.x & 31) == 0) seen = atomicAdd(words, add) + add;
    seen = __shfl_sync(0xffffffffu, seen, 0);
  }
  if (!over) {
    if (kPollWarp >= 0 && warp == kPollWarp) {
      if (words != nullptr) status = poll_chunk(words, seen, ch.z, rounds_done);
    } else {
      greedy(win);
      if (threadIdx.x == 0) pipeline::mbar_release<1>(rounds_done);
      if (kPollWarp < 0 && words != nullptr && threadIdx.x == 0)
        status = poll_chunk(words, seen, ch.z, rounds_done);
    }
  }
  PW_PHASE(4);
  if (threadIdx.x == 32 * kArriveWarp) cs.status = status;
  __syncthreads();
  status = cs.status;
  store_perm(perm, start, size, status == kChunkFlagged ? nullptr : local);
  emit(win, status == kChunkFlagged ? nullptr : local);
  if (words != nullptr) {
    chunk_finish(words, status, perm, ch, cs, [&](int4 c) { emit(c, nullptr); });
  }
  PW_PHASE(5);
}

template <int NT>
__device__ __forceinline__ void regroup_cta_bits(const Args& a) {
  static_assert(NT <= 256, "ids are packed into 8 bits of the (delta, id) key");
  static_assert(NT % 32 == 0, "whole warps only");
  __shared__ __align__(16) uint32_t sm_bits[NT * kRowStride];
  __shared__ __align__(16) unsigned sm_key[2 * (NT / 32) + 4];
  __shared__ int sm_perm[NT];
  __shared__ ChunkShared cs;
  auto build = [&](const int* rows, int start, int size) {
    uint4* z = reinterpret_cast<uint4*>(sm_bits);
    for (int i = threadIdx.x; i < NT * kRowStride / 4; i += NT) z[i] = make_uint4(0u, 0u, 0u, 0u);
    __syncthreads();
    return build_rows<NT>(a, rows, start, size, sm_bits);
  };
  regroup_window<-1>(a, sm_perm, cs, build, [&](int4 win) {
    greedy_bits<NT>(a, sm_perm, win.y, sm_bits, sm_key);
  });
}

template <int W>
__device__ __forceinline__ void regroup_cta_pairs(const Args& a) {
  static_assert(W == 32 || W == 64 || W == 128, "one warp holds W / 32 candidates per lane");
  __shared__ __align__(16) PairsShared<W> sm;
  __shared__ ChunkShared cs;
  // the rounds run in warp 0; warp 1 (when there is one) polls the chunk meanwhile
  regroup_window<(W > 32 ? 1 : -1)>(a, sm.perm, cs, [&](const int* rows, int start, int size) {
    return build_pairs<W>(a, rows, start, size, sm);
  }, [&](int4 win) {
    if (threadIdx.x < 32) greedy_pairs<W>(a, win.y, sm);
  });
}

// ---- The fused online plan (regroup_plan_pairs_w<W>): the union plan of the window's groups
// in the layout of kernels/union_plan_args.cuh with one row of `capacity` = g·K entries per
// group (pages[gi·capacity ...], masks alike, counts[gi] = |U_G|), so no window waits for
// another's page count (no prefix sum). A window emits its groups one warp per group
// (kernels/union_emit.cuh), the members from its local π in shared memory: at W = 128 warps 2
// and 3 emit each group as soon as warp 0's rounds have completed it (emit_during_rounds),
// at W = 32 and 64 every warp emits after π is stored; the identity of a flagged window is
// emitted after the rounds, and a chunk that ends as the identity is emitted again, whole, by
// the window that rewrites it.
// Group j of a window (or chunk) starting at row s is plan group h·G + first + j, first =
// the table's .w (the request-local group index of row s: windows and chunks start at
// multiples of g inside their request).
struct PlanOut {
  int* pages;      // [H·G·capacity]
  uint8_t* masks;  // [H·G·capacity]
  int* counts;     // [H·G]
  int num_groups;  // G per KV head
  int capacity;    // entries per group row: g·K
};

// The plan row of group j of rows [span.x, span.x + span.y) (plan group span.w + j), members
// local[r] (span-local ids) or the identity (local == nullptr); one warp, its kWarpWords
// words of shared scratch.
__device__ __forceinline__ void emit_group(const Args& a, const PlanOut& pl, int4 span,
                                           const int* local, int j, uint32_t* scratch) {
  const int r = (threadIdx.x & 31) >> 2;  // lanes 4r .. 4r+3 read member r's ids
  const int first = j * a.group, members = min(a.group, span.y - first);
  const int* row = nullptr;
  if (r < members) {
    const int id = span.x + (local != nullptr ? local[first + r] : first + r);
    row = a.topk + (static_cast<long long>(blockIdx.y) * a.n + id) * a.k;
  }
  const int gi = static_cast<int>(blockIdx.y) * pl.num_groups + span.w + j;
  const int count = unions::union_group<true, false>(
      row, a.k, scratch, unions::Out{pl.pages, pl.masks, nullptr}, gi * pl.capacity);
  if ((threadIdx.x & 31) == 0) pl.counts[gi] = count;
}
// Every group of the span, warp w taking groups w, w + warps, ... (scratch: kWarpWords words
// per warp of the CTA).
__device__ __forceinline__ void emit_plan(const Args& a, const PlanOut& pl, int4 span,
                                          const int* local, uint32_t* scratch) {
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int groups = (span.y + a.group - 1) / a.group;
  for (int j = warp; j < groups; j += warps) {
    emit_group(a, pl, span, local, j, scratch + warp * unions::kWarpWords);
  }
}

// While warp 0 runs the rounds, warps kFirstEmitter .. (warp 1 polls the chunk) emit each
// group as soon as warp 0 has completed it. The handoff is one mbarrier per group of the
// window, used once per launch (a CTA runs one window): lane 0 of warp 0 stores π, then every
// lane of warp 0 arrives (release.cta) on the barrier of the group that is now final, so the
// phase completes with lane 0's arrival after its stores; the emitter of group j waits on
// barrier j (acquire.cta, phase 0). Barriers, unlike a polled flag, are what compute-sanitizer's
// racecheck orders shared-memory accesses by. Only the last group's emission is left after
// the rounds.
constexpr int kFirstEmitter = 2;
constexpr int kGroupDoneArrivals = 32;  // the lanes of warp 0
struct GroupDone {
  unsigned long long* bars;  // [groups of the window], kGroupDoneArrivals arrivals each
  int group;                 // g
  int* published;            // groups already arrived on (warp 0's count, the same in every lane)

  // π[0, slot) is final. Each call completes at most one group (the rounds publish every full
  // group, the greedy's end the window's last, partial one), so the arrival is one predicated
  // instruction in the rounds' code: no lane-0 branch and no division by g on their chain.
  __device__ __forceinline__ void operator()(int slot) const {
    const int j = *published;
    if (j * group < slot) {
      pipeline::mbar_release<1>(pipeline::smem_addr(bars + j));
      *published = j + 1;
    }
  }
};
__device__ __forceinline__ void emit_during_rounds(const Args& a, const PlanOut& pl, int4 span,
                                                   const int* local,
                                                   const unsigned long long* bars,
                                                   uint32_t* scratch) {
  const int e = (threadIdx.x >> 5) - kFirstEmitter, emitters = (blockDim.x >> 5) - kFirstEmitter;
  const int groups = (span.y + a.group - 1) / a.group;
  for (int j = e; j < groups; j += emitters) {
    pipeline::mbar_wait_spin(pipeline::smem_addr(bars + j), 0);
    emit_group(a, pl, span, local, j, scratch + e * unions::kWarpWords);
  }
}

template <int W>
__device__ __forceinline__ void regroup_plan_cta_pairs(const Args& a, const PlanOut& pl) {
  static_assert(W * W / 2 >= (W / 32) * unions::kWarpWords, "the emission scratch fits in M");
  constexpr int kEmitters = W / 32 > kFirstEmitter ? W / 32 - kFirstEmitter : 0;  // W = 128: 2
  __shared__ __align__(16) PairsShared<W> sm;
  __shared__ ChunkShared cs;
  // one barrier per group of the window (g >= 1, so at most W groups)
  __shared__ unsigned long long group_done[kEmitters > 0 ? W : 1];
  __shared__ uint32_t emit_scratch[kEmitters > 0 ? kEmitters * unions::kWarpWords : 1];
  uint32_t* scratch = sm.pairs;  // M is no longer read once π is stored
  regroup_window<(W > 32 ? 1 : -1)>(a, sm.perm, cs, [&](const int* rows, int start, int size) {
    // thread 0 inits the group barriers while its ids load (the build's barriers publish them)
    auto init_group_done = [&]() {
      if (kEmitters > 0 && threadIdx.x == 0) {
        for (int j = 0; j < (size + a.group - 1) / a.group; ++j) {
          pipeline::mbar_init(pipeline::smem_addr(group_done + j), kGroupDoneArrivals);
        }
      }
    };
    return build_pairs<W>(a, rows, start, size, sm, init_group_done);
  }, [&](int4 win) {
    if (threadIdx.x < 32) {
      if constexpr (kEmitters > 0) {
        int published = 0;
        greedy_pairs<W>(a, win.y, sm, GroupDone{group_done, a.group, &published});
      } else {
        greedy_pairs<W>(a, win.y, sm);
      }
    } else if (kEmitters > 0 && (threadIdx.x >> 5) >= kFirstEmitter) {
      emit_during_rounds(a, pl, win, sm.perm, group_done, emit_scratch);
    }
  }, [&](int4 span, const int* local) {
    // the window's own groups went out during the rounds; the identity (a flagged window or
    // chunk, also over rows emitted early) is written here
    if (kEmitters == 0 || local == nullptr) emit_plan(a, pl, span, local, scratch);
  });
}

}  // namespace regroup
}  // namespace pageweaver

// Variants: regroup_bits_t<threads> (any K, W <= threads) and regroup_pairs_w<W> (K <= 16,
// W <= 128, W threads). The launcher picks one that holds W; the benchmark times them all.
// Kernel parameters (prepared format "PPPPPPqiiiiii"): topk, lengths, windows, chunks, perm,
// scratch, len_limit, n, k, num_chunks, group, capacity, uniform.
#define PW_REGROUP_ENTRY(NT, NAME, BODY)                                                       \
  extern "C" __global__ void __launch_bounds__(NT, 2)                                         \
      NAME(const int* topk, const long long* lengths, const int4* windows, const int4* chunks, \
           int* perm, unsigned long long* scratch, long long len_limit, int n, int k,         \
           int num_chunks, int group, int capacity, int uniform) {                            \
    const pageweaver::regroup::Args a{topk, lengths, windows, chunks, perm, scratch,           \
                                      len_limit, n, k, num_chunks, group, capacity, uniform};  \
    BODY(a);                                                                                   \
  }

PW_REGROUP_ENTRY(32, regroup_bits_t32, pageweaver::regroup::regroup_cta_bits<32>)
PW_REGROUP_ENTRY(64, regroup_bits_t64, pageweaver::regroup::regroup_cta_bits<64>)
PW_REGROUP_ENTRY(128, regroup_bits_t128, pageweaver::regroup::regroup_cta_bits<128>)
PW_REGROUP_ENTRY(256, regroup_bits_t256, pageweaver::regroup::regroup_cta_bits<256>)
PW_REGROUP_ENTRY(32, regroup_pairs_w32, pageweaver::regroup::regroup_cta_pairs<32>)
PW_REGROUP_ENTRY(64, regroup_pairs_w64, pageweaver::regroup::regroup_cta_pairs<64>)
PW_REGROUP_ENTRY(128, regroup_pairs_w128, pageweaver::regroup::regroup_cta_pairs<128>)

// The fused online plan (regroup_plan_pairs_w<W>, K <= 16, g <= 8): the regroup's parameters,
// then pages, masks, counts, G per KV head and the row capacity (prepared format
// "PPPPPPqiiiiii" + "PPPii").
#define PW_REGROUP_PLAN_ENTRY(W)                                                               \
  extern "C" __global__ void __launch_bounds__(W, 2) regroup_plan_pairs_w##W(                 \
      const int* topk, const long long* lengths, const int4* windows, const int4* chunks,     \
      int* perm, unsigned long long* scratch, long long len_limit, int n, int k,              \
      int num_chunks, int group, int capacity, int uniform, int* pages, uint8_t* masks,       \
      int* counts, int num_groups, int row_capacity) {                                        \
    const pageweaver::regroup::Args a{topk, lengths, windows, chunks, perm, scratch,           \
                                      len_limit, n, k, num_chunks, group, capacity, uniform};  \
    pageweaver::regroup::regroup_plan_cta_pairs<W>(                                            \
        a, pageweaver::regroup::PlanOut{pages, masks, counts, num_groups, row_capacity});      \
  }
PW_REGROUP_PLAN_ENTRY(32)
PW_REGROUP_PLAN_ENTRY(64)
PW_REGROUP_PLAN_ENTRY(128)
