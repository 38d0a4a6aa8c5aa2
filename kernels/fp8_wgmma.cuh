// FP8 E4M3 arithmetic of the Union8 / Union4 kernels on Hopper tensor cores (wgmma, sm_90a):
// the pieces every FP8 union kernel runs the same way, so that their outputs agree bit for bit
// with each other and op for op with the CPU replay (pageweaver_edu/replay/fp8.py). The generic
// pieces (descriptors, waits, softmax maximum and sums, epilogue) serve bf16_wgmma.cuh too.
//
// Per page p of a group's union U_G and per row (query i, local Q head) of an M64 tile:
//   S   = Q8 K8^T                              wgmma m64n128k32 e4m3, FP32, fresh accumulator
//   m'  = max(m, rf * max_visible S)           rf = qs * k_scale * softmax scale * log2 e
//   a   = 2^(m - m')    p = 2^(fma(S, rf, 8 - m'))   (= 2^8 P: keeps P out of E4M3 subnormals)
//   l   = l * a + sum p
//   O_p = e4m3(p) V8                           wgmma, fresh accumulator (one page per MMA)
//   O   = fma(O, a, O_p)                       FP32 fold on the CUDA cores
// and at the end o = bf16(O * v_scale / l) (0 when the row saw no token). O_p is fresh every
// page, so a row's result depends only on its own pages, in ascending order: any grouping of
// the queries gives the same bits, and the tensor core never accumulates more than one page.
//
// Register layouts inside a warpgroup (warp w, g = lane / 4, t = lane % 4):
//   accumulator d[4j + e]: row 16w + g (e < 2) or 16w + g + 8 (e >= 2), column 8j + 2t + (e & 1)
//   A fragment a[ks][r] (4 E4M3 bytes): row 16w + g (+8 for r odd),
//                                       k = 32 ks + 16 (r >> 1) + 4t + 0..3
// A page in shared memory is a K-major 128 x 128-byte tile with the 128-byte swizzle (16-byte
// chunk c of row r stored at chunk c ^ (r & 7)): K as token rows, V transposed (V^T, dim rows)
// with its token columns in the order tau that makes the converted S registers exactly the A
// fragments of the PV product (see the FP8 cache packer in pageweaver_edu).
#pragma once

#include <cuda_bf16.h>
#include <stdint.h>

namespace pageweaver {
namespace fp8 {

constexpr int kHeads = 16;                   // local Q heads per KV head = rows per warp
constexpr int kDim = 128;                    // d (bytes per FP8 row)
constexpr int kPage = 128;                   // P tokens per page
constexpr int kTileBytes = kPage * kDim;     // 16 KiB: one page of K (or V^T) in FP8
constexpr int kKSteps = kDim / 32;           // k32 steps over d (QK) and over tokens (PV)
constexpr int kNoLimit = 0x7fffffff;
constexpr float kE4m3Max = 448.f;

// Timing-only builds of the FP8 union kernels (PW_ABLATE; their outputs are meaningless), for
// the benchmark's step and lockstep tables: bit 0 drops the softmax step (P = 0), bit 1 the
// products (the accumulators hold an opaque constant), bit 2 (cluster kernel) makes every warp
// work on every page of U_G with the whole page visible (membership unused), bit 3 (union8ws)
// copies no page into the ring: the loader still writes each stage's metadata and completes its
// event ① with no bytes, so the consumers run all their work on stale stages.
#ifndef PW_ABLATE
#define PW_ABLATE 0
#endif
constexpr bool kSoftmaxStep = (PW_ABLATE & 1) == 0;
constexpr bool kProducts = (PW_ABLATE & 2) == 0;
constexpr bool kEveryPage = (PW_ABLATE & 4) != 0;
constexpr bool kPageCopies = (PW_ABLATE & 8) == 0;
// The accumulator of a product the no-products builds leave out: a constant the compiler
// cannot see through, so the work downstream of it stays.
template <int kN>
__device__ __forceinline__ void opaque_accumulator(float (&d)[kN]) {
#pragma unroll
  for (int e = 0; e < kN; ++e) asm volatile("mov.b32 %0, 0x3f800000;" : "=f"(d[e]));
}

__device__ __forceinline__ float ex2(float x) {  // MUFU.EX2; 2^-inf = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// Four FP32 -> four E4M3 bytes, x0 in the lowest byte (cvt puts its first operand high; mov
// puts its first half low).
__device__ __forceinline__ uint32_t pack_e4m3(float x0, float x1, float x2, float x3) {
  uint32_t v;
  asm("{\n\t.reg .b16 lo, hi;\n\tcvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n\t"
      "cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n\tmov.b32 %0, {lo, hi};\n}"
      : "=r"(v) : "f"(x0), "f"(x1), "f"(x2), "f"(x3));
  return v;
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// Shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row atoms of 1 KiB (SBO),
// LBO unused for swizzled K-major (1 by convention). The tile base is 1 KiB aligned; a k32
// step advances the start address by 32 bytes inside the swizzle atom (+2 in the descriptor).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr) {
  return static_cast<uint64_t>((addr >> 4) & 0x3FFFu) | (1ull << 16) |
         (static_cast<uint64_t>(1024 >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_wait_all() {
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}
// Keeps the compiler from touching accumulator registers across the asynchronous MMA.
template <int kN>
__device__ __forceinline__ void fence_acc(float (&d)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define PW_D16(X, b) X(b + 0), X(b + 1), X(b + 2), X(b + 3), X(b + 4), X(b + 5), X(b + 6), \
    X(b + 7), X(b + 8), X(b + 9), X(b + 10), X(b + 11), X(b + 12), X(b + 13), X(b + 14), X(b + 15)
#define PW_D64(X) PW_D16(X, 0), PW_D16(X, 16), PW_D16(X, 32), PW_D16(X, 48)
#define PW_RW(i) "+f"(d[i])
#define PW_WO(i) "=f"(d[i])
#define PW_DREGS                                                                            \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "  \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "   \
  "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "   \
  "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"

// D[64x128] (+)= A[64x32] (registers, E4M3) * B[32x128] (shared, E4M3, K-major), FP32 accum.
template <bool kAccumulate>
__device__ __forceinline__ void wgmma_m64n128k32(float (&d)[64], const uint32_t (&a)[4],
                                                 uint64_t desc) {
  if constexpr (kAccumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " PW_DREGS
        ", {%64, %65, %66, %67}, %68, p, 1, 1;\n}"
        : PW_D64(PW_RW)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(1));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " PW_DREGS
        ", {%64, %65, %66, %67}, %68, p, 1, 1;\n}"
        : PW_D64(PW_WO)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(0));
  }
}
// D[64x128] (+)= A[64x32] (shared, E4M3, K-major) * B[32x128] (shared, E4M3, K-major).
template <bool kAccumulate>
__device__ __forceinline__ void wgmma_ss_m64n128k32(float (&d)[64], uint64_t desc_a,
                                                    uint64_t desc_b) {
  if constexpr (kAccumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " PW_DREGS
        ", %64, %65, p, 1, 1;\n}"
        : PW_D64(PW_RW)
        : "l"(desc_a), "l"(desc_b), "r"(1));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " PW_DREGS
        ", %64, %65, p, 1, 1;\n}"
        : PW_D64(PW_WO)
        : "l"(desc_a), "l"(desc_b), "r"(0));
  }
}
// D[64x64] (+)= A[64x32] (registers, E4M3) * B[32x64] (shared, E4M3, K-major): half of a
// PV product (output dims 64 h .. 64 h + 63 are rows 64 h .. of the V^T tile).
#define PW_D32(X) PW_D16(X, 0), PW_D16(X, 16)
#define PW_DREGS32                                                                          \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "  \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
template <bool kAccumulate>
__device__ __forceinline__ void wgmma_m64n64k32(float (&d)[32], const uint32_t (&a)[4],
                                                uint64_t desc) {
  if constexpr (kAccumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 " PW_DREGS32
        ", {%32, %33, %34, %35}, %36, p, 1, 1;\n}"
        : PW_D32(PW_RW)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(1));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 " PW_DREGS32
        ", {%32, %33, %34, %35}, %36, p, 1, 1;\n}"
        : PW_D32(PW_WO)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(0));
  }
}
// D[64x8] (+)= A[64x32] (registers, E4M3) * B[32x8] (shared, E4M3): with B all ones, every
// column of D is the row sum of A, so a page's sum of P8 comes from the tensor core.
template <bool kAccumulate>
__device__ __forceinline__ void wgmma_m64n8k32(float (&d)[4], const uint32_t (&a)[4],
                                               uint64_t desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, %8, p, 1, 1;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(kAccumulate ? 1 : 0));
}
constexpr uint32_t kE4m3OnesWord = 0x38383838u;  // four E4M3 1.0 bytes
constexpr int kOnesTileBytes = 8 * 128;           // B of m64n8k32 over 128 tokens: one 1 KiB atom


template <int kPending>  // wait until at most kPending committed wgmma groups are in flight
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}
// Start (without waiting for) D = A B over the 4 k32 steps as one committed group: A from
// registers (the P fragments of PV) or from a shared tile (Q8 of QK).
__device__ __forceinline__ void wgmma_issue(float (&d)[64], const uint32_t (&a)[kKSteps][4],
                                            uint32_t tile) {
  const uint64_t desc = sw128_desc(tile);
  wgmma_fence();
  wgmma_m64n128k32<false>(d, a[0], desc);
#pragma unroll
  for (int ks = 1; ks < kKSteps; ++ks) wgmma_m64n128k32<true>(d, a[ks], desc + 2 * ks);
  wgmma_commit();
}
__device__ __forceinline__ void wgmma_issue_ss(float (&d)[64], uint32_t tile_a,
                                               uint32_t tile_b) {
  const uint64_t da = sw128_desc(tile_a), db = sw128_desc(tile_b);
  wgmma_fence();
  wgmma_ss_m64n128k32<false>(d, da, db);
#pragma unroll
  for (int ks = 1; ks < kKSteps; ++ks) wgmma_ss_m64n128k32<true>(d, da + 2 * ks, db + 2 * ks);
  wgmma_commit();
}

// D = sum over the 4 k32 steps (a fresh accumulator: the first step ignores D).
__device__ __forceinline__ void wgmma_tile(float (&d)[64], const uint32_t (&a)[kKSteps][4],
                                           uint32_t tile) {
  const uint64_t desc = sw128_desc(tile);
  wgmma_fence();
  wgmma_m64n128k32<false>(d, a[0], desc);
#pragma unroll
  for (int ks = 1; ks < kKSteps; ++ks) wgmma_m64n128k32<true>(d, a[ks], desc + 2 * ks);
  wgmma_commit();
  wgmma_wait_all();
  fence_acc(d);
}

// Q rows g and g + 8 of one query (16 local heads x 128 dims, BF16) -> E4M3 A fragments, one
// scale per row. raw[hr][c] holds the 4 BF16 values of row g + 8 hr at dims
// 32 (c >> 1) + 16 (c & 1) + 4t + 0..3, as the A layout places them; the 4 lanes of a quad
// together hold the whole row. c_scale = k_scale[h] * softmax scale * log2 e.
//   amax = max |q|   q8 = e4m3(q * (448 / amax))   rf = (amax / 448) * c_scale
// q_row_scales gives each row's multiplier inv = 448 / amax and rf; q_values the FP32 values
// q * inv of one raw entry.
__device__ __forceinline__ void q_row_scales(const uint2 (&raw)[2][2 * kKSteps], float c_scale,
                                             float (&inv)[2], float& rf_lo, float& rf_hi) {
  float amax[2] = {0.f, 0.f};
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
#pragma unroll
    for (int c = 0; c < 2 * kKSteps; ++c) {
      const __nv_bfloat162* b2 = reinterpret_cast<const __nv_bfloat162*>(&raw[hr][c]);
      const float2 f0 = __bfloat1622float2(b2[0]), f1 = __bfloat1622float2(b2[1]);
      amax[hr] = fmaxf(amax[hr], fmaxf(fmaxf(fabsf(f0.x), fabsf(f0.y)),
                                       fmaxf(fabsf(f1.x), fabsf(f1.y))));
    }
#pragma unroll
    for (int d = 1; d <= 2; d <<= 1) {
      amax[hr] = fmaxf(amax[hr], __shfl_xor_sync(0xffffffffu, amax[hr], d));
    }
  }
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    inv[hr] = amax[hr] > 0.f ? kE4m3Max / amax[hr] : 0.f;
    const float rf = (amax[hr] / kE4m3Max) * c_scale;
    if (hr == 0) rf_lo = rf; else rf_hi = rf;
  }
}
__device__ __forceinline__ float4 q_values(const uint2& raw, float inv) {
  const __nv_bfloat162* b2 = reinterpret_cast<const __nv_bfloat162*>(&raw);
  const float2 f0 = __bfloat1622float2(b2[0]), f1 = __bfloat1622float2(b2[1]);
  return make_float4(f0.x * inv, f0.y * inv, f1.x * inv, f1.y * inv);
}
__device__ __forceinline__ void quantize_q_rows(const uint2 (&raw)[2][2 * kKSteps],
                                                float c_scale, uint32_t (&qa)[kKSteps][4],
                                                float& rf_lo, float& rf_hi) {
  float inv[2];
  q_row_scales(raw, c_scale, inv, rf_lo, rf_hi);
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
#pragma unroll
    for (int c = 0; c < 2 * kKSteps; ++c) {
      const float4 x = q_values(raw[hr][c], inv[hr]);
      qa[c >> 1][2 * (c & 1) + hr] = pack_e4m3(x.x, x.y, x.z, x.w);
    }
  }
}

// The A fragments of this thread (rows 16 warp + g and + 8 of the M64 tile, see the layouts
// above) into a shared K-major 64 x 128-byte tile with the 128-byte swizzle, the tile
// sw128_desc describes. The writer then needs fence.proxy.async before the wgmma reads it.
__device__ __forceinline__ void store_a_tile(uint32_t tile, const uint32_t (&a)[kKSteps][4],
                                             int warp, int g, int t) {
#pragma unroll
  for (int ks = 0; ks < kKSteps; ++ks) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = 16 * warp + g + 8 * (r & 1), k = 32 * ks + 16 * (r >> 1) + 4 * t;
      const uint32_t addr = tile + row * 128 + (((k >> 4) ^ (row & 7)) << 4) + (k & 15);
      asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(a[ks][r]) : "memory");
    }
  }
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// The online-softmax step of the header on this warp's rows g and g + 8 (S in the accumulator
// registers d): running max m, rescale a = 2^(m - m'), probabilities p = 2^8 P (0 for the
// invisible columns col >= vis when kMasked), running sums l, and P converted to E4M3 straight
// into the A fragments of the PV product: for k-step ks the accumulator tiles 4ks .. 4ks + 3
// give, per thread, exactly the 16 bytes the wgmma A layout asks for, in the token order tau of
// the V^T tile. It comes in three parts so that a kernel can run the exponentials of k-steps
// [kBegin, kEnd) while a tensor-core product is in flight: softmax_max (m', a),
// softmax_exps (p, the sums, the A fragments) and softmax_finish (l). The row maximum runs in
// four chains (max is exact in any order); the sums keep their sequential order over the
// columns, so every FP8 union kernel gives the same bits.
struct SoftmaxSums {
  float sh_lo, sh_hi;    // 8 - m' per row
  float sum_lo, sum_hi;  // this thread's part of sum p per row
};
// The rows a softmax step runs on (kRows): bit 0 row g, bit 1 row g + 8. A row left out keeps
// its m, l and S registers and gets no P fragment bytes (its query does not see the page).
// With two rows each row has its own count of visible columns, vis_lo and vis_hi.
constexpr int kRowLo = 1, kRowHi = 2, kBothRows = 3;

// The maximum of S over the visible columns of rows g and g + 8 (those in kRows), across the
// quad. kCols = 128 (an FP8 page) or 64 (a BF16 half page).
template <bool kMasked, int kCols = 128, int kRows = kBothRows>
__device__ __forceinline__ void page_max(const float (&d)[kCols / 2], int vis_lo, int vis_hi,
                                         int t, float& mx_lo, float& mx_hi) {
  constexpr bool kLo = kRows & kRowLo, kHi = kRows & kRowHi;
  float ml[4], mh[4];  // four independent max chains per row
#pragma unroll
  for (int c = 0; c < 4; ++c) ml[c] = mh[c] = -3.0e38f;
  // column 8j + 2t + e is visible when 8j + e < vis - 2t
  const int vis_t_lo = vis_lo - 2 * t, vis_t_hi = vis_hi - 2 * t;
#pragma unroll
  for (int j = 0; j < kCols / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const bool ok_lo = !kMasked || 8 * j + e < vis_t_lo;
      const bool ok_hi = !kMasked || 8 * j + e < vis_t_hi;
      const int c = (2 * j + e) & 3;
      if constexpr (kLo) ml[c] = ok_lo ? fmaxf(ml[c], d[4 * j + e]) : ml[c];
      if constexpr (kHi) mh[c] = ok_hi ? fmaxf(mh[c], d[4 * j + 2 + e]) : mh[c];
    }
  }
  mx_lo = fmaxf(fmaxf(ml[0], ml[1]), fmaxf(ml[2], ml[3]));
  mx_hi = fmaxf(fmaxf(mh[0], mh[1]), fmaxf(mh[2], mh[3]));
#pragma unroll
  for (int sh = 1; sh <= 2; sh <<= 1) {  // the 4 lanes of a quad share rows g and g + 8
    if constexpr (kLo) mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, sh));
    if constexpr (kHi) mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, sh));
  }
}

// kShift = log2 of P's scale. kEmptyRows: a row of kRows may see no column of the page
// (vis 0); it then keeps m and gets a = 1, so l and O stay as they are.
template <bool kMasked, int kRows, bool kEmptyRows = false, int kCols = 128, int kShift = 8>
__device__ __forceinline__ void softmax_max_rows(const float (&d)[kCols / 2], int vis_lo,
                                                 int vis_hi, int t, float rf_lo, float rf_hi,
                                                 float& m_lo, float& m_hi, float& al_lo,
                                                 float& al_hi, SoftmaxSums& st) {
  constexpr bool kLo = kRows & kRowLo, kHi = kRows & kRowHi;
  float mx_lo, mx_hi;
  page_max<kMasked, kCols, kRows>(d, vis_lo, vis_hi, t, mx_lo, mx_hi);
  // Column 0 is visible, so both maxima are finite; rf >= 0 keeps the order of S.
  float new_lo = fmaxf(m_lo, mx_lo * rf_lo), new_hi = fmaxf(m_hi, mx_hi * rf_hi);
  if (kEmptyRows && vis_lo <= 0) new_lo = m_lo;
  if (kEmptyRows && vis_hi <= 0) new_hi = m_hi;
  if constexpr (kLo) al_lo = kEmptyRows && vis_lo <= 0 ? 1.f : ex2(m_lo - new_lo);
  if constexpr (kHi) al_hi = kEmptyRows && vis_hi <= 0 ? 1.f : ex2(m_hi - new_hi);
  if constexpr (kLo) m_lo = new_lo;
  if constexpr (kHi) m_hi = new_hi;
  if constexpr (kLo) st.sh_lo = static_cast<float>(kShift) - new_lo;
  if constexpr (kHi) st.sh_hi = static_cast<float>(kShift) - new_hi;
  st.sum_lo = st.sum_hi = 0.f;
}
template <bool kMasked, int kCols = 128, int kShift = 8>
__device__ __forceinline__ void softmax_max(const float (&d)[kCols / 2], int vis, int t,
                                            float rf_lo, float rf_hi, float& m_lo, float& m_hi,
                                            float& al_lo, float& al_hi, SoftmaxSums& st) {
  softmax_max_rows<kMasked, kBothRows, false, kCols, kShift>(d, vis, vis, t, rf_lo, rf_hi, m_lo,
                                                             m_hi, al_lo, al_hi, st);
}

// kSums = false: no running sums on the CUDA cores (the kernel takes sum p from the tensor
// core instead, as the row sums of the E4M3 P it multiplies).
// p = 2^(fma(S, rf, 8 - m')) of k-step ks's 32 columns into d (0 for the invisible ones),
// and their sums.
// vis_t_lo / vis_t_hi: vis - 2t of each row; only the rows in kRows are computed.
template <bool kMasked, bool kSums, int kRows = kBothRows>
__device__ __forceinline__ void softmax_exps_kstep(float (&d)[64], int ks, int vis_t_lo,
                                                   int vis_t_hi, float rf_lo, float rf_hi,
                                                   SoftmaxSums& st) {
#pragma unroll
  for (int j = 4 * ks; j < 4 * ks + 4; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if constexpr ((kRows & kRowLo) != 0) {
        float p0 = ex2(fmaf(d[4 * j + e], rf_lo, st.sh_lo));
        if (kMasked && 8 * j + e >= vis_t_lo) p0 = 0.f;
        d[4 * j + e] = p0;
        if constexpr (kSums) st.sum_lo += p0;
      }
      if constexpr ((kRows & kRowHi) != 0) {
        float p1 = ex2(fmaf(d[4 * j + 2 + e], rf_hi, st.sh_hi));
        if (kMasked && 8 * j + e >= vis_t_hi) p1 = 0.f;
        d[4 * j + 2 + e] = p1;
        if constexpr (kSums) st.sum_hi += p1;
      }
    }
  }
}
// The 16 values of k-step ks in d, in the order of the A fragment's four registers (four
// values each, the lowest byte first): pass them to a converter (E4M3, or two-level).
// Registers 0 and 2 hold row g, 1 and 3 row g + 8: only the rows in kRows are passed.
template <int kRows = kBothRows, class Convert>
__device__ __forceinline__ void kstep_fragment(const float (&d)[64], int ks, Convert convert) {
  const int j = 4 * ks;
  constexpr bool kLo = (kRows & kRowLo) != 0, kHi = (kRows & kRowHi) != 0;
  if constexpr (kLo) convert(0, d[4 * j], d[4 * j + 1], d[4 * j + 4], d[4 * j + 5]);
  if constexpr (kHi) convert(1, d[4 * j + 2], d[4 * j + 3], d[4 * j + 6], d[4 * j + 7]);
  if constexpr (kLo) convert(2, d[4 * j + 8], d[4 * j + 9], d[4 * j + 12], d[4 * j + 13]);
  if constexpr (kHi) convert(3, d[4 * j + 10], d[4 * j + 11], d[4 * j + 14], d[4 * j + 15]);
}

// kSums = false: no running sums on the CUDA cores (the kernel takes sum p from the tensor
// core instead, as the row sums of the E4M3 P it multiplies).
template <bool kMasked, int kBegin, int kEnd, bool kSums = true, int kRows = kBothRows>
__device__ __forceinline__ void softmax_exps_rows(float (&d)[64], int vis_lo, int vis_hi, int t,
                                                  float rf_lo, float rf_hi, SoftmaxSums& st,
                                                  uint32_t (&pa)[kKSteps][4]) {
  const int vis_t_lo = vis_lo - 2 * t, vis_t_hi = vis_hi - 2 * t;
#pragma unroll
  for (int ks = kBegin; ks < kEnd; ++ks) {  // columns 32 ks .. 32 ks + 31, packed as made
    softmax_exps_kstep<kMasked, kSums, kRows>(d, ks, vis_t_lo, vis_t_hi, rf_lo, rf_hi, st);
    kstep_fragment<kRows>(d, ks, [&](int r, float x0, float x1, float x2, float x3) {
      pa[ks][r] = pack_e4m3(x0, x1, x2, x3);
    });
  }
}
template <bool kMasked, int kBegin, int kEnd, bool kSums = true>
__device__ __forceinline__ void softmax_exps(float (&d)[64], int vis, int t, float rf_lo,
                                             float rf_hi, SoftmaxSums& st,
                                             uint32_t (&pa)[kKSteps][4]) {
  softmax_exps_rows<kMasked, kBegin, kEnd, kSums>(d, vis, vis, t, rf_lo, rf_hi, st, pa);
}

template <int kRows = kBothRows>
__device__ __forceinline__ void softmax_finish(float al_lo, float al_hi, const SoftmaxSums& st,
                                               float& l_lo, float& l_hi) {
  if constexpr ((kRows & kRowLo) != 0) l_lo = l_lo * al_lo + st.sum_lo;
  if constexpr ((kRows & kRowHi) != 0) l_hi = l_hi * al_hi + st.sum_hi;
}

template <bool kMasked>
__device__ __forceinline__ void softmax_step(float (&d)[64], int vis, int t, float rf_lo,
                                             float rf_hi, float& m_lo, float& m_hi, float& l_lo,
                                             float& l_hi, float& al_lo, float& al_hi,
                                             uint32_t (&pa)[kKSteps][4]) {
  SoftmaxSums st;
  softmax_max<kMasked>(d, vis, t, rf_lo, rf_hi, m_lo, m_hi, al_lo, al_hi, st);
  softmax_exps<kMasked, 0, kKSteps>(d, vis, t, rf_lo, rf_hi, st, pa);
  softmax_finish(al_lo, al_hi, st, l_lo, l_hi);
}

// O = fma(O, a, O_p) on rows g (columns e < 2) and g + 8 (e >= 2).
__device__ __forceinline__ void fold_page(float (&o)[64], const float (&op)[64], float al_lo,
                                          float al_hi) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    o[4 * j + 0] = fmaf(o[4 * j + 0], al_lo, op[4 * j + 0]);
    o[4 * j + 1] = fmaf(o[4 * j + 1], al_lo, op[4 * j + 1]);
    o[4 * j + 2] = fmaf(o[4 * j + 2], al_hi, op[4 * j + 2]);
    o[4 * j + 3] = fmaf(o[4 * j + 3], al_hi, op[4 * j + 3]);
  }
}

// The same fold for output dims 64 h .. 64 h + 63 from a half-width product op (m64n64), on
// the rows in kRows.
template <int kHalf, int kRows = kBothRows>
__device__ __forceinline__ void fold_half(float (&o)[64], const float (&op)[32], float al_lo,
                                          float al_hi) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int oj = 4 * (8 * kHalf + j);
    if constexpr ((kRows & kRowLo) != 0) {
      o[oj + 0] = fmaf(o[oj + 0], al_lo, op[4 * j + 0]);
      o[oj + 1] = fmaf(o[oj + 1], al_lo, op[4 * j + 1]);
    }
    if constexpr ((kRows & kRowHi) != 0) {
      o[oj + 2] = fmaf(o[oj + 2], al_hi, op[4 * j + 2]);
      o[oj + 3] = fmaf(o[oj + 3], al_hi, op[4 * j + 3]);
    }
  }
}

// o[row] = bf16(O * v_scale / l) for a thread's rows g and g + 8, written to the 128-wide
// output rows at out_lo and out_hi (l summed over the quad first; 0 when the row saw no token).
// A row whose ok_* is false is not written (its slot holds no query). kQuadSum = false: every
// lane already holds its rows' whole sums (tensor-core row sums).
template <bool kQuadSum = true>
__device__ __forceinline__ void store_row_pair(__nv_bfloat16* out_lo, __nv_bfloat16* out_hi,
                                               bool ok_lo, bool ok_hi, const float (&o)[64],
                                               float l_lo, float l_hi, float vsc, int t) {
  if constexpr (kQuadSum) {
#pragma unroll
    for (int sh = 1; sh <= 2; sh <<= 1) {
      l_lo += __shfl_xor_sync(0xffffffffu, l_lo, sh);
      l_hi += __shfl_xor_sync(0xffffffffu, l_hi, sh);
    }
  }
  const float inv_lo = l_lo > 0.f ? vsc / l_lo : 0.f;
  const float inv_hi = l_hi > 0.f ? vsc / l_hi : 0.f;
  uint32_t* row_lo = reinterpret_cast<uint32_t*>(out_lo);
  uint32_t* row_hi = reinterpret_cast<uint32_t*>(out_hi);
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int w = (8 * j + 2 * t) / 2;
    if (ok_lo) row_lo[w] = pack_bf16(o[4 * j] * inv_lo, o[4 * j + 1] * inv_lo);
    if (ok_hi) row_hi[w] = pack_bf16(o[4 * j + 2] * inv_hi, o[4 * j + 3] * inv_hi);
  }
}
// The same for rows g and g + 8 of one query's 16 x 128 output block.
template <bool kQuadSum = true>
__device__ __forceinline__ void store_rows(__nv_bfloat16* out_block, const float (&o)[64],
                                           float l_lo, float l_hi, float vsc, int g, int t) {
  store_row_pair<kQuadSum>(out_block + g * kDim, out_block + (g + 8) * kDim, true, true, o, l_lo,
                           l_hi, vsc, t);
}

}  // namespace fp8
}  // namespace pageweaver
