// The FP8 mainloop of the warp-specialized Union8 (the fast mode): one stage = one page, the
// cluster kernel's arithmetic op for op (fp8_wgmma.cuh), so the two kernels' outputs are
// bitwise identical. Per working page consumer c computes, on its M64 tile (4 queries x 16
// local heads):
//   S = Q8 K8^T (Q8 in shared memory, quantized by the consumer at the group's Q stage);
//   the online-softmax step on the rows whose query sees the page (other rows do no
//   exponentials and skip the fold; a warp with no such row does nothing), each warp holding
//   8 heads of two queries (paired rows, ConsumerRing); the causal / length column mask only
//   on a partially visible page;
//   O_p = P8 V8 in two halves of 64 output dims, each folded as O = fma(O, a, O_p).
//
// Every mainloop (this file, union8ws_mainloop_fp8_lazy.cuh, union8ws_mainloop_fp8acc.cuh,
// union8ws_mainloop_bf16.cuh) has the interface the page walk of union8ws.cu calls:
//   kStagesPerPage                  ring stages per page
//   Frag                            what one page hands from its softmax to its PV (the walk
//                                   keeps two and alternates them)
//   Mainloop(a, q_tile, tid)        per consumer: its Q tile in shared memory, thread in it
//   load_q(a, ring, q_stage)        the group's Q tile from its Q stage
//   begin_group()                   O = 0, m = -inf, l = 0 (every mainloop inherits the
//                                   running state O, m, l: union8ws_softmax_state.cuh)
//   first(ring, cur, f)             S of the group's first working page, its softmax into f
//   step(ring, cur, f, nxt, f_nxt)  PV of cur (f) and S + softmax of nxt (into f_nxt)
//   last(ring, cur, f)              PV of the group's last working page
//   kPairedRows                     which rows hold which query (ConsumerRing)
//   store(a, ring)                  the epilogue of my rows
// The walk converges the warp before each call that starts a wgmma (.aligned) and releases
// the stage of cur after step and last.
#pragma once

#include "union8ws_epilogue.cuh"
#include "union8ws_ring.cuh"
#include "union8ws_softmax_state.cuh"

#include <type_traits>

// 1: a consumer starts the next page's QK and the current page's PV together and runs the
// next page's softmax while the tensor cores work (FlashAttention-3's intra-warpgroup
// overlap); 0: QK, softmax, PV one after the other.
#ifndef PW_WS_OVERLAP
#define PW_WS_OVERLAP 1
#endif
// 1: the overlapped step of the cluster kernel's arithmetic runs on paired rows
// (ConsumerRing): each query's 16 heads on two warps, 8 each, so a page that one query of the
// consumer sees runs its 64 exponentials per row pair on two warps, not one; 0: one query per
// warp (the other FP8 mainloops always).
#ifndef PW_WS_PAIRS
#define PW_WS_PAIRS 1
#endif
// 1: the FP8 consumer takes a page's sum p from the tensor core (P8 times a tile of E4M3 ones,
// issued with the second half of PV), so the softmax step runs no serial FADD chains and l sums
// exactly the E4M3 P that PV multiplies; 0: the cluster kernel's FP32 sums on the CUDA cores
// (then both kernels' outputs are bitwise identical).
#ifndef PW_WS_TC_SUM
#define PW_WS_TC_SUM 0
#endif
namespace pageweaver {
namespace union8ws {

constexpr int kOnesOffset = kQTileBytes / 2;  // a 1 KiB tile of E4M3 ones behind Q8
static_assert(kOnesOffset + kOnesTileBytes <= kQTileBytes, "the ones tile fits behind Q8");

// S = Q8 K8^T of the page at stage address st, issued (not waited for).
__device__ __forceinline__ void issue_qk(float (&d)[64], uint32_t q8, uint32_t st) {
  if constexpr (kProducts) {
    wgmma_issue_ss(d, q8, st);
  } else {  // the ablation builds (PW_ABLATE, fp8_wgmma.cuh)
    opaque_accumulator(d);
  }
}

// The Q rows of my rows g and g + 8 (their query's local heads, ConsumerRing::slot and
// local_head) from the group's Q stage (BF16, 0 for an empty slot), as raw holds them for
// quantize_q_rows (fp8_wgmma.cuh).
template <class Ring>
__device__ __forceinline__ void load_q_rows(const Ring& w, int q_stage, int g, int t,
                                            uint2 (&raw)[2][2 * kKSteps]) {
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int slot = w.slot(hr);
    const bool present = w.qid(slot) >= 0;
    const uint32_t qrow = w.stage(q_stage) + slot * kQRowBytes + 2 * w.local_head(g, hr) * kDim;
#pragma unroll
    for (int cc = 0; cc < 2 * kKSteps; ++cc) {
      const int col = 32 * (cc >> 1) + 16 * (cc & 1) + 4 * t;
      raw[hr][cc] = present ? lds64(qrow + 2 * col) : make_uint2(0u, 0u);
    }
  }
}

// My rows' Q -> E4M3 -> my Q8 tile, and the row factors rf (my previous group's QKs
// have all completed, so the tile is free).
template <class Ring>
__device__ __forceinline__ void build_q8(const Args& a, const Ring& w, int q_stage, uint32_t q8,
                                         int g, int t, float& rf_lo, float& rf_hi) {
  uint2 raw[2][2 * kKSteps];
  uint32_t qa[kKSteps][4];
  load_q_rows(w, q_stage, g, t, raw);
  quantize_q_rows(raw, __ldg(a.k_scale + w.head()) * a.plan.scale_log2, qa, rf_lo, rf_hi);
  store_a_tile(q8, qa, w.warp, g, t);
}

// Every consumer thread writes 8 bytes of its consumer's 1 KiB tile of E4M3 ones (B of the
// row-sum product); the first close_q's proxy fence and barrier publish it to the tensor cores.
__device__ __forceinline__ void fill_ones(uint32_t ones, int tid) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %1};" ::"r"(ones + 8 * tid), "r"(kE4m3OnesWord)
               : "memory");
}

// The rows of a page step, given the tokens my rows see (seen: Page::rows_seen). on_seen_rows
// calls part(masked, rows, vis_lo, vis_hi) on the rows whose query sees the page, each with its
// query's visible tokens: the rows a whole page is visible to (rows = kBothRows, kRowLo or
// kRowHi, masked false), or on a page one of them sees only in part both rows masked, where a
// row that sees nothing (vis 0) must keep its m, l and O. with_seen_rows calls fn(rows) with
// the rows that see any of the page (kBothRows, kRowLo, kRowHi or 0).
template <int kRows>
using Rows = std::integral_constant<int, kRows>;
template <class Part>
__device__ __forceinline__ void on_seen_rows(int2 seen, Part part) {
  const int vl = seen.x, vh = seen.y;
  if (vl == kPage && vh == kPage) {
    part(std::false_type{}, Rows<kBothRows>{}, kPage, kPage);
  } else if (vl == kPage && vh == 0) {
    part(std::false_type{}, Rows<kRowLo>{}, kPage, kPage);
  } else if (vl == 0 && vh == kPage) {
    part(std::false_type{}, Rows<kRowHi>{}, kPage, kPage);
  } else if (vl | vh) {
    part(std::true_type{}, Rows<kBothRows>{}, vl, vh);
  }
}
template <class Fn>
__device__ __forceinline__ void with_seen_rows(int2 seen, Fn fn) {
  if (seen.x && seen.y) {
    fn(Rows<kBothRows>{});
  } else if (seen.x) {
    fn(Rows<kRowLo>{});
  } else if (seen.y) {
    fn(Rows<kRowHi>{});
  } else {
    fn(Rows<0>{});
  }
}
// Part A (kBegin 0, the maxima first) or B (kEnd kKSteps, l last) of a page's softmax step on
// the rows whose query sees it (on_seen_rows); exps(masked, rows, vis_lo, vis_hi) makes the
// exponentials of k-steps [kBegin, kEnd) in S's registers ml.d and whatever the mainloop keeps
// of them.
template <int kBegin, int kEnd, class Mainloop, class Frag, class Exps>
__device__ __forceinline__ void softmax_part_on_rows(Mainloop& ml, int2 seen, Frag& f,
                                                     Exps exps) {
  on_seen_rows(seen, [&](auto masked, auto rows, int vl, int vh) {
    constexpr bool kMasked = decltype(masked)::value;
    constexpr int kRows = decltype(rows)::value;
    if constexpr (kBegin == 0) {
      softmax_max_rows<kMasked, kRows, kMasked>(ml.d, vl, vh, ml.t, ml.rf_lo, ml.rf_hi, ml.m_lo,
                                                ml.m_hi, f.al_lo, f.al_hi, f.st);
    }
    exps(masked, rows, vl, vh);
    if constexpr (kEnd == kKSteps) softmax_finish<kRows>(f.al_lo, f.al_hi, f.st, ml.l[0], ml.l[2]);
  });
}
// O = fma(O, a, O_p) on half kHalf of the rows whose query sees the page.
template <int kHalf>
__device__ __forceinline__ void fold_seen_rows(int2 seen, float (&o)[64], const float (&op)[32],
                                               float al_lo, float al_hi) {
  with_seen_rows(seen, [&](auto rows) {
    if constexpr (decltype(rows)::value != 0) {
      fold_half<kHalf, decltype(rows)::value>(o, op, al_lo, al_hi);
    }
  });
}

// Two page steps the fast and the accurate FP8 mainloops share. S of page cur and the softmax
// step on it with nothing else in flight (the group's first working page; the serial
// schedule):
template <class Mainloop, class Ring, class Frag>
__device__ __forceinline__ void s_and_softmax(Mainloop& ml, const Ring& w, const Page& cur,
                                              Frag& f) {
  ml.issue_s(w.stage(cur.s()));
  wgmma_wait<0>();
  fence_acc(ml.d);
  ml.softmax_a(cur, f);
  ml.softmax_b(cur, f);
}
// The PV of page cur in its two halves of 64 output dims, each folded once done (the group's
// last working page; the serial schedule).
template <class Mainloop, class Ring, class Frag>
__device__ __forceinline__ void pv_halves(Mainloop& ml, const Ring& w, const Page& cur,
                                          const Frag& f) {
  ml.template issue_pv<0>(f, w.stage(cur.s()));
  ml.template fold<0>(cur, f);
  ml.template issue_pv<1>(f, w.stage(cur.s()));
  ml.template fold<1>(cur, f);
}

// What the fast and the lazy FP8 mainloops share: the consumer's Q8 tile (and the ones tile
// behind it), my thread's place in the fragments, Q8's row factors rf.
struct Fp8QTile {
  int warp, g, t;
  uint32_t q8, ones;
  float rf_lo, rf_hi;  // Q8's row factors (log2 units)

  __device__ __forceinline__ Fp8QTile(uint32_t q_tile, int tid)
      : warp(tid >> 5), g((tid & 31) >> 2), t(tid & 3),
        q8(q_tile), ones(q_tile + kOnesOffset) {
    if constexpr (PW_WS_TC_SUM) fill_ones(ones, tid);
  }
  template <class Ring>
  __device__ __forceinline__ void load_q(const Args& a, const Ring& w, int q_stage) {
    build_q8(a, w, q_stage, q8, g, t, rf_lo, rf_hi);
  }
};

struct Fp8Mainloop : Fp8QTile, SoftmaxState {
  static constexpr int kStagesPerPage = 1;
  // The online-softmax step of a page comes in two parts (softmax_a: the row maxima and the
  // exponentials of columns 0 .. 63; softmax_b: columns 64 .. 127 and the running sums), each
  // filling half of the P fragments, so each can run behind one half of the previous PV.
  struct Frag {
    uint32_t p[kKSteps][4] = {};  // P8, the A fragments of PV (0 in a new Frag)
    SoftmaxSums st;
    float al_lo, al_hi;      // a = 2^(m - m') of rows g, g + 8
  };

  float d[64], op[32], rs[4];  // S; half of O_p; the page's row sums (PW_WS_TC_SUM)

  // The overlapped step of the cluster kernel's arithmetic (PW_WS_OVERLAP without
  // PW_WS_TC_SUM) reads its two pages and the Q8 address through warp_uniform
  // (union8ws_shared.cuh): the compiler then makes the wgmma descriptors in uniform registers
  // and knows that the whole warp takes each branch on seen, so it needs no reconvergence
  // point there and the __syncwarp() before the next wgmma finds the warp converged.
  static constexpr bool kUniformPages = PW_WS_OVERLAP && !PW_WS_TC_SUM;
  static constexpr bool kPairedRows = PW_WS_PAIRS && kUniformPages && kSoftmaxStep;

  __device__ __forceinline__ Fp8Mainloop(const Args&, uint32_t q_tile, int tid)
      : Fp8QTile(q_tile, tid) {
    if constexpr (kUniformPages) q8 = warp_uniform(q8);
  }

  // My rows' softmax step on page pg, part A then part B. When their query does not see the
  // page: P = 0 and a = 1; with kUniformPages P and a as they were (the group's frags start at
  // 0), since the rows of O_p that my P gives are my own and my fold skips them (the
  // no_softmax ablation writes P = 0 and a = 1 on every page).
  static constexpr bool kZeroUnseen = !kUniformPages || !kSoftmaxStep;
  // Paired rows: part A or B, the E4M3 P fragments made as the exponentials are.
  template <int kBegin, int kEnd>
  __device__ __forceinline__ void paired_exps(const Page& pg, Frag& f) {
    const int2 seen = pg.rows_seen<true>();
    softmax_part_on_rows<kBegin, kEnd>(*this, seen, f, [&](auto masked, auto rows, int vl, int vh) {
      softmax_exps_rows<decltype(masked)::value, kBegin, kEnd, true, decltype(rows)::value>(
          d, vl, vh, t, rf_lo, rf_hi, f.st, f.p);
    });
  }
  __device__ __forceinline__ void softmax_a(const Page& pg, Frag& f) {
    if constexpr (kPairedRows) return paired_exps<0, 2>(pg, f);
    const int vis = pg.seen();
    if (vis > 0 && kSoftmaxStep) {
      if (vis < kPage) {  // causal / length tail inside this page
        softmax_max<true>(d, vis, t, rf_lo, rf_hi, m_lo, m_hi, f.al_lo, f.al_hi, f.st);
        softmax_exps<true, 0, 2, !PW_WS_TC_SUM>(d, vis, t, rf_lo, rf_hi, f.st, f.p);
      } else {
        softmax_max<false>(d, kPage, t, rf_lo, rf_hi, m_lo, m_hi, f.al_lo, f.al_hi, f.st);
        softmax_exps<false, 0, 2, !PW_WS_TC_SUM>(d, kPage, t, rf_lo, rf_hi, f.st, f.p);
      }
    } else if constexpr (kZeroUnseen) {
      f.al_lo = f.al_hi = 1.f;
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) f.p[ks][0] = f.p[ks][1] = f.p[ks][2] = f.p[ks][3] = 0u;
    }
  }
  __device__ __forceinline__ void softmax_b(const Page& pg, Frag& f) {
    if constexpr (kPairedRows) return paired_exps<2, kKSteps>(pg, f);
    const int vis = pg.seen();
    if (vis > 0 && kSoftmaxStep) {
      if (vis < kPage) {
        softmax_exps<true, 2, 4, !PW_WS_TC_SUM>(d, vis, t, rf_lo, rf_hi, f.st, f.p);
      } else {
        softmax_exps<false, 2, 4, !PW_WS_TC_SUM>(d, kPage, t, rf_lo, rf_hi, f.st, f.p);
      }
      if constexpr (!PW_WS_TC_SUM) add_sums(f.al_lo, f.al_hi, f.st);
    } else if constexpr (kZeroUnseen) {
#pragma unroll
      for (int ks = 2; ks < 4; ++ks) f.p[ks][0] = f.p[ks][1] = f.p[ks][2] = f.p[ks][3] = 0u;
    }
  }

  // Output dims 64 h .. 64 h + 63 of O_p = P8 V8 for the page at stage address st, issued as
  // one committed group; with the second half (PW_WS_TC_SUM) also the page's row sums of P8
  // into rs (P8 times the ones tile: every column of rs is sum p of its row).
  template <int kHalf>
  __device__ __forceinline__ void issue_pv(const Frag& f, uint32_t st) {
    if constexpr (kProducts) {
      const uint64_t desc = sw128_desc(st + kTileBytes + kHalf * (kTileBytes / 2));
      wgmma_fence();
      wgmma_m64n64k32<false>(op, f.p[0], desc);
#pragma unroll
      for (int ks = 1; ks < kKSteps; ++ks) wgmma_m64n64k32<true>(op, f.p[ks], desc + 2 * ks);
      if constexpr (PW_WS_TC_SUM && kHalf == 1) {
        const uint64_t od = sw128_desc(ones);
        wgmma_m64n8k32<false>(rs, f.p[0], od);
#pragma unroll
        for (int ks = 1; ks < kKSteps; ++ks) wgmma_m64n8k32<true>(rs, f.p[ks], od + 2 * ks);
      }
      wgmma_commit();
    }
  }
  // O = fma(O, a, O_p) on half kHalf once its product is done (and l from the row sums).
  template <int kHalf>
  __device__ __forceinline__ void fold(const Page& pg, const Frag& f) {
    wgmma_wait<0>();
    fence_acc(op);
    if constexpr (PW_WS_TC_SUM && kHalf == 1) fence_acc(rs);
    if constexpr (kPairedRows) {
      fold_seen_rows<kHalf>(pg.rows_seen<true>(), o, op, f.al_lo, f.al_hi);
    } else if (pg.seen()) {
      fold_half<kHalf>(o, op, f.al_lo, f.al_hi);
      if constexpr (PW_WS_TC_SUM && kHalf == 1) {  // l = l a + sum p8 (the page's row sums)
        l[0] = fmaf(l[0], f.al_lo, rs[0]);
        l[2] = fmaf(l[2], f.al_hi, rs[2]);
      }
    }
    __syncwarp();
  }

  __device__ __forceinline__ void issue_s(uint32_t st) { issue_qk(d, q8, st); }

  template <class Ring>
  __device__ __forceinline__ void first(const Ring& w, const Page& cur, Frag& f) {
    s_and_softmax(*this, w, cur, f);
  }
  // QK(next) and the first half of PV(this page) are issued together, softmax part A of the
  // next page runs behind them, the second half of PV is issued after the first is folded and
  // runs during part B.
  template <class Ring>
  __device__ __forceinline__ void step(const Ring& w, const Page& cur_in, const Frag& f,
                                       const Page& nxt_in, Frag& f_nxt) {
    if constexpr (PW_WS_OVERLAP) {
      const Page cur = uniform(cur_in), nxt = uniform(nxt_in);
      issue_qk(d, q8, w.stage(nxt.s()));  // S of the next page (d is free again) ...
      issue_pv<0>(f, w.stage(cur.s()));   // ... then half of O_p of this page
      wgmma_wait<1>();                    // S is there; the PV half still runs
      fence_acc(d);
      softmax_a(nxt, f_nxt);
      fold<0>(cur, f);
      issue_pv<1>(f, w.stage(cur.s()));   // the other half runs during part B
      softmax_b(nxt, f_nxt);
      fold<1>(cur, f);
    } else {  // one product at a time
      pv_halves(*this, w, cur_in, f);
      s_and_softmax(*this, w, nxt_in, f_nxt);
    }
  }
  // The page as warp_uniform reads it (kUniformPages), else as it is.
  __device__ __forceinline__ static Page uniform(const Page& pg) {
    return kUniformPages ? pg.uniform() : pg;
  }
  template <class Ring>
  __device__ __forceinline__ void last(const Ring& w, const Page& cur, const Frag& f) {
    pv_halves(*this, w, cur, f);
  }
  // O and l both carry the 2^8 of P; V's scale here.
  template <class Ring>
  __device__ __forceinline__ void store(const Args& a, const Ring& w) const {
    store_query<true, !PW_WS_TC_SUM>(a, w, *this, g, t);
  }
};

}  // namespace union8ws
}  // namespace pageweaver
