// The epilogue of the warp-specialized Union8: my warp's query (slot 4c + warp of the group)
// writes its 16 x 128 output block, o[π[r]] = bf16(O * v_scale / l), straight from the
// running state's registers (union8ws_softmax_state.cuh; fp8::store_rows; 0 for a row that saw
// no token). An empty slot writes nothing.
#pragma once

#include "union8ws_softmax_state.cuh"

namespace pageweaver {
namespace union8ws {

// kVScale: O carries V's E4M3 scale (FP8 cache), applied here; kQuadSum: l is this thread's
// part of the row sums (summed over the quad first), else every lane holds the whole sums.
template <bool kVScale, bool kQuadSum = true>
__device__ __forceinline__ void store_query(const Args& a, int qid, int head,
                                            const SoftmaxState& s, int g, int t) {
  if (qid >= 0) {
    store_rows<kQuadSum>(
        a.o + (static_cast<size_t>(qid) * a.plan.kv_heads + head) * kHeads * kDim, s.o,
        s.l[0], s.l[2], kVScale ? __ldg(a.v_scale + head) : 1.f, g, t);
  }
}

}  // namespace union8ws
}  // namespace pageweaver
