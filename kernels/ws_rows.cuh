// Row by row: the online-softmax pieces of the warp-specialized Union8 (union8ws.cu), for a
// tile whose two accumulator rows of a thread may belong to two different queries.
//
// The wgmma accumulator gives thread (warp w, g = lane / 4, t = lane % 4) rows 16w + g and
// 16w + g + 8 of the M64 tile (fp8_wgmma.cuh). The cluster kernels put one query's 16 local
// heads on one warp, so on a page that only one of a CTA's four queries selects, one warp runs
// all the exponentials while the other three wait at the next wgmma. The warp-specialized
// kernel spreads every query over all four warps (row_slot in union8ws.cu): then rows g and
// g + 8 of a thread belong to different queries and each has its own visibility vis[hr].
//
// A warp runs the rows that some lane of it needs: kRows (bit hr: row g + 8 hr) is chosen
// per page and warp by a warp-uniform switch (RowMode), so the rows run interleaved when both
// are needed and a warp whose lanes need only one row runs half the exponentials. A lane whose
// query does not see the page inside a running row gives p = 0 through its shift (-inf) or its
// mask, keeps m and gets a = 1. Every piece runs the operations, and the order per row, of the
// two-row pieces in fp8_wgmma.cuh, so the outputs equal the cluster kernel's.
//
// Accumulator element d[4j + 2 hr + e] (e = 0, 1) is row hr's column 8j + 2t + e.
#pragma once

#include "fp8_wgmma.cuh"

#include <math.h>

#include <type_traits>

namespace pageweaver {
namespace ws_rows {

using namespace fp8;

// Which rows a warp runs on a page and whether a partly visible row needs the column mask:
// warp-uniform (ballots), packed as rows | masked << 2.
struct RowMode {
  int bits;
  __device__ __forceinline__ int rows() const { return bits & 3; }
  __device__ __forceinline__ bool masked() const { return bits >> 2; }
};
// vis[hr]: the visible columns of row hr (0: its query does not see the page); kFull: a page.
template <int kFull>
__device__ __forceinline__ RowMode row_mode(const int (&vis)[2]) {
  const bool r0 = __any_sync(0xffffffffu, vis[0] > 0), r1 = __any_sync(0xffffffffu, vis[1] > 0);
  const bool part = __any_sync(0xffffffffu, (vis[0] > 0 && vis[0] < kFull) ||
                                                (vis[1] > 0 && vis[1] < kFull));
  return RowMode{(r0 ? 1 : 0) | (r1 ? 2 : 0) | (part ? 4 : 0)};
}

// One row's step on one page: the rescale a = 2^(m - m'), p's shift (kShift - m', or -inf
// for a lane whose query does not see the page: its p are 0) and this thread's part of sum p.
struct RowPage {
  float al = 1.f, sh = 0.f, sum = 0.f;
};

// The maxima of S over the visible columns (col < vis when kMasked) of the rows in kRows,
// across the quad (its 4 lanes share the rows).
template <int kRows, bool kMasked, int kCols>
__device__ __forceinline__ void rows_max(const float (&d)[kCols / 2], const int (&vis)[2], int t,
                                         float (&mx)[2]) {
  float mc[2][4];  // four independent max chains per row
#pragma unroll
  for (int c = 0; c < 4; ++c) mc[0][c] = mc[1][c] = -3.0e38f;
#pragma unroll
  for (int j = 0; j < kCols / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        if (!((kRows >> hr) & 1)) continue;
        const bool ok = !kMasked || 8 * j + e < vis[hr] - 2 * t;
        const int c = (2 * j + e) & 3;
        mc[hr][c] = ok ? fmaxf(mc[hr][c], d[4 * j + 2 * hr + e]) : mc[hr][c];
      }
    }
  }
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    if ((kRows >> hr) & 1) mx[hr] = fmaxf(fmaxf(mc[hr][0], mc[hr][1]), fmaxf(mc[hr][2], mc[hr][3]));
  }
#pragma unroll
  for (int sh = 1; sh <= 2; sh <<= 1) {
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      if ((kRows >> hr) & 1) mx[hr] = fmaxf(mx[hr], __shfl_xor_sync(0xffffffffu, mx[hr], sh));
    }
  }
}

// m' = max(m, rf * mx), a = 2^(m - m') and the shift kShift - m' (softmax_max's arithmetic) on
// a lane that sees the page; else m stays, a = 1 and the shift is -inf.
template <int kShift>
__device__ __forceinline__ void take_max(float mx, float rf, bool sees, float& m, RowPage& rp) {
  const float nw = fmaxf(m, mx * rf);
  rp.al = sees ? ex2(m - nw) : 1.f;
  rp.sh = sees ? static_cast<float>(kShift) - nw : -INFINITY;
  m = sees ? nw : m;
  rp.sum = 0.f;
}

// FP8: p = 2^(fma(S, rf, sh)) of the rows in kRows on k-steps [kBegin, kEnd), 0 on the
// invisible columns, summed when kSums, converted to E4M3 into the rows' A fragments
// (row hr: fragments hr and 2 + hr).
template <int kRows, bool kMasked, int kBegin, int kEnd, bool kSums>
__device__ __forceinline__ void rows_exps_fp8(float (&d)[64], const int (&vis)[2], int t,
                                              const float (&rf)[2], RowPage (&rp)[2],
                                              uint32_t (&pa)[kKSteps][4]) {
#pragma unroll
  for (int ks = kBegin; ks < kEnd; ++ks) {
#pragma unroll
    for (int j = 4 * ks; j < 4 * ks + 4; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          if (!((kRows >> hr) & 1)) continue;
          float p = ex2(fmaf(d[4 * j + 2 * hr + e], rf[hr], rp[hr].sh));
          if (kMasked && 8 * j + e >= vis[hr] - 2 * t) p = 0.f;
          d[4 * j + 2 * hr + e] = p;
          if constexpr (kSums) rp[hr].sum += p;
        }
      }
    }
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const int b = 16 * ks + 2 * hr;
      if ((kRows >> hr) & 1) {
        pa[ks][hr] = pack_e4m3(d[b], d[b + 1], d[b + 4], d[b + 5]);
        pa[ks][2 + hr] = pack_e4m3(d[b + 8], d[b + 9], d[b + 12], d[b + 13]);
      } else {
        pa[ks][hr] = pa[ks][2 + hr] = 0u;
      }
    }
  }
}

// BF16 (a half-page stage, 64 columns, shift 0): the same with rf = c and P in BF16 pairs.
template <int kRows, bool kMasked, int kSteps>
__device__ __forceinline__ void rows_exps_bf16(float (&d)[32], const int (&vis)[2], int t,
                                               float c, RowPage (&rp)[2],
                                               uint32_t (&pa)[kSteps][4]) {
#pragma unroll
  for (int ks = 0; ks < kSteps; ++ks) {
#pragma unroll
    for (int j = 2 * ks; j < 2 * ks + 2; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          if (!((kRows >> hr) & 1)) continue;
          float p = ex2(fmaf(d[4 * j + 2 * hr + e], c, rp[hr].sh));
          if (kMasked && 8 * j + e >= vis[hr] - 2 * t) p = 0.f;
          d[4 * j + 2 * hr + e] = p;
          rp[hr].sum += p;
        }
      }
    }
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const int b = 8 * ks + 2 * hr;
      if ((kRows >> hr) & 1) {
        pa[ks][hr] = pack_bf16(d[b], d[b + 1]);
        pa[ks][2 + hr] = pack_bf16(d[b + 4], d[b + 5]);
      } else {
        pa[ks][hr] = pa[ks][2 + hr] = 0u;
      }
    }
  }
}

// Calls f(std::integral_constant<int, kRows>()) for the mode's rows (nothing for none): the
// one warp-uniform branch per page and piece.
template <typename F>
__device__ __forceinline__ void for_rows(RowMode mode, F&& f) {
  switch (mode.rows()) {
    case 3: f(std::integral_constant<int, 3>()); break;
    case 1: f(std::integral_constant<int, 1>()); break;
    case 2: f(std::integral_constant<int, 2>()); break;
    default: break;
  }
}

// O = fma(O, a, O_p) on the rows in kRows for output dims 64 h .. 64 h + 63 (fold_page's
// arithmetic; a lane whose query did not see the page has a = 1 and O_p = 0: O keeps its value).
template <int kRows, int kHalf>
__device__ __forceinline__ void fold_rows(float (&o)[64], const float (&op)[32],
                                          const RowPage (&rp)[2]) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      if (!((kRows >> hr) & 1)) continue;
      const int oj = 4 * (8 * kHalf + j) + 2 * hr;
      o[oj] = fmaf(o[oj], rp[hr].al, op[4 * j + 2 * hr]);
      o[oj + 1] = fmaf(o[oj + 1], rp[hr].al, op[4 * j + 2 * hr + 1]);
    }
  }
}
// x = x a on the rows in kRows of an accumulator with kN / 4 column pairs per row.
template <int kRows, int kN>
__device__ __forceinline__ void scale_rows(float (&x)[kN], const float (&al)[2]) {
#pragma unroll
  for (int j = 0; j < kN / 4; ++j) {
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      if (!((kRows >> hr) & 1)) continue;
      x[4 * j + 2 * hr] *= al[hr];
      x[4 * j + 2 * hr + 1] *= al[hr];
    }
  }
}

// o = bf16(O * vsc / l) of both rows (store_rows' arithmetic); row hr goes to out[hr] (its
// 128 BF16 values), nullptr: no query. kQuadSum = false: l is already the row's whole sum.
template <bool kQuadSum>
__device__ __forceinline__ void store_row_pair(__nv_bfloat16* const (&out)[2],
                                               const float (&o)[64], float l_lo, float l_hi,
                                               float vsc, int t) {
  if constexpr (kQuadSum) {
#pragma unroll
    for (int sh = 1; sh <= 2; sh <<= 1) {
      l_lo += __shfl_xor_sync(0xffffffffu, l_lo, sh);
      l_hi += __shfl_xor_sync(0xffffffffu, l_hi, sh);
    }
  }
  const float inv[2] = {l_lo > 0.f ? vsc / l_lo : 0.f, l_hi > 0.f ? vsc / l_hi : 0.f};
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    if (out[hr] == nullptr) continue;
    uint32_t* row = reinterpret_cast<uint32_t*>(out[hr]);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      row[4 * j + t] = pack_bf16(o[4 * j + 2 * hr] * inv[hr], o[4 * j + 2 * hr + 1] * inv[hr]);
    }
  }
}

}  // namespace ws_rows
}  // namespace pageweaver
