// Union preparation (docs/definitions.md#union-preparation; arXiv:2610.11201 §4.1): π and
// the group table → per group G the sorted, de-duplicated page list U_G (CSR), one membership
// byte per (group, page) whose bit r is set when member position r (original query
// π[base + r]) selects the page, the two per-CTA "any member" flags (mask & 0x0F,
// mask & 0xF0) and the per-group page counts |U_G| and offsets.
//
// Two launches, no host sync between them:
//   union_count : one warp per group → |U_G| (page_counts) and one sum per tile of groups;
//   union_emit  : each CTA adds the sums of the tiles before it (its CSR base), each warp
//                 rebuilds its groups' unions and writes pages / masks / flags / offsets.
// Rebuilding a union is cheaper than storing it: a group is at most 8 rows of K ids.
//
// Per group, the warp builds one 512-page bitmap per member position (8 × 16 words in shared
// memory) over a range [lo, lo + 512) of page ids, lo = the smallest id not yet covered (aligned to a
// word), and repeats while ids remain above the range — so any non-negative int32 page id
// works, not only ids below the regroup capacity B, and no id indexes past a bitmap.
// Lane l owns half a word of the range (word l/2, bits 16·(l%2) … +15): lane order is page
// order, so a warp prefix sum of the per-lane popcounts places every page of U_G.
#include "pageweaver_common.cuh"

#include <stdint.h>

namespace pageweaver {
namespace unions {

constexpr int kWarps = 8;                          // warps (groups in flight) per CTA
constexpr int kRangeWords = kBitmapWords;          // 16 words = 512 pages per pass
constexpr int kWarpWords = kGroupSize * kRangeWords;  // 8 positions × 16 words
constexpr unsigned kFull = 0xffffffffu;
constexpr unsigned kNone = 0xffffffffu;

struct Out {
  int* pages;        // [capacity] page ids of every U_G, ascending inside a group
  uint8_t* masks;    // [capacity] membership bytes
  uint8_t* cta_any;  // [capacity, 2] (mask & 0x0F) != 0, (mask & 0xF0) != 0
};

// |U_G| of one group; with EMIT also writes its pages at out position `base`.
// grp = (first position in perm, members <= 8, row base of its KV head, 0).
template <bool EMIT>
__device__ __forceinline__ int union_group(const int* __restrict__ topk, const int* __restrict__ perm,
                                           int4 grp, int k, int n, uint32_t* sm, Out out,
                                           int base) {
  const int lane = threadIdx.x & 31;
  const int r = lane >> 2, sub = lane & 3;  // 4 lanes read the K ids of position r
  const int* row = nullptr;
  if (r < grp.y) {
    const int pi = __ldg(perm + grp.x + r);  // original id of position r, head-local
    if (pi >= 0 && pi < n) row = topk + (static_cast<long long>(grp.z) + pi) * k;  // else: no pages
  }

  // The first 16 ids of the position: 4 per lane, loaded together; ids past 16 (K > 16) are
  // re-read from global memory in each pass.
  int v[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = sub + 4 * i;
    v[i] = (row != nullptr && c < k) ? __ldg(row + c) : -1;
  }
  const bool more = row != nullptr && k > 16;
  unsigned first = kNone;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    if (v[i] >= 0) first = min(first, static_cast<unsigned>(v[i]));
  if (more)
    for (int c = sub + 16; c < k; c += 4) {
      const int p = __ldg(row + c);
      if (p >= 0) first = min(first, static_cast<unsigned>(p));
    }
  unsigned next = __reduce_min_sync(kFull, first);

  const int w = lane >> 1;
  const uint32_t half_mask = (lane & 1) ? 0xffff0000u : 0x0000ffffu;
  int total = 0;
  while (next != kNone) {  // warp-uniform
    const unsigned lo = next & ~31u;
    const unsigned long long hi = static_cast<unsigned long long>(lo) + 32ull * kRangeWords;
#pragma unroll
    for (int i = lane; i < kWarpWords; i += 32) sm[i] = 0u;
    __syncwarp();
    unsigned rest = kNone;
    auto place = [&](int p) {
      if (p < 0) return;
      const unsigned up = static_cast<unsigned>(p);
      if (up < lo) return;  // covered by an earlier range
      if (up >= hi) {
        rest = min(rest, up);
      } else {
        const unsigned off = up - lo;  // < 512: inside this position's 16 words
        atomicOr(sm + r * kRangeWords + (off >> 5), 1u << (off & 31));
      }
    };
#pragma unroll
    for (int i = 0; i < 4; ++i) place(v[i]);
    if (more)
      for (int c = sub + 16; c < k; c += 4) place(__ldg(row + c));
    __syncwarp();
    // region: membership-byte
    uint32_t m[kGroupSize];  // word w of each position's bitmap (positions >= size stay 0)
    uint32_t u = 0u;         // word w of U_G
#pragma unroll
    for (int s = 0; s < kGroupSize; ++s) {
      m[s] = sm[s * kRangeWords + w];
      u |= m[s];
    }
    const uint32_t mine = u & half_mask;
    const int c = __popc(mine);
    int incl = c;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(kFull, incl, d);
      if (lane >= d) incl += v;
    }
    if constexpr (EMIT) {
      int pos = base + total + incl - c;
      uint32_t todo = mine;
      while (todo != 0u) {
        const int bit = __ffs(todo) - 1;
        todo &= todo - 1u;
        unsigned mask = 0u;
#pragma unroll
        for (int s = 0; s < kGroupSize; ++s) mask |= ((m[s] >> bit) & 1u) << s;
        out.pages[pos] = static_cast<int>(lo + 32u * w + bit);
        out.masks[pos] = static_cast<uint8_t>(mask);
        out.cta_any[2 * pos] = (mask & 0x0Fu) != 0u;
        out.cta_any[2 * pos + 1] = (mask & 0xF0u) != 0u;
        ++pos;
      }
    }
    // endregion: membership-byte
    total += __shfl_sync(kFull, incl, 31);
    next = __reduce_min_sync(kFull, rest);
    __syncwarp();  // every lane has read sm before the next range clears it
  }
  return total;
}

__device__ __forceinline__ int block_sum(int v, int* sm_red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = __reduce_add_sync(kFull, v);
  if (lane == 0) sm_red[warp] = v;
  __syncthreads();
  int s = 0;
#pragma unroll
  for (int i = 0; i < kWarps; ++i) s += sm_red[i];
  __syncthreads();
  return s;
}

}  // namespace unions
}  // namespace pageweaver

using pageweaver::unions::kWarpWords;
using pageweaver::unions::kWarps;

// Prepared format "PPPPPiiii": topk, perm, groups, page_counts, tile_sums, num_groups, k,
// groups_per_warp, n (rows per head; a π entry outside [0, n) selects nothing). Block = 256 threads; tile t = groups [t·8·gpw, (t+1)·8·gpw).
extern "C" __global__ void __launch_bounds__(256) union_count(
    const int* __restrict__ topk, const int* __restrict__ perm, const int4* __restrict__ groups,
    int* __restrict__ page_counts, int* __restrict__ tile_sums, int num_groups, int k, int gpw,
    int n) {
  __shared__ uint32_t sm[kWarps * kWarpWords];
  __shared__ int sm_red[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const pageweaver::unions::Out none{nullptr, nullptr, nullptr};
  int mine = 0;
  const long long first = (static_cast<long long>(blockIdx.x) * kWarps + warp) * gpw;
  for (int i = 0; i < gpw; ++i) {
    const long long gi = first + i;
    if (gi >= num_groups) break;
    const int c = pageweaver::unions::union_group<false>(topk, perm, groups[gi], k, n,
                                                         sm + warp * kWarpWords, none, 0);
    if (lane == 0) page_counts[gi] = c;
    mine += c;
  }
  const int s = pageweaver::unions::block_sum(lane == 0 ? mine : 0, sm_red);
  if (threadIdx.x == 0) tile_sums[blockIdx.x] = s;
}

// Prepared format "PPPPPPPPPiiii": topk, perm, groups, page_counts, tile_sums, page_offsets,
// pages, masks, cta_any, num_groups, k, groups_per_warp, n. Same grid as union_count.
extern "C" __global__ void __launch_bounds__(256) union_emit(
    const int* __restrict__ topk, const int* __restrict__ perm, const int4* __restrict__ groups,
    const int* __restrict__ page_counts, const int* __restrict__ tile_sums,
    int* __restrict__ page_offsets, int* __restrict__ pages, uint8_t* __restrict__ masks,
    uint8_t* __restrict__ cta_any, int num_groups, int k, int gpw, int n) {
  __shared__ uint32_t sm[kWarps * kWarpWords];
  __shared__ int sm_red[kWarps];
  __shared__ int sm_warp[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // CSR base of this tile: the sums of all earlier tiles.
  int before = 0;
  for (int t = threadIdx.x; t < static_cast<int>(blockIdx.x); t += blockDim.x) before += tile_sums[t];
  const int tile_base = pageweaver::unions::block_sum(before, sm_red);
  // Base of this warp's run of groups inside the tile.
  const long long first = (static_cast<long long>(blockIdx.x) * kWarps + warp) * gpw;
  int own = 0;
  for (int i = lane; i < gpw; i += 32)
    if (first + i < num_groups) own += page_counts[first + i];
  own = __reduce_add_sync(0xffffffffu, own);
  if (lane == 0) sm_warp[warp] = own;
  __syncthreads();
  int base = tile_base;
  for (int i = 0; i < warp; ++i) base += sm_warp[i];

  const pageweaver::unions::Out out{pages, masks, cta_any};
  for (int i = 0; i < gpw; ++i) {
    const long long gi = first + i;
    if (gi >= num_groups) break;
    if (lane == 0) page_offsets[gi] = base;
    pageweaver::unions::union_group<true>(topk, perm, groups[gi], k, n, sm + warp * kWarpWords,
                                          out, base);
    base += page_counts[gi];
    if (lane == 0 && gi == num_groups - 1) page_offsets[num_groups] = base;
  }
}
