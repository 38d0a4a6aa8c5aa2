// The lazy FP8 mainloop of the warp-specialized Union8 (PW_WS_LAZY, a measured alternative):
// O accumulates in the tensor core across pages (and l too with PW_WS_TC_SUM); a row rescales
// them only when a page's maximum passes its reference maximum by more than kLazyTau (log2
// units), so most pages run no fold and no rescale on the CUDA cores. The interface is the
// one union8ws_mainloop_fp8.cuh describes.
#pragma once

#include "union8ws_mainloop_fp8.cuh"

namespace pageweaver {
namespace union8ws {

constexpr int kLazyShift = 6;     // p = 2^(6 + rf S - m): at most 2^(6 + kLazyTau) = 256
constexpr float kLazyTau = 2.f;   // a row rescales only when its maximum grows by more

struct Fp8LazyMainloop : Fp8QTile, SoftmaxState {
  static constexpr bool kPairedRows = false;  // one query per warp
  static constexpr int kStagesPerPage = 1;
  struct Frag {
    uint32_t p[kKSteps][4];  // P8, the A fragments of PV
  };

  // m of the running state holds the rows' reference maxima (log2 units).
  float d[64];  // S

  __device__ __forceinline__ Fp8LazyMainloop(const Args&, uint32_t q_tile, int tid)
      : Fp8QTile(q_tile, tid) {}

  // The lazy online-softmax step of my warp on page pg: the page maximum; rows whose maximum
  // passes their reference m by more than kLazyTau first scale O and l by 2^(m - m') (after
  // the pending PV completed: O is a tensor-core accumulator) and take m'; then p into the A
  // fragments. A row's first visible page only sets m (O and l are still 0). With PW_WS_TC_SUM
  // l is the m64n8 accumulator of the row sums of P8 (whole sums), else this thread's FP32
  // partial sums in l[0] and l[2] (summed over the quad at the end).
  __device__ __forceinline__ void softmax(const Page& pg, Frag& f) {
    const int vis = pg.seen();
    if (vis == 0 || !kSoftmaxStep) {
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) f.p[ks][0] = f.p[ks][1] = f.p[ks][2] = f.p[ks][3] = 0u;
      return;
    }
    float mx_lo, mx_hi;
    if (vis < kPage) {
      page_max<true>(d, vis, vis, t, mx_lo, mx_hi);
    } else {
      page_max<false>(d, kPage, kPage, t, mx_lo, mx_hi);
    }
    const float n_lo = mx_lo * rf_lo, n_hi = mx_hi * rf_hi;  // rf >= 0 keeps the order of S
    const bool up_lo = n_lo > m_lo + kLazyTau, up_hi = n_hi > m_hi + kLazyTau;
    const bool rs_lo = up_lo && m_lo != -INFINITY, rs_hi = up_hi && m_hi != -INFINITY;
    if (__any_sync(0xffffffffu, rs_lo || rs_hi)) {
      wgmma_wait<0>();
      fence_acc(o);
      fence_acc(l);
      const float a_lo = rs_lo ? ex2(m_lo - n_lo) : 1.f, a_hi = rs_hi ? ex2(m_hi - n_hi) : 1.f;
      rescale_o(a_lo, a_hi);
      l[0] *= a_lo;
      l[1] *= a_lo;
      l[2] *= a_hi;
      l[3] *= a_hi;
    }
    m_lo = up_lo ? n_lo : m_lo;
    m_hi = up_hi ? n_hi : m_hi;
    SoftmaxSums st;
    st.sh_lo = static_cast<float>(kLazyShift) - m_lo;
    st.sh_hi = static_cast<float>(kLazyShift) - m_hi;
    st.sum_lo = st.sum_hi = 0.f;
    if (vis < kPage) {
      softmax_exps<true, 0, kKSteps, !PW_WS_TC_SUM>(d, vis, t, rf_lo, rf_hi, st, f.p);
    } else {
      softmax_exps<false, 0, kKSteps, !PW_WS_TC_SUM>(d, kPage, t, rf_lo, rf_hi, st, f.p);
    }
    if constexpr (!PW_WS_TC_SUM) {
      l[0] += st.sum_lo;
      l[2] += st.sum_hi;
    }
  }

  // O += P8 V8 (and l += P8 x ones with PW_WS_TC_SUM) for the page at stage address st: one
  // committed group that accumulates into the running O and l.
  __device__ __forceinline__ void issue_pv(const Frag& f, uint32_t st) {
    if constexpr (kProducts) {
      const uint64_t desc = sw128_desc(st + kTileBytes), od = sw128_desc(ones);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) wgmma_m64n128k32<true>(o, f.p[ks], desc + 2 * ks);
      if constexpr (PW_WS_TC_SUM) {
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) wgmma_m64n8k32<true>(l, f.p[ks], od + 2 * ks);
      }
      wgmma_commit();
    }
  }
  __device__ __forceinline__ void finish() {  // the pending PV is done (its stage is free)
    wgmma_wait<0>();
    fence_acc(o);
    fence_acc(l);
  }

  template <class Ring>
  __device__ __forceinline__ void first(const Ring& w, const Page& cur, Frag& f) {
    issue_qk(d, q8, w.stage(cur.s()));
    wgmma_wait<0>();
    fence_acc(d);
    softmax(cur, f);
  }
  // Page k's PV runs on the tensor cores while page k + 1's softmax runs on the CUDA cores.
  template <class Ring>
  __device__ __forceinline__ void step(const Ring& w, const Page& cur, const Frag& f,
                                       const Page& nxt, Frag& f_nxt) {
    issue_qk(d, q8, w.stage(nxt.s()));
    issue_pv(f, w.stage(cur.s()));
    wgmma_wait<1>();  // S of the next page is there; the PV still runs
    fence_acc(d);
    softmax(nxt, f_nxt);
    finish();
  }
  template <class Ring>
  __device__ __forceinline__ void last(const Ring& w, const Page& cur, const Frag& f) {
    issue_pv(f, w.stage(cur.s()));
    finish();
  }
  // O and l both carry the 2^6 of p; V's scale here.
  template <class Ring>
  __device__ __forceinline__ void store(const Args& a, const Ring& w) const {
    store_query<true, !PW_WS_TC_SUM>(a, w, *this, g, t);
  }
};

}  // namespace union8ws
}  // namespace pageweaver
