// FP8 Union8 with the scores S in FP16 (the warp-specialized kernel's f16-score build,
// kernels/union8ws.cu): the same page step as fp8_wgmma.cuh with S half as wide, so that a
// consumer holds two score tiles and the tensor cores compute S of the next page while the
// CUDA cores run the softmax of this one. Per page p of U_G and per row (query i, local head):
//   S   = Q8 K8^T                  wgmma m64n128k32 e4m3, FP16 accumulator (32 registers)
//   mx  = max_visible S (FP16, exact)      m' = max(m, rf mx)      a = 2^(m - m')    (FP32)
//   c   = fp16(fma(mx, rf, 8 - m'))        (<= 8: the row's page maximum sits at 2^c)
//   p   = ex2.f16(fma.f16(S - mx, rf16, c))                         (= 2^8 P, as before)
//   l   = l a + fp32(sum.f16 p)           O_p = e4m3(p) V8         O = fma(O, a, O_p)
// (the sum of p: an FP16 tree per half page and thread, then FP32)
// Q8 is scaled by the row's L1 norm, not its maximum: q8 = e4m3(q 128 / sum|q|), so
// |S| <= 136 * 448 < 65504 on every input (E4M3 K8 <= 448; rounding adds at most 1/16 to
// sum|q8|) and the FP16 accumulator cannot overflow; rf = (sum|q| / 128) * c_scale.
// Register layout of an FP16 accumulator tile s[32] (warp w, g = lane / 4, t = lane % 4): the
// FP32 layout of fp8_wgmma.cuh with column pairs packed, s[2j] = row 16w + g, columns
// 8j + 2t (low half) and 8j + 2t + 1 (high half), s[2j + 1] = row 16w + g + 8, same columns.
// The softmax works on pairs (HMNMX2, HADD2, HFMA2, MUFU.EX2.F16, F2FP.E4M3.F16): half the
// instructions of the FP32 step per element, with the exponent argument formed as
// (S - mx) rf + c so that no large term cancels in FP16. Rows depend only on their own pages,
// in ascending order: every grouping gives the same bits.
#pragma once

#include "fp8_wgmma.cuh"

#include <cuda_fp16.h>

namespace pageweaver {
namespace fp8 {

constexpr uint32_t kNegInf2 = 0xFC00FC00u;  // (-inf, -inf) in FP16
constexpr float kQL1 = 128.f;               // sum |q8| of a row (the FP16 overflow bound)

__device__ __forceinline__ uint32_t hmax2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t hadd2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t hsub2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t hfma2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ uint32_t hex2(uint32_t a) {  // two MUFU.EX2.F16
  uint32_t d;
  asm("ex2.approx.f16x2 %0, %1;" : "=r"(d) : "r"(a));
  return d;
}
// (x, x) in FP16, saturated to +-65504.
__device__ __forceinline__ uint32_t h2_splat(float x) {
  uint16_t h;
  asm("cvt.rn.satfinite.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return static_cast<uint32_t>(h) * 0x10001u;
}
__device__ __forceinline__ float h_lo(uint32_t a) {
  return __half2float(__ushort_as_half(static_cast<uint16_t>(a & 0xffffu)));
}
__device__ __forceinline__ float h_hi(uint32_t a) {
  return __half2float(__ushort_as_half(static_cast<uint16_t>(a >> 16)));
}
// Two E4M3 bytes from an FP16 pair (low half -> low byte).
__device__ __forceinline__ uint32_t e4m3x2_h2(uint32_t a) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(r) : "r"(a));
  return r;
}
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

#define PW_S32(X) PW_D16(X, 0), PW_D16(X, 16)
#define PW_RW16(i) "+r"(d[i])
#define PW_WO16(i) "=r"(d[i])
// D[64x128] (+)= A[64x32] (shared, E4M3) * B[32x128] (shared, E4M3), FP16 accumulation.
template <bool kAccumulate>
__device__ __forceinline__ void wgmma_ss_m64n128k32_f16(uint32_t (&d)[32], uint64_t desc_a,
                                                        uint64_t desc_b) {
  if constexpr (kAccumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f16.e4m3.e4m3 " PW_DREGS32
        ", %32, %33, p, 1, 1;\n}"
        : PW_S32(PW_RW16)
        : "l"(desc_a), "l"(desc_b), "r"(1));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f16.e4m3.e4m3 " PW_DREGS32
        ", %32, %33, p, 1, 1;\n}"
        : PW_S32(PW_WO16)
        : "l"(desc_a), "l"(desc_b), "r"(0));
  }
}
#undef PW_RW16
#undef PW_WO16
#undef PW_S32

// Start (not wait for) S = Q8 K8^T of a page into an FP16 tile, one committed group.
// The Q8 address passes through an opaque move so that the compiler rebuilds its descriptors
// at each issue instead of keeping four 64-bit descriptors live across the group (registers).
__device__ __forceinline__ void issue_qk16(uint32_t (&s)[32], uint32_t q8, uint32_t k_tile) {
  uint32_t qa;
  asm volatile("mov.b32 %0, %1;" : "=r"(qa) : "r"(q8));
  const uint64_t da = sw128_desc(qa), db = sw128_desc(k_tile);
  wgmma_fence();
  wgmma_ss_m64n128k32_f16<false>(s, da, db);
#pragma unroll
  for (int ks = 1; ks < kKSteps; ++ks) wgmma_ss_m64n128k32_f16<true>(s, da + 2 * ks, db + 2 * ks);
  wgmma_commit();
}
template <int kN>
__device__ __forceinline__ void fence_regs(uint32_t (&d)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// Q rows g and g + 8 of one query -> E4M3 A fragments scaled by the row's L1 norm (the
// header's bound), as quantize_q_rows does with the maximum: raw as there,
//   l1 = sum |q|   q8 = e4m3(q * (128 / l1))   rf = (l1 / 128) * c_scale.
__device__ __forceinline__ void quantize_q_rows_l1(const uint2 (&raw)[2][2 * kKSteps],
                                                   float c_scale, uint32_t (&qa)[kKSteps][4],
                                                   float& rf_lo, float& rf_hi) {
  float l1[2] = {0.f, 0.f};
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
#pragma unroll
    for (int c = 0; c < 2 * kKSteps; ++c) {
      const __nv_bfloat162* b2 = reinterpret_cast<const __nv_bfloat162*>(&raw[hr][c]);
      const float2 f0 = __bfloat1622float2(b2[0]), f1 = __bfloat1622float2(b2[1]);
      l1[hr] += (fabsf(f0.x) + fabsf(f0.y)) + (fabsf(f1.x) + fabsf(f1.y));
    }
#pragma unroll
    for (int d = 1; d <= 2; d <<= 1) l1[hr] += __shfl_xor_sync(0xffffffffu, l1[hr], d);
  }
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const float inv = l1[hr] > 0.f ? kQL1 / l1[hr] : 0.f;
    const float rf = (l1[hr] / kQL1) * c_scale;
    if (hr == 0) rf_lo = rf; else rf_hi = rf;
#pragma unroll
    for (int c = 0; c < 2 * kKSteps; ++c) {
      const __nv_bfloat162* b2 = reinterpret_cast<const __nv_bfloat162*>(&raw[hr][c]);
      const float2 f0 = __bfloat1622float2(b2[0]), f1 = __bfloat1622float2(b2[1]);
      qa[c >> 1][2 * (c & 1) + hr] = pack_e4m3(f0.x * inv, f0.y * inv, f1.x * inv, f1.y * inv);
    }
  }
}

// Which halves of pair j (columns 8j + 2t, +1) a thread sees, vis_t = visible tokens - 2t.
__device__ __forceinline__ uint32_t keep_pair(int j, int vis_t) {
  return vis_t > 8 * j + 1 ? 0xffffffffu : (vis_t > 8 * j ? 0x0000ffffu : 0u);
}

// One page of the softmax on an FP16 tile, in two parts (A: the maxima, a, and columns
// 0 .. 63; B: columns 64 .. 127 and l) so that a PV half can be issued between them. The
// state of a row pair lives in Page16; the P fragments are written as they are made.
struct Page16 {
  uint32_t mx, c;      // (mx of row g, mx of row g + 8), (c of row g, c of row g + 8)
  float al_lo, al_hi;  // a of rows g and g + 8
};
// (x.lo, x.lo) and (x.hi, x.hi): a row's constant as a pair.
__device__ __forceinline__ uint32_t splat_lo(uint32_t x) { return prmt(x, x, 0x1010u); }
__device__ __forceinline__ uint32_t splat_hi(uint32_t x) { return prmt(x, x, 0x3232u); }

// The maxima of rows g, g + 8 over the visible columns, across the quad, as (lo, hi).
template <bool kMasked>
__device__ __forceinline__ uint32_t page_max16(const uint32_t (&s)[32], int vis_t) {
  uint32_t ml[4], mh[4];  // four independent chains per row
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const uint32_t kl = kMasked ? keep_pair(c, vis_t) : 0xffffffffu;
    ml[c] = kMasked ? (s[2 * c] & kl) | (kNegInf2 & ~kl) : s[2 * c];
    mh[c] = kMasked ? (s[2 * c + 1] & kl) | (kNegInf2 & ~kl) : s[2 * c + 1];
  }
#pragma unroll
  for (int j = 4; j < 16; ++j) {
    const uint32_t k = kMasked ? keep_pair(j, vis_t) : 0xffffffffu;
    ml[j & 3] = hmax2(ml[j & 3], kMasked ? (s[2 * j] & k) | (kNegInf2 & ~k) : s[2 * j]);
    mh[j & 3] = hmax2(mh[j & 3], kMasked ? (s[2 * j + 1] & k) | (kNegInf2 & ~k) : s[2 * j + 1]);
  }
  const uint32_t lo = hmax2(hmax2(ml[0], ml[1]), hmax2(ml[2], ml[3]));
  const uint32_t hi = hmax2(hmax2(mh[0], mh[1]), hmax2(mh[2], mh[3]));
  // (lo.x, hi.x) vs (lo.y, hi.y): one max gives both rows' maxima in one pair
  uint32_t m = hmax2(prmt(lo, hi, 0x5410u), prmt(lo, hi, 0x7632u));
#pragma unroll
  for (int sh = 1; sh <= 2; sh <<= 1) m = hmax2(m, __shfl_xor_sync(0xffffffffu, m, sh));
  return m;
}

// p for pairs j in [kBegin, kEnd) of both rows, in place, with their E4M3 A fragments
// (k-steps kBegin / 4 .. kEnd / 4 - 1; see softmax_exps for the layout) and their sum added to
// this thread's share of l: an FP16 tree over the part's pairs, then FP32 (part A first
// scales l by a: l = l a + sum_A + sum_B). rf2 = (rf16 of row g, rf16 of row g + 8).
template <bool kMasked, int kBegin, int kEnd>
__device__ __forceinline__ void exps16(uint32_t (&s)[32], int vis_t, uint32_t rf2,
                                       const Page16& st, float& l_lo, float& l_hi,
                                       uint32_t (&pa)[kKSteps][4]) {
  const uint32_t mx_lo2 = splat_lo(st.mx), mx_hi2 = splat_hi(st.mx);
  const uint32_t rf_lo2 = splat_lo(rf2), rf_hi2 = splat_hi(rf2);
  const uint32_t c_lo2 = splat_lo(st.c), c_hi2 = splat_hi(st.c);
#pragma unroll
  for (int j = kBegin; j < kEnd; ++j) {
    uint32_t plo = hex2(hfma2(hsub2(s[2 * j], mx_lo2), rf_lo2, c_lo2));
    uint32_t phi = hex2(hfma2(hsub2(s[2 * j + 1], mx_hi2), rf_hi2, c_hi2));
    if (kMasked) {
      const uint32_t k = keep_pair(j, vis_t);
      plo &= k;
      phi &= k;
    }
    s[2 * j] = plo;
    s[2 * j + 1] = phi;
  }
  uint32_t tl[(kEnd - kBegin) / 2], th[(kEnd - kBegin) / 2];
#pragma unroll
  for (int i = 0; i < (kEnd - kBegin) / 2; ++i) {
    tl[i] = hadd2(s[2 * (kBegin + 2 * i)], s[2 * (kBegin + 2 * i + 1)]);
    th[i] = hadd2(s[2 * (kBegin + 2 * i) + 1], s[2 * (kBegin + 2 * i + 1) + 1]);
  }
#pragma unroll
  for (int w = (kEnd - kBegin) / 4; w >= 1; w >>= 1) {
#pragma unroll
    for (int i = 0; i < w; ++i) {
      tl[i] = hadd2(tl[i], tl[i + w]);
      th[i] = hadd2(th[i], th[i + w]);
    }
  }
  const float sl = h_lo(tl[0]) + h_hi(tl[0]), sh = h_lo(th[0]) + h_hi(th[0]);
  if (kBegin == 0) {
    l_lo = fmaf(l_lo, st.al_lo, sl);
    l_hi = fmaf(l_hi, st.al_hi, sh);
  } else {
    l_lo += sl;
    l_hi += sh;
  }
#pragma unroll
  for (int ks = kBegin / 4; ks < kEnd / 4; ++ks) {
    const int b = 8 * ks;  // pairs j = 4ks .. 4ks + 3 of both rows
    pa[ks][0] = e4m3x2_h2(s[b + 0]) | (e4m3x2_h2(s[b + 2]) << 16);
    pa[ks][1] = e4m3x2_h2(s[b + 1]) | (e4m3x2_h2(s[b + 3]) << 16);
    pa[ks][2] = e4m3x2_h2(s[b + 4]) | (e4m3x2_h2(s[b + 6]) << 16);
    pa[ks][3] = e4m3x2_h2(s[b + 5]) | (e4m3x2_h2(s[b + 7]) << 16);
  }
}

// Part A: the page maxima, m', a and c, then columns 0 .. 63. rf2 = the rows' rf in FP16;
// m' and c use the same rf in FP32 (one value per row for every step).
template <bool kMasked>
__device__ __forceinline__ void softmax16_a(uint32_t (&s)[32], int vis, int t, uint32_t rf2,
                                            float& m_lo, float& m_hi, Page16& st, float& l_lo,
                                            float& l_hi, uint32_t (&pa)[kKSteps][4]) {
  const int vis_t = vis - 2 * t;
  const uint32_t mx = page_max16<kMasked>(s, vis_t);
  const float mxl = h_lo(mx), mxh = h_hi(mx), rf_lo = h_lo(rf2), rf_hi = h_hi(rf2);
  // Column 0 is visible, so both maxima are finite; rf >= 0 keeps the order of S.
  const float n_lo = fmaxf(m_lo, mxl * rf_lo), n_hi = fmaxf(m_hi, mxh * rf_hi);
  st.al_lo = ex2(m_lo - n_lo);
  st.al_hi = ex2(m_hi - n_hi);
  m_lo = n_lo;
  m_hi = n_hi;
  st.mx = mx;
  st.c = prmt(h2_splat(fmaf(mxl, rf_lo, 8.f - n_lo)), h2_splat(fmaf(mxh, rf_hi, 8.f - n_hi)),
              0x5410u);
  exps16<kMasked, 0, 8>(s, vis_t, rf2, st, l_lo, l_hi, pa);
}
// Part B: columns 64 .. 127 and their sums.
template <bool kMasked>
__device__ __forceinline__ void softmax16_b(uint32_t (&s)[32], int vis, int t, uint32_t rf2,
                                            const Page16& st, float& l_lo, float& l_hi,
                                            uint32_t (&pa)[kKSteps][4]) {
  exps16<kMasked, 8, 16>(s, vis - 2 * t, rf2, st, l_lo, l_hi, pa);
}

}  // namespace fp8
}  // namespace pageweaver
