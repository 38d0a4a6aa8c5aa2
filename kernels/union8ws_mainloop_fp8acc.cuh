// The accurate FP8 mainloop of the warp-specialized Union8 (PW_WS_ACCURATE): the same FP8
// E4M3 cache, ring and FP8 tensor cores as the fast mode, with Q and P fed as two E4M3 parts
// each, a high part and the E4M3 rounding of its residual, on one scale:
//   x = q * (448 / amax)   Q8 = e4m3(x) + e4m3(f16(x) - e4m3(x))   (two 8 KiB tiles)
//   S = Q8hi K8^T + Q8lo K8^T                 8 k32 steps into one accumulator
//   p = 2^(fma(S, rf, 8 - m'))   P8 = e4m3(p) + e4m3(f16(p) - e4m3(p))   l sums the FP32 p
//   O_p = P8hi V8 + P8lo V8                   8 k32 steps per half of 64 output dims
//   O = fma(O, a, O_p)                        FP32 fold on the CUDA cores, as the fast mode
// Each pair of parts carries about 8 significant bits (a BF16 operand's precision) while K and
// V stay the cache's E4M3 bytes (the emulation: replay.fp8, operands="two_level"). The
// residual is taken in FP16 pairs (split_e4m3), where it is exact; FP16's rounding of x moves
// it by at most 2^-12 |x|, an eighth of the low part's own rounding.
//
// One page step (page k is cur, k + 1 is nxt): S(k+1) and the first half of O_p(k) are
// issued together; the maxima and exponentials of k + 1 (in place in S's registers) run
// behind the PV halves; the E4M3 splits of P(k+1) wait until O_p(k) is folded, since the
// fragments of both pages do not fit the consumer's registers at once:
//   tensor  [ S (k+1) ][ O_p dims 0..63 (k) ]        [ O_p dims 64..127 (k) ]
//   CUDA    | max, a, p cols 0..63 (k+1) | fold 0 | p cols 64..127, l | fold 1 | split P (k+1)
// The interface is the one union8ws_mainloop_fp8.cuh describes.
#pragma once

#include "union8ws_mainloop_fp8.cuh"

namespace pageweaver {
namespace union8ws {

// Four FP32 values -> their high E4M3 parts and the E4M3 parts of the residuals, two values
// per instruction: hi = e4m3(x), then in FP16 pairs r = f16(x) - f16(hi) (exact: hi is an FP16
// number within a factor 2 of f16(x), or 0) and lo = e4m3(r).
__device__ __forceinline__ void split_e4m3(float x0, float x1, float x2, float x3, uint32_t& hi,
                                           uint32_t& lo) {
  hi = pack_e4m3(x0, x1, x2, x3);
  asm("{\n\t.reg .b16 a, b;\n\t.reg .b32 h01, h23, x01, x23;\n\t"
      "mov.b32 {a, b}, %1;\n\tcvt.rn.f16x2.e4m3x2 h01, a;\n\tcvt.rn.f16x2.e4m3x2 h23, b;\n\t"
      "cvt.rn.f16x2.f32 x01, %3, %2;\n\tcvt.rn.f16x2.f32 x23, %5, %4;\n\t"
      "sub.rn.f16x2 x01, x01, h01;\n\tsub.rn.f16x2 x23, x23, h23;\n\t"
      "cvt.rn.satfinite.e4m3x2.f16x2 a, x01;\n\tcvt.rn.satfinite.e4m3x2.f16x2 b, x23;\n\t"
      "mov.b32 %0, {a, b};\n}"
      : "=r"(lo) : "r"(hi), "f"(x0), "f"(x1), "f"(x2), "f"(x3));
}

struct Fp8AccMainloop : SoftmaxState {
  static constexpr bool kPairedRows = PW_WS_PAIRS;  // ConsumerRing
  static constexpr int kStagesPerPage = 1;
  static constexpr int kLoOffset = kQTileBytes / 2;  // Q8lo's tile behind Q8hi's
  struct Frag {
    uint32_t hi[kKSteps][4], lo[kKSteps][4];  // P8hi, P8lo: the A fragments of PV
    SoftmaxSums st;
    float al_lo, al_hi;
  };

  int warp, g, t;
  uint32_t q8;
  float rf_lo, rf_hi;
  float d[64], op[32];

  __device__ __forceinline__ Fp8AccMainloop(const Args&, uint32_t q_tile, int tid)
      : warp(tid >> 5), g((tid & 31) >> 2), t(tid & 3),
        q8(warp_uniform(q_tile)) {}
  template <class Ring>
  __device__ __forceinline__ void load_q(const Args& a, const Ring& w, int q_stage) {
    uint2 raw[2][2 * kKSteps];
    uint32_t hi[kKSteps][4], lo[kKSteps][4];
    float inv[2];
    load_q_rows(w, q_stage, g, t, raw);
    q_row_scales(raw, __ldg(a.k_scale + w.head()) * a.plan.scale_log2, inv, rf_lo, rf_hi);
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
#pragma unroll
      for (int c = 0; c < 2 * kKSteps; ++c) {
        const float4 x = q_values(raw[hr][c], inv[hr]);
        split_e4m3(x.x, x.y, x.z, x.w, hi[c >> 1][2 * (c & 1) + hr], lo[c >> 1][2 * (c & 1) + hr]);
      }
    }
    store_a_tile(q8, hi, warp, g, t);
    store_a_tile(q8 + kLoOffset, lo, warp, g, t);
  }

  // S = Q8hi K8^T + Q8lo K8^T of the page at stage address st, issued as one group. q8 and
  // the pages are warp-uniform (warp_uniform, union8ws_shared.cuh), so the descriptors live in
  // uniform registers and hold none of the registers the fragments of P need.
  __device__ __forceinline__ void issue_s(uint32_t st) {
    if constexpr (kProducts) {
      const uint64_t dh = sw128_desc(q8), dl = sw128_desc(q8 + kLoOffset), dk = sw128_desc(st);
      wgmma_fence();
      wgmma_ss_m64n128k32<false>(d, dh, dk);
#pragma unroll
      for (int ks = 1; ks < kKSteps; ++ks) wgmma_ss_m64n128k32<true>(d, dh + 2 * ks, dk + 2 * ks);
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) wgmma_ss_m64n128k32<true>(d, dl + 2 * ks, dk + 2 * ks);
      wgmma_commit();
    } else {
      opaque_accumulator(d);
    }
  }
  // Output dims 64 h .. 64 h + 63 of O_p = P8hi V8 + P8lo V8, issued as one group.
  template <int kHalf>
  __device__ __forceinline__ void issue_pv(const Frag& f, uint32_t st) {
    if constexpr (kProducts) {
      const uint64_t desc = sw128_desc(st + kTileBytes + kHalf * (kTileBytes / 2));
      wgmma_fence();
      wgmma_m64n64k32<false>(op, f.hi[0], desc);
#pragma unroll
      for (int ks = 1; ks < kKSteps; ++ks) wgmma_m64n64k32<true>(op, f.hi[ks], desc + 2 * ks);
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) wgmma_m64n64k32<true>(op, f.lo[ks], desc + 2 * ks);
      wgmma_commit();
    }
  }
  template <int kHalf>
  __device__ __forceinline__ void fold(const Page& pg, const Frag& f) {
    wgmma_wait<0>();
    fence_acc(op);
    fold_seen_rows<kHalf>(pg.rows_seen<kPairedRows>(), o, op, f.al_lo, f.al_hi);
    __syncwarp();
  }

  // My rows' softmax step on page pg: part A the maxima and the exponentials of columns
  // 0 .. 63, part B those of columns 64 .. 127 and l, both in place in d (on the rows whose
  // query sees the page); then P's split. The timing builds without a softmax step leave P = 0
  // and a = 1.
  template <int kBegin, int kEnd>
  __device__ __forceinline__ void exps_part(const Page& pg, Frag& f) {
    const int2 seen = pg.rows_seen<kPairedRows>();
    softmax_part_on_rows<kBegin, kEnd>(*this, seen, f, [&](auto masked, auto rows, int vl, int vh) {
#pragma unroll
      for (int ks = kBegin; ks < kEnd; ++ks) {
        softmax_exps_kstep<decltype(masked)::value, true, decltype(rows)::value>(
            d, ks, vl - 2 * t, vh - 2 * t, rf_lo, rf_hi, f.st);
      }
    });
  }
  __device__ __forceinline__ void softmax_a(const Page& pg, Frag& f) {
    if constexpr (kSoftmaxStep) {
      exps_part<0, 2>(pg, f);
    } else {
      f.al_lo = f.al_hi = 1.f;
    }
  }
  __device__ __forceinline__ void softmax_b(const Page& pg, Frag& f) {
    if constexpr (kSoftmaxStep) exps_part<2, kKSteps>(pg, f);
  }
  // P's two E4M3 parts of the rows in kRows, 0 in the other row's registers (their rows of O_p
  // are not folded; writing every register ends the live range of the Frag's previous page,
  // whose registers the consumer's budget cannot keep beside the current ones).
  template <int kRows = kBothRows>
  __device__ __forceinline__ void split_rows(Frag& f) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        if ((kRows >> (r & 1) & 1) == 0) f.hi[ks][r] = f.lo[ks][r] = 0u;
      }
      kstep_fragment<kRows>(d, ks, [&](int r, float x0, float x1, float x2, float x3) {
        split_e4m3(x0, x1, x2, x3, f.hi[ks][r], f.lo[ks][r]);
      });
    }
  }
  __device__ __forceinline__ void split_p(const Page& pg, Frag& f) {
    const int2 seen = kSoftmaxStep ? pg.rows_seen<kPairedRows>() : make_int2(0, 0);
    with_seen_rows(seen, [&](auto rows) { split_rows<decltype(rows)::value>(f); });
  }

  template <class Ring>
  __device__ __forceinline__ void first(const Ring& w, const Page& cur, Frag& f) {
    s_and_softmax(*this, w, cur, f);
    split_p(cur, f);
  }
  template <class Ring>
  __device__ __forceinline__ void step(const Ring& w, const Page& cur_in, const Frag& f,
                                       const Page& nxt_in, Frag& f_nxt) {
    const Page cur = cur_in.uniform(), nxt = nxt_in.uniform();
    issue_s(w.stage(nxt.s()));
    issue_pv<0>(f, w.stage(cur.s()));
    wgmma_wait<1>();  // S of the next page is there; the first PV half still runs
    fence_acc(d);
    softmax_a(nxt, f_nxt);
    fold<0>(cur, f);
    issue_pv<1>(f, w.stage(cur.s()));
    softmax_b(nxt, f_nxt);
    fold<1>(cur, f);
    split_p(nxt, f_nxt);
  }
  template <class Ring>
  __device__ __forceinline__ void last(const Ring& w, const Page& cur, const Frag& f) {
    pv_halves(*this, w, cur, f);
  }
  // O and l both carry the 2^8 of P; V's scale here.
  template <class Ring>
  __device__ __forceinline__ void store(const Args& a, const Ring& w) const {
    store_query<true>(a, w, *this, g, t);
  }
};

}  // namespace union8ws
}  // namespace pageweaver
