// The running state of the online softmax in the warp-specialized Union8 (kernels/union8ws.cu),
// one definition for every mainloop: per consumer thread, its part of O, m and l on its rows
// g and g + 8 (their queries and heads: ConsumerRing::slot, local_head), carried from page to
// page of a group and read by the epilogue.
// The mainloops inherit it; begin_group() opens each group.
#pragma once

#include "union8ws_shared.cuh"

namespace pageweaver {
namespace union8ws {

struct SoftmaxState {
  float o[64];       // O of rows g, g + 8 (the accumulator layout: columns e < 2 row g)
  float m_lo, m_hi;  // running maxima m of rows g, g + 8 (log2 units)
  // l in the layout of an m64n8 accumulator: l[0] row g, l[2] row g + 8, so a wgmma can add
  // P8's row sums into it (the lazy FP8 mainloop with PW_WS_TC_SUM); l[1], l[3] hold the same
  // rows there and are unused elsewhere. This thread's part of the sums, or the whole sums
  // where the tensor core adds them (the epilogue's kQuadSum).
  float l[4];

  // O = 0, m = -inf, l = 0: before a group's first page.
  __device__ __forceinline__ void begin_group() {
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
    m_lo = m_hi = -INFINITY;
#pragma unroll
    for (int i = 0; i < 4; ++i) l[i] = 0.f;
  }
  // l = l a + sum p of a page's softmax step (st: softmax_max then softmax_exps).
  __device__ __forceinline__ void add_sums(float al_lo, float al_hi, const SoftmaxSums& st) {
    softmax_finish(al_lo, al_hi, st, l[0], l[2]);
  }
  // O = O a on rows g (columns e < 2) and g + 8 (e >= 2), where O accumulates in the tensor
  // core: before the next PV adds into it.
  __device__ __forceinline__ void rescale_o(float al_lo, float al_hi) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      o[4 * j + 0] *= al_lo;
      o[4 * j + 1] *= al_lo;
      o[4 * j + 2] *= al_hi;
      o[4 * j + 3] *= al_hi;
    }
  }
};

}  // namespace union8ws
}  // namespace pageweaver
