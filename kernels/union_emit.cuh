// One group's page union U_G built by one warp (docs/definitions.md#union-preparation), shared
// by the two-pass union preparation (kernels/union_prepare.cu) and the fused online regroup
// (kernels/regroup.cu): |U_G|, and with EMIT its pages (ascending), one membership byte per
// page (bit r: member position r selects it) and, where asked for, the two per-CTA "any
// member" flags, written from position `base` on.
//
// The warp builds one 512-page bitmap per member position (8 x 16 words in shared memory) over
// a range [lo, lo + 512) of page ids, lo = the smallest id not yet covered (aligned to a word),
// and repeats while ids remain above the range: any non-negative int32 page id works, not
// only ids below the regroup capacity B, and no id indexes past a bitmap. Lane l owns half a
// word of the range (word l/2, bits 16·(l%2) … +15): lane order is page order, so a warp
// prefix sum of the per-lane popcounts places every page of U_G.
#pragma once

#include "pageweaver_common.cuh"

#include <stdint.h>

namespace pageweaver {
namespace unions {

constexpr int kRangeWords = kBitmapWords;          // 16 words = 512 pages per pass
constexpr int kWarpWords = kGroupSize * kRangeWords;  // 8 positions × 16 words
constexpr unsigned kFull = 0xffffffffu;
constexpr unsigned kNone = 0xffffffffu;

struct Out {
  int* pages;        // page ids of every U_G, ascending inside a group
  uint8_t* masks;    // membership bytes
  uint8_t* cta_any;  // [., 2] (mask & 0x0F) != 0, (mask & 0xF0) != 0 (written when kFlags)
};

// |U_G| of one group; with EMIT also writes its pages at out position `base` (and with kFlags
// the CTA flags). Lanes 4r .. 4r+3 read member position r's K ids from `row` (its Top-K row,
// nullptr for a position without a query: it selects nothing); sm is the warp's kWarpWords
// words of shared memory.
template <bool EMIT, bool kFlags = true>
__device__ __forceinline__ int union_group(const int* __restrict__ row, int k, uint32_t* sm,
                                           Out out, int base) {
  const int lane = threadIdx.x & 31;
  const int r = lane >> 2, sub = lane & 3;  // 4 lanes read the K ids of position r
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
        if constexpr (kFlags) {
          out.cta_any[2 * pos] = (mask & 0x0Fu) != 0u;
          out.cta_any[2 * pos + 1] = (mask & 0xF0u) != 0u;
        }
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

}  // namespace unions
}  // namespace pageweaver
