// The BF16 mainloop of the warp-specialized Union8: BF16 K/V, one stage = half a page
// (bf16_wgmma.cuh), the PV accumulates into O (BF16 products accumulate in FP32). Stage k's PV
// runs while stage k + 1's softmax runs; O is rescaled by stage k + 1's a once that PV is done,
// before stage k + 1's PV is issued. The interface is the one union8ws_mainloop_fp8.cuh
// describes.
#pragma once

#include "bf16_wgmma.cuh"
#include "union8ws_epilogue.cuh"
#include "union8ws_ring.cuh"
#include "union8ws_softmax_state.cuh"

namespace pageweaver {
namespace union8ws {

struct Bf16Mainloop : SoftmaxState {
  static constexpr bool kPairedRows = false;  // one query per warp
  static constexpr int kStagesPerPage = 2;
  struct Frag {
    uint32_t p[bf16::kPVSteps][4];  // P in BF16, the A fragments of PV
    float al_lo, al_hi;             // a = 2^(m - m') of rows g, g + 8
  };

  int tid, warp, g, t;
  uint32_t q_tile;
  float c;  // softmax scale * log2 e
  float d[32];

  __device__ __forceinline__ Bf16Mainloop(const Args& a, uint32_t q_tile_, int tid_)
      : tid(tid_), warp(tid_ >> 5), g((tid_ & 31) >> 2), t(tid_ & 3), q_tile(q_tile_),
        c(a.plan.scale_log2) {}
  template <class Ring>
  __device__ __forceinline__ void load_q(const Args&, const Ring& w, int q_stage) {
    uint32_t present = 0;  // bit r: slot 4c + r holds a query
#pragma unroll
    for (int r = 0; r < kConsumerSlots; ++r) {
      present |= (w.qid(kConsumerSlots * w.c + r) >= 0 ? 1u : 0u) << r;
    }
    bf16::copy_q_tile(w.stage(q_stage) + kConsumerSlots * w.c * kQRowBytes, q_tile, tid, present);
  }

  // The softmax step of my warp on the stage pg (P = 0 and a = 1 when my query does not see
  // it).
  __device__ __forceinline__ void softmax(const Page& pg, Frag& f) {
    f.al_lo = f.al_hi = 1.f;
    const int vis = pg.seen();
    SoftmaxSums st;
    if (vis >= bf16::kStageTokens) {
      softmax_max<false, bf16::kStageTokens, 0>(d, vis, t, c, c, m_lo, m_hi, f.al_lo, f.al_hi,
                                                st);
      bf16::softmax_exps<false>(d, vis, t, c, st, f.p);
      add_sums(f.al_lo, f.al_hi, st);
    } else if (vis > 0) {  // causal / length tail inside this stage
      softmax_max<true, bf16::kStageTokens, 0>(d, vis, t, c, c, m_lo, m_hi, f.al_lo, f.al_hi,
                                               st);
      bf16::softmax_exps<true>(d, vis, t, c, st, f.p);
      add_sums(f.al_lo, f.al_hi, st);
    } else {
#pragma unroll
      for (int ks = 0; ks < bf16::kPVSteps; ++ks) {
        f.p[ks][0] = f.p[ks][1] = f.p[ks][2] = f.p[ks][3] = 0u;
      }
    }
  }

  template <class Ring>
  __device__ __forceinline__ void first(const Ring& w, const Page& cur, Frag& f) {
    bf16::issue_qk(d, q_tile, w.stage(cur.s()));
    wgmma_wait<0>();
    fence_acc(d);
    softmax(cur, f);
    if (cur.seen()) rescale_o(f.al_lo, f.al_hi);
  }
  template <class Ring>
  __device__ __forceinline__ void step(const Ring& w, const Page& cur, const Frag& f,
                                       const Page& nxt, Frag& f_nxt) {
    bf16::issue_qk(d, q_tile, w.stage(nxt.s()));
    bf16::issue_pv(o, f.p, w.stage(cur.s()) + bf16::kTileBytes);
    wgmma_wait<1>();
    fence_acc(d);
    softmax(nxt, f_nxt);
    wgmma_wait<0>();
    fence_acc(o);
    if (nxt.seen()) rescale_o(f_nxt.al_lo, f_nxt.al_hi);
  }
  template <class Ring>
  __device__ __forceinline__ void last(const Ring& w, const Page& cur, const Frag& f) {
    bf16::issue_pv(o, f.p, w.stage(cur.s()) + bf16::kTileBytes);
    wgmma_wait<0>();
    fence_acc(o);
  }
  template <class Ring>
  __device__ __forceinline__ void store(const Args& a, const Ring& w) const {
    store_query<false>(a, w, *this, g, t);
  }
};

}  // namespace union8ws
}  // namespace pageweaver
