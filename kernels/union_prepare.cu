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
// Per group, one warp builds U_G (kernels/union_emit.cuh).
#include "union_emit.cuh"

#include <stdint.h>

namespace pageweaver {
namespace unions {

constexpr int kWarps = 8;  // warps (groups in flight) per CTA

// Lane 4r + sub's Top-K row: member position r's original query π[base + r] of a group
// grp = (first position in perm, members <= 8, row base of its KV head, 0); nullptr for a
// position past the group or a π entry outside [0, n).
__device__ __forceinline__ const int* member_row(const int* __restrict__ topk,
                                                 const int* __restrict__ perm, int4 grp, int k,
                                                 int n) {
  const int r = (threadIdx.x & 31) >> 2;
  if (r >= grp.y) return nullptr;
  const int pi = __ldg(perm + grp.x + r);  // original id of position r, head-local
  return pi >= 0 && pi < n ? topk + (static_cast<long long>(grp.z) + pi) * k : nullptr;
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
    const int c = pageweaver::unions::union_group<false>(
        pageweaver::unions::member_row(topk, perm, groups[gi], k, n), k, sm + warp * kWarpWords,
        none, 0);
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
    pageweaver::unions::union_group<true>(
        pageweaver::unions::member_row(topk, perm, groups[gi], k, n), k, sm + warp * kWarpWords,
        out, base);
    base += page_counts[gi];
    if (lane == 0 && gi == num_groups - 1) page_offsets[num_groups] = base;
  }
}
