// The scheduler of the warp-specialized Union8 (warp 1 of the producer warpgroup): it takes
// the next group from the global group counter and writes the group's header, one group ahead
// of the loader and the consumers (two header buffers, b = j & 1 for the j-th group).
//
//   hfull[b]  the scheduler wrote header b                      (32 arrivals: warp 1)
//   hfree[b]  the loader and both consumers have read header b  (32 + 256 arrivals)
//
// Claim i runs group order[i]: the launch's groups sorted by |U_G|, largest first
// (claim_order, launched just before the kernel on the same stream). A persistent CTA's work
// is the sum of the groups it claims, so the launch ends when its busiest SM does; taking the
// longest groups first leaves only short groups for the end, where the SMs' loads even out
// (the longest-processing-time-first rule of list scheduling).
//
// The group counter: every CTA's scheduler claims groups until its claim is past the end, so
// a launch makes exactly H*G + gridDim.x claims, numbered 0 .. H*G + gridDim.x - 1 from a
// counter that is 0 when the launch starts. The scheduler that draws the last number knows
// every other claim is made, and sets the counter back to 0 for the next launch: no value is
// kept on the host, so a replayed CUDA graph finds 0 too. claim_group is the only code that
// touches the counter.
#pragma once

#include "union8ws_shared.cuh"

// 0: claim i runs group i, the plan's order (the order is still written: an A/B switch).
#ifndef PW_WS_CLAIM_ORDER
#define PW_WS_CLAIM_ORDER 1
#endif

namespace pageweaver {
namespace union8ws {

// Claims the next group for this CTA (warp-wide): true and its index w = head * G + group,
// or false once the claims are past the `total` groups of the launch.
__device__ __forceinline__ bool claim_group(const Args& a, int total, int lane, int& w) {
  unsigned long long claim = 0;
  if (lane == 0) {
    claim = atomicAdd(a.counter, 1ull);
    // The launch's last claim: no CTA touches the counter after it.
    if (claim == static_cast<unsigned long long>(total) + gridDim.x - 1) atomicExch(a.counter, 0ull);
  }
  claim = __shfl_sync(0xffffffffu, claim, 0);
  if (claim >= static_cast<unsigned long long>(total)) return false;
  w = PW_WS_CLAIM_ORDER ? __ldg(a.order + claim) : static_cast<int>(claim);
  return true;
}

// The inclusive prefix sum of v over the lanes of a full warp (kernels/union_emit.cuh writes
// the same loop out, where chapter 05 shows it).
__device__ __forceinline__ int warp_inclusive_sum(int v, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int up = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += up;
  }
  return v;
}

// order = the groups 0 .. total - 1 by |U_G| (counts), largest first, for one CTA of
// kOrderThreads threads: a counting sort on min(|U_G|, kOrderBins - 1), descending. Groups of
// equal count keep no fixed order among themselves (atomic ranks); every group computes the
// same bits whichever SM runs it.
constexpr int kOrderThreads = 1024, kOrderBins = 1024;
__device__ __forceinline__ void claim_order(const int* __restrict__ counts, int total,
                                            int* __restrict__ order) {
  __shared__ int bins[kOrderBins];
  __shared__ int warp_sums[kOrderThreads / 32];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  auto bin = [&](int i) { return kOrderBins - 1 - min(max(__ldg(counts + i), 0), kOrderBins - 1); };
  bins[tid] = 0;
  __syncthreads();
  for (int i = tid; i < total; i += kOrderThreads) atomicAdd(&bins[bin(i)], 1);
  __syncthreads();
  // exclusive prefix sum of the bins (one per thread): within each warp, then over the warps
  const int mine = bins[tid];
  const int incl = warp_inclusive_sum(mine, lane);
  if (lane == 31) warp_sums[warp] = incl;
  __syncthreads();
  if (warp == 0) {  // exclusive over the warps
    warp_sums[lane] = warp_inclusive_sum(warp_sums[lane], lane) - warp_sums[lane];
  }
  __syncthreads();
  bins[tid] = warp_sums[warp] + incl - mine;  // the first position of bin tid
  __syncthreads();
  for (int i = tid; i < total; i += kOrderThreads) order[atomicAdd(&bins[bin(i)], 1)] = i;
}

template <class Smem>
__device__ __forceinline__ void init_header_barriers(uint32_t base) {
  for (int b = 0; b < 2; ++b) {
    mbar_init(base + PW_AT(Smem, hfull) + 8 * b, 32);
    mbar_init(base + PW_AT(Smem, hfree) + 8 * b, kConsumerThreads + 32);
  }
}

template <class Smem>
__device__ __forceinline__ void schedule(const Args& a, uint32_t base, int lane) {
  const int total = a.plan.kv_heads * a.plan.num_groups;
  for (int j = 0;; ++j) {
    const int b = j & 1;
    const uint32_t h = base + PW_AT(Smem, headers) + b * kHeaderBytes;
    const uint32_t hfull = base + PW_AT(Smem, hfull) + 8 * b;
    if (j >= 2) mbar_wait(base + PW_AT(Smem, hfree) + 8 * b, ((j >> 1) - 1) & 1);  // j - 2 read
    int w;
    if (!claim_group(a, total, lane, w)) {
      if (lane == 0) sts(h + kHWork, -1);
      __syncwarp();
      arrive(hfull);
      return;
    }
    const int head = w / a.plan.num_groups;
    const int4 gs = __ldg(a.plan.groups + w);
    const int p_begin = __ldg(a.plan.page_offsets + w);
    const int count = __ldg(a.plan.page_counts + w);
    int id = -1, lim = 0;
    if (lane < kGroupSlots && lane < gs.y) id = __ldg(a.plan.perm + gs.x + lane);
    if (id >= 0 && id < a.plan.n) {
      lim = kNoLimit;
      if (a.plan.causal_pos) lim = min(lim, __ldg(a.plan.causal_pos + id) + 1);  // t <= c_i
      if (a.plan.lengths) lim = min(lim, __ldg(a.plan.lengths + id));            // t <  L_i
    } else {
      id = -1;
    }
    if (lane == 0) {
      sts(h + kHWork, w);
      sts(h + kHBegin, p_begin);
      sts(h + kHCount, count);
      sts(h + kHHead, head);
    }
    if (lane < kGroupSlots) {
      sts(h + kHQid + 4 * lane, id);
      sts(h + kHLim + 4 * lane, lim);
    }
    arrive(hfull);  // 32 arrivals: the header is written
  }
}

}  // namespace union8ws
}  // namespace pageweaver
