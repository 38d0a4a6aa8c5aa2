// The epilogue of the warp-specialized Union8: each of my rows writes its output row of its
// query and local head (ConsumerRing::slot and local_head), o[π[r]] = bf16(O * v_scale / l),
// straight from the running state's registers (union8ws_softmax_state.cuh;
// fp8::store_row_pair; 0 for a row that saw no token). A row of an empty slot writes nothing.
#pragma once

#include "union8ws_softmax_state.cuh"

namespace pageweaver {
namespace union8ws {

// kVScale: O carries V's E4M3 scale (FP8 cache), applied here; kQuadSum: l is this thread's
// part of the row sums (summed over the quad first), else every lane holds the whole sums.
template <bool kVScale, bool kQuadSum = true, class Ring>
__device__ __forceinline__ void store_query(const Args& a, const Ring& w, const SoftmaxState& s,
                                            int g, int t) {
  const int head = w.head(), q_lo = w.qid(w.slot(0)), q_hi = w.qid(w.slot(1));
  if (q_lo < 0 && q_hi < 0) return;  // warp-uniform
  auto row = [&](int qid, int hr) {
    return a.o + ((static_cast<size_t>(max(qid, 0)) * a.plan.kv_heads + head) * kHeads +
                  w.local_head(g, hr)) * kDim;
  };
  store_row_pair<kQuadSum>(row(q_lo, 0), row(q_hi, 1), q_lo >= 0, q_hi >= 0, s.o, s.l[0],
                           s.l[2], kVScale ? __ldg(a.v_scale + head) : 1.f, t);
}

}  // namespace union8ws
}  // namespace pageweaver
