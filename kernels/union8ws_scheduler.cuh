// The scheduler of the warp-specialized Union8 (warp 1 of the producer warpgroup): it takes
// the next group from the global group counter and writes the group's header, one group ahead
// of the loader and the consumers (two header buffers, b = j & 1 for the j-th group).
//
//   hfull[b]  the scheduler wrote header b                      (32 arrivals: warp 1)
//   hfree[b]  the loader and both consumers have read header b  (32 + 256 arrivals)
//
// The group counter: every CTA's scheduler claims groups until its claim is past the end, so
// a launch makes exactly H*G + gridDim.x claims, numbered 0 .. H*G + gridDim.x - 1 from a
// counter that is 0 when the launch starts. The scheduler that draws the last number knows
// every other claim is made, and sets the counter back to 0 for the next launch: no value is
// kept on the host, so a replayed CUDA graph finds 0 too. claim_group is the only code that
// touches the counter.
#pragma once

#include "union8ws_shared.cuh"

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
  w = static_cast<int>(claim);
  return claim < static_cast<unsigned long long>(total);
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
