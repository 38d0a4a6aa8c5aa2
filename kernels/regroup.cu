// Greedy regroup, GPU form (PAGEWEAVER.md §4.1; arXiv:2610.11201, Algorithm 1).
//
// One CTA per window of W consecutive queries of one (request, chunk); windows of every
// chunk, request and KV head run in parallel (grid = [windows, heads]). Inside a window the
// rule is the CPU reference's, bit for bit:
//   R = unassigned local ids; repeat: seed = min(R), G = [seed], U_G = S_seed;
//   while |G| < g and R non-empty: j* = argmin_{j in R} (|S_j \ U_G|, j); U_G |= S_j*.
// The output is π only: execution slot r runs original query π[r]. Q is never touched.
//
// Layout. Each S_i is a 512-page bitmap of 16 uint32 words (bit p%32 of word p/32), kept in
// shared memory (one padded row per query, for the broadcast of S_j*) and in the registers
// of the thread that owns query i. A thread owns QPT queries: QPT = 1 is the paper's "one
// thread per query" (W threads, W/32 warps); QPT = W/32 is "one warp per window".
//
// One round (one pick). Each live candidate j keeps delta_j = |S_j \ U_G| in a register.
//   key_j = delta_j << 8 | j       (lexicographic (delta, id); ids < 256)
//   warp winner  : one redux.sync min (__reduce_min_sync) over the 32 lanes
//   CTA winner   : each warp's lane 0 writes its key to a double-buffered shared slot,
//                  ONE __syncthreads, every thread reads the W/32 keys and takes the min
//                  (double buffering makes the barrier of round r+1 protect round r's slots)
//   update       : new = S_j* & ~U_G (the pages j* adds); U_G |= S_j*;
//                  delta_j -= popcount(bits_j & new)           (incremental variants)
//                  delta_j  = Σ_w popcount(bits_j[w] & ~U_G[w]) (from-scratch variant)
// (kSkip restricts the update to the words S_j* occupies; ptxas predicates those popcounts,
// so it is slower on the H200 — see benchmarks/bench_gpu_regroup_notes.md.) The seed needs no
// reduction at all: every thread tracks R as a W-bit mask and takes its lowest set bit.
// Round cost ≈ 400 SM cycles: ~128 for the 16 popcounts of each warp, the rest the chain
// redux → bar.sync → shared loads → update. A second family ("masks", K <= 16) cuts the round
// to one popcount per candidate but pays a per-window pair-mask build (see greedy_masks).
//
// Capacity fallback (§4), decided on the GPU without a host sync: a window that sees a valid
// page id >= B (or a length L_i > B·P) writes the identity; windows of a multi-window chunk
// then meet in a per-(head, chunk) 64-bit word in global scratch (zero at rest; one atomic
// add per window: finished windows | flagged windows << 32): the last window of the chunk
// to finish resets it to zero and, if any window was flagged, rewrites the whole chunk with
// the identity. Ids >= B never index a
// bitmap: they only raise the flag.
#include "pageweaver_common.cuh"

#include <stdint.h>

namespace pageweaver {
namespace regroup {

constexpr int kRowStride = 20;  // words per shared bitmap row: 16 + 4 pad (conflict-free 128-bit loads)

struct Args {
  const int* __restrict__ topk;         // [H, N, K] int32 page ids, < 0 = padding
  const long long* __restrict__ lengths;  // [N] L_i or nullptr (shared by all heads)
  const int4* __restrict__ windows;     // [M] (start, size, chunk, 0), head-local rows
  const int4* __restrict__ chunks;      // [C] (start, size, number of windows, 0)
  int* __restrict__ perm;               // [H, N] π, head-local ids
  int* __restrict__ scratch;            // [H, C] uint64 (finished | flagged << 32), zero at rest
  long long len_limit;                  // B·P: L_i above it needs more than B pages
  int n;                                // N rows per head
  int k;                                // K ids per row
  int num_chunks;                       // C
  int group;                            // g
  int capacity;                         // B <= 512
};

__device__ __forceinline__ void write_identity(int* perm, int begin, int end) {
  for (int i = begin + static_cast<int>(threadIdx.x); i < end; i += blockDim.x) perm[i] = i;
}

// Loads the window's ids (coalesced, 16-byte loads when K % 4 == 0), sets the bits of S_i
// in the shared rows and reports whether any id needs the capacity fallback.
// Loads the window's ids (16-byte loads when K % 4 == 0, several in flight per thread), sets
// the bits of S_i in the shared rows (and, with CW > 0, bit i of page p's window column
// cols[p][i / 32]) and reports whether any id or length needs the capacity fallback.
template <int NT, int QPT, int CW>
__device__ __forceinline__ bool build_rows(const Args& a, const int* rows, int start, int size,
                                          uint32_t* sm_rows, uint32_t* sm_cols) {
  constexpr int kInFlight = 4 * QPT;  // independent loads issued before the first use
  const int tid = threadIdx.x;
  long long len[QPT];  // L_i of the owned queries, loaded first (consumed last)
#pragma unroll
  for (int q = 0; q < QPT; ++q) {
    const int t = tid + q * NT;
    len[q] = (a.lengths != nullptr && t < size) ? __ldg(a.lengths + start + t) : 0;
  }
  bool over = false;
  auto add = [&](int p, int r) {
    if (p < 0) return;
    if (p >= a.capacity) {
      over = true;  // never indexes a bitmap
    } else {
      atomicOr(sm_rows + r * kRowStride + (p >> 5), 1u << (p & 31));
      if constexpr (CW > 0) atomicOr(sm_cols + p * CW + (r >> 5), 1u << (r & 31));
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
#pragma unroll
  for (int q = 0; q < QPT; ++q)
    if (len[q] > a.len_limit) over = true;
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

// Seed of a new group: min(R), known to every thread without communication; it leaves R and
// runs in execution slot `slot` (thread 0 writes π[start + slot]).
template <int RW>
__device__ __forceinline__ int take_seed(uint32_t (&R)[RW], int* perm, int start, int slot) {
  const int seed = lowest_bit(R);
  clear_bit(R, seed);
  if (threadIdx.x == 0) perm[start + slot] = start + seed;
  return seed;
}

// CTA-wide min of a (delta << 8 | id) key: redux.sync inside each warp, then (with several
// warps) one shared slot per warp, ONE __syncthreads, and every thread reads all slots.
// Slots are double-buffered by `parity`, so round r+1's barrier protects round r's reads.
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

template <int RW>
__device__ __forceinline__ void init_remaining(uint32_t (&R)[RW], int size) {
#pragma unroll
  for (int w = 0; w < RW; ++w) {
    const int left = size - 32 * w;
    R[w] = left >= 32 ? 0xffffffffu : (left > 0 ? (1u << left) - 1u : 0u);
  }
}

// ---- Variant family "bits": every candidate keeps S_j (16 words) and delta_j in registers.
// MODE kFull recomputes delta_j from scratch, kIncr lowers it by popcount(bits_j & new) over
// all 16 words, kSkip only over the words that S_j* occupies.
constexpr int kFull = 0, kIncr = 1, kSkip = 2;
// The greedy of one window (size <= NT * QPT), writing π[start + slot].
template <int NT, int QPT, int MODE>
__device__ __forceinline__ void greedy_window(const Args& a, int* perm, int start, int size,
                                              const uint32_t* sm_bits, unsigned* sm_key) {
  constexpr int WMAX = NT * QPT;
  constexpr int RW = (WMAX + 31) / 32;
  const int tid = threadIdx.x;

  uint32_t bits[QPT][kBitmapWords];  // S_j of the queries this thread owns
  int delta[QPT];                    // |S_j \ U_G|
  bool alive[QPT];                   // j still in R
#pragma unroll
  for (int q = 0; q < QPT; ++q) {
    load_row(sm_bits, tid + q * NT, bits[q]);
    alive[q] = tid + q * NT < size;
    delta[q] = 0;
  }
  if constexpr (MODE == kSkip) {
    // Word occupancy of every S_j (bit w set when word w has a page), in the row's padding.
#pragma unroll
    for (int q = 0; q < QPT; ++q) {
      uint32_t occ = 0u;
#pragma unroll
      for (int w = 0; w < kBitmapWords; ++w) occ |= (bits[q][w] != 0u ? 1u : 0u) << w;
      const_cast<uint32_t*>(sm_bits)[(tid + q * NT) * kRowStride + kBitmapWords] = occ;
    }
    __syncthreads();
  }
  uint32_t R[RW];
  init_remaining(R, size);
  uint32_t U[kBitmapWords];  // U_G, identical in every thread
  int slot = 0, parity = 0;
  while (slot < size) {
    const int seed = take_seed(R, perm, start, slot);
#pragma unroll
    for (int q = 0; q < QPT; ++q)
      if (tid + q * NT == seed) alive[q] = false;
    ++slot;
    load_row(sm_bits, seed, U);
#pragma unroll
    for (int q = 0; q < QPT; ++q) {
      int d = 0;
#pragma unroll
      for (int w = 0; w < kBitmapWords; ++w) d += __popc(bits[q][w] & ~U[w]);
      delta[q] = d;
    }
    for (int members = 1; members < a.group && slot < size;) {
      unsigned key = 0xffffffffu;
#pragma unroll
      for (int q = 0; q < QPT; ++q)
        if (alive[q]) key = min(key, (static_cast<unsigned>(delta[q]) << 8) | (tid + q * NT));
      key = cta_min<NT>(key, sm_key, parity);
      const int j = static_cast<int>(key & 0xffu);
      if (tid == 0) perm[start + slot] = start + j;
#pragma unroll
      for (int q = 0; q < QPT; ++q)
        if (tid + q * NT == j) alive[q] = false;
      clear_bit(R, j);
      ++slot;
      ++members;
      if (members == a.group || slot == size) break;  // U_G resets: no update needed
      uint32_t S[kBitmapWords];
      load_row(sm_bits, j, S);
      if constexpr (MODE == kSkip) {
        // Only the words S_j* occupies can add pages; the mask is made warp-uniform (shfl)
        // so that the skipped words cost a uniform branch instead of 16 popcounts.
        const uint32_t occ =
            __shfl_sync(0xffffffffu, sm_bits[j * kRowStride + kBitmapWords], 0);
#pragma unroll
        for (int w = 0; w < kBitmapWords; ++w) {
          if (occ & (1u << w)) {
            const uint32_t fresh = S[w] & ~U[w];
            U[w] |= S[w];
#pragma unroll
            for (int q = 0; q < QPT; ++q) delta[q] -= __popc(bits[q][w] & fresh);
          }
        }
      } else if constexpr (MODE == kIncr) {
#pragma unroll
        for (int w = 0; w < kBitmapWords; ++w) {
          const uint32_t fresh = S[w] & ~U[w];  // pages j* adds to U_G
          U[w] |= S[w];
#pragma unroll
          for (int q = 0; q < QPT; ++q) delta[q] -= __popc(bits[q][w] & fresh);
        }
      } else {
#pragma unroll
        for (int w = 0; w < kBitmapWords; ++w) U[w] |= S[w];
#pragma unroll
        for (int q = 0; q < QPT; ++q) {
          int d = 0;
#pragma unroll
          for (int w = 0; w < kBitmapWords; ++w) d += __popc(bits[q][w] & ~U[w]);
          delta[q] = d;
        }
      }
    }
  }
}

// ---- Variant family "masks" (K <= 16): precompute, once per window, for every pair (j, i)
// the 16-bit mask M[j][i] of S_i's pages (numbered in ascending order, bit k = k-th page)
// that S_j also selects. Candidate i then keeps live_i = its pages not yet in U_G:
//   seed s : live_i = all_i & ~M[s][i]        pick j* : live_i &= ~M[j*][i]
//   delta_i = |S_i \ U_G| = popcount(live_i)
// so a round costs one 2-byte shared load, one AND and one popcount per candidate instead of
// 16 words: the round's latency is the winner reduction. M is built from page columns
// (cols[p] = the window queries selecting p): for each own page k and each j in cols[p_k],
// M[j][i] |= 1 << k (shared atomics; Σ_p |cols[p]|^2 of them per window).
template <int NT, int QPT>
__device__ __forceinline__ void greedy_masks(const Args& a, int* perm, int start, int size,
                                             uint32_t* sm_shared, const uint32_t* sm_cols,
                                             unsigned* sm_key) {
  constexpr int WMAX = NT * QPT;
  constexpr int CW = WMAX / 32;
  constexpr int RW = CW;
  const int tid = threadIdx.x;
  uint32_t all[QPT];
  {
    uint32_t bits[QPT][kBitmapWords];
#pragma unroll
    for (int q = 0; q < QPT; ++q) load_row(sm_shared, tid + q * NT, bits[q]);
    __syncthreads();  // the rows are in registers: their space becomes M
    uint4* z = reinterpret_cast<uint4*>(sm_shared);
    for (int i = tid; i < WMAX * WMAX / 8; i += NT) z[i] = make_uint4(0u, 0u, 0u, 0u);
    __syncthreads();
#pragma unroll
    for (int q = 0; q < QPT; ++q) {
      const int id = tid + q * NT;
      const uint32_t half = (id & 1) ? 16u : 0u;
      uint32_t* mcol = sm_shared + (id >> 1);  // M[j][id] lives in word j * WMAX/2 + id/2
      int k = 0;
#pragma unroll
      for (int w = 0; w < kBitmapWords; ++w) {
        uint32_t x = bits[q][w];
        while (x != 0u) {
          const int p = 32 * w + __ffs(x) - 1;
          x &= x - 1u;
          const uint32_t bit = (1u << k) << half;
#pragma unroll
          for (int c = 0; c < CW; ++c) {
            uint32_t col = sm_cols[p * CW + c];
            while (col != 0u) {
              const int j = 32 * c + __ffs(col) - 1;
              col &= col - 1u;
              atomicOr(mcol + j * (WMAX / 2), bit);
            }
          }
          ++k;
        }
      }
      all[q] = k >= 32 ? 0xffffffffu : (1u << k) - 1u;
    }
    __syncthreads();
  }
  const uint16_t* M = reinterpret_cast<const uint16_t*>(sm_shared);
  uint32_t live[QPT];
  bool alive[QPT];
#pragma unroll
  for (int q = 0; q < QPT; ++q) {
    alive[q] = tid + q * NT < size;
    live[q] = 0u;
  }
  uint32_t R[RW];
  init_remaining(R, size);
  int slot = 0, parity = 0;
  while (slot < size) {
    const int seed = take_seed(R, perm, start, slot);
#pragma unroll
    for (int q = 0; q < QPT; ++q) {
      if (tid + q * NT == seed) alive[q] = false;
      live[q] = all[q] & ~static_cast<uint32_t>(M[seed * WMAX + tid + q * NT]);
    }
    ++slot;
    for (int members = 1; members < a.group && slot < size;) {
      unsigned key = 0xffffffffu;
#pragma unroll
      for (int q = 0; q < QPT; ++q)
        if (alive[q]) key = min(key, (static_cast<unsigned>(__popc(live[q])) << 8) | (tid + q * NT));
      key = cta_min<NT>(key, sm_key, parity);
      const int j = static_cast<int>(key & 0xffu);
      if (tid == 0) perm[start + slot] = start + j;
      clear_bit(R, j);
      ++slot;
      ++members;
#pragma unroll
      for (int q = 0; q < QPT; ++q) {
        if (tid + q * NT == j) alive[q] = false;
        live[q] &= ~static_cast<uint32_t>(M[j * WMAX + tid + q * NT]);
      }
    }
  }
}

// Chunk epilogue of the capacity fallback (see the file comment). One 64-bit atomic per
// window: low word = finished windows, high word = windows that saw an id >= B.
__device__ __forceinline__ void chunk_epilogue(const Args& a, int* perm, int head, int chunk,
                                               int4 ch, bool over, int* sm_last) {
  if (ch.z <= 1) return;  // a single window decided alone
  __threadfence();        // this window's π is visible before it is counted
  __syncthreads();
  if (threadIdx.x == 0) {
    auto* sc = reinterpret_cast<unsigned long long*>(a.scratch) +
               (static_cast<long long>(head) * a.num_chunks + chunk);
    const unsigned long long old = atomicAdd(sc, 1ull + (over ? (1ull << 32) : 0ull));
    int last_with_flag = 0;
    if (static_cast<int>(old & 0xffffffffull) == ch.z - 1) {  // all other windows are done
      last_with_flag = over || (old >> 32) != 0ull;
      atomicExch(sc, 0ull);  // zero at rest for the next launch
      __threadfence();
    }
    *sm_last = last_with_flag;
  }
  __syncthreads();
  if (*sm_last) write_identity(perm, ch.x, ch.x + ch.y);
}

// One window, both families: zero the shared rows (and, with CW > 0, the page columns), build
// the bitmaps, then either the capacity fallback (identity) or `greedy(perm, start, size)`,
// and the chunk epilogue.
template <int NT, int QPT, int CW, class Greedy>
__device__ __forceinline__ void regroup_window(const Args& a, uint32_t* sm_rows,
                                               uint32_t* sm_cols, int* sm_last,
                                               const Greedy& greedy) {
  constexpr int WMAX = NT * QPT;
  const int tid = threadIdx.x;
  const int head = blockIdx.y;
  const int4 win = a.windows[blockIdx.x];
  const int start = win.x, size = win.y, chunk = win.z;
  const int4 ch = a.chunks[chunk];
  int* perm = a.perm + static_cast<long long>(head) * a.n;
  const int* rows = a.topk + (static_cast<long long>(head) * a.n + start) * a.k;

  {
    uint4* z = reinterpret_cast<uint4*>(sm_rows);
    for (int i = tid; i < WMAX * kRowStride / 4; i += NT) z[i] = make_uint4(0u, 0u, 0u, 0u);
    if constexpr (CW > 0) {
      uint4* zc = reinterpret_cast<uint4*>(sm_cols);
      for (int i = tid; i < kBitmapCapacity * CW / 4; i += NT) zc[i] = make_uint4(0u, 0u, 0u, 0u);
    }
  }
  __syncthreads();
  const bool over = build_rows<NT, QPT, CW>(a, rows, start, size, sm_rows, sm_cols);
  if (over) {
    write_identity(perm, start, start + size);
  } else {
    greedy(perm, start, size);
  }
  chunk_epilogue(a, perm, head, chunk, ch, over, sm_last);
}

template <int NT, int QPT, int MODE>
__device__ __forceinline__ void regroup_cta(const Args& a) {
  constexpr int WMAX = NT * QPT;
  static_assert(WMAX <= 256, "ids are packed into 8 bits of the (delta, id) key");
  static_assert(NT % 32 == 0, "whole warps only");
  __shared__ __align__(16) uint32_t sm_bits[WMAX * kRowStride];
  __shared__ __align__(16) unsigned sm_key[2 * (NT / 32) + 4];
  __shared__ int sm_last;

  regroup_window<NT, QPT, 0>(a, sm_bits, nullptr, &sm_last, [&](int* perm, int start, int size) {
    greedy_window<NT, QPT, MODE>(a, perm, start, size, sm_bits, sm_key);
  });
}

template <int NT, int QPT>
__device__ __forceinline__ void regroup_cta_masks(const Args& a) {
  constexpr int WMAX = NT * QPT;
  constexpr int CW = WMAX / 32;
  constexpr int ROW_WORDS = WMAX * kRowStride;
  constexpr int M_WORDS = WMAX * WMAX / 2;  // 16-bit masks, two per word
  static_assert(WMAX <= 128, "M is WMAX x WMAX 16-bit masks in static shared memory");
  __shared__ __align__(16) uint32_t sm_shared[ROW_WORDS > M_WORDS ? ROW_WORDS : M_WORDS];
  __shared__ __align__(16) uint32_t sm_cols[kBitmapCapacity * CW];
  __shared__ __align__(16) unsigned sm_key[2 * (NT / 32) + 4];
  __shared__ int sm_last;

  regroup_window<NT, QPT, CW>(a, sm_shared, sm_cols, &sm_last,
                              [&](int* perm, int start, int size) {
    greedy_masks<NT, QPT>(a, perm, start, size, sm_shared, sm_cols, sm_key);
  });
}

}  // namespace regroup
}  // namespace pageweaver

// Variants: regroup_t<threads>_q<queries per thread>_<incr|full> (family "bits", any K) and
// regroup_m_t<threads>_q<queries per thread> (family "masks", K <= 16). The launcher picks
// one whose threads * queries >= W; the benchmark times them all.
// Kernel parameters (prepared format "PPPPPPqiiiii"): topk, lengths, windows, chunks, perm,
// scratch, len_limit, n, k, num_chunks, group, capacity.
#define PW_REGROUP_ENTRY(NT, NAME, BODY)                                                       \
  extern "C" __global__ void __launch_bounds__(NT, 2)                                         \
      NAME(const int* topk, const long long* lengths, const int4* windows, const int4* chunks, \
           int* perm, int* scratch, long long len_limit, int n, int k, int num_chunks,        \
           int group, int capacity) {                                                          \
    const pageweaver::regroup::Args a{topk,      lengths, windows, chunks, perm,     scratch,  \
                                      len_limit, n,       k,       num_chunks, group, capacity}; \
    BODY(a);                                                                                   \
  }
#define PW_BITS(NT, QPT, MODE) pageweaver::regroup::regroup_cta<NT, QPT, pageweaver::regroup::MODE>
#define PW_MASKS(NT, QPT) pageweaver::regroup::regroup_cta_masks<NT, QPT>

PW_REGROUP_ENTRY(32, regroup_t32_q1_incr, PW_BITS(32, 1, kIncr))
PW_REGROUP_ENTRY(64, regroup_t64_q1_incr, PW_BITS(64, 1, kIncr))
PW_REGROUP_ENTRY(128, regroup_t128_q1_incr, PW_BITS(128, 1, kIncr))
PW_REGROUP_ENTRY(256, regroup_t256_q1_incr, PW_BITS(256, 1, kIncr))
PW_REGROUP_ENTRY(64, regroup_t64_q1_full, PW_BITS(64, 1, kFull))
PW_REGROUP_ENTRY(128, regroup_t128_q1_full, PW_BITS(128, 1, kFull))
PW_REGROUP_ENTRY(32, regroup_t32_q2_incr, PW_BITS(32, 2, kIncr))
PW_REGROUP_ENTRY(32, regroup_t32_q4_incr, PW_BITS(32, 4, kIncr))
PW_REGROUP_ENTRY(64, regroup_t64_q2_incr, PW_BITS(64, 2, kIncr))
PW_REGROUP_ENTRY(32, regroup_t32_q1_skip, PW_BITS(32, 1, kSkip))
PW_REGROUP_ENTRY(64, regroup_t64_q1_skip, PW_BITS(64, 1, kSkip))
PW_REGROUP_ENTRY(128, regroup_t128_q1_skip, PW_BITS(128, 1, kSkip))
PW_REGROUP_ENTRY(256, regroup_t256_q1_skip, PW_BITS(256, 1, kSkip))
PW_REGROUP_ENTRY(32, regroup_m_t32_q1, PW_MASKS(32, 1))
PW_REGROUP_ENTRY(64, regroup_m_t64_q1, PW_MASKS(64, 1))
PW_REGROUP_ENTRY(128, regroup_m_t128_q1, PW_MASKS(128, 1))
PW_REGROUP_ENTRY(32, regroup_m_t32_q2, PW_MASKS(32, 2))
PW_REGROUP_ENTRY(32, regroup_m_t32_q4, PW_MASKS(32, 4))
PW_REGROUP_ENTRY(64, regroup_m_t64_q2, PW_MASKS(64, 2))
