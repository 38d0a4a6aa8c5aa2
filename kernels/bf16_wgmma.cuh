// BF16 KV arithmetic of the warp-specialized Union8 (kernels/union8ws.cu) on Hopper tensor
// cores (wgmma, sm_90a). The descriptors, waits, softmax maximum and sums and the epilogue are
// the FP8 kernels' (fp8_wgmma.cuh); what differs is the operand type and the stage:
//
// A stage is half a page (64 tokens), so two stages carry a page. Per stage and per row (query
// i, local Q head) of an M64 tile, in FP32 with c = softmax scale * log2 e:
//   S  = Q K^T                      wgmma m64n64k16 bf16, Q and K both from shared memory
//   m' = max(m, c * max_visible S)   a = 2^(m - m')   p = 2^(fma(S, c, -m'))
//   l  = l * a + sum p               O = O * a + bf16(p) V     (the PV accumulates into O)
// and at the end o = bf16(O / l) (0 when the row saw no token). BF16 products accumulate in
// FP32, so O is the tensor cores' accumulator (FlashAttention's form); a row's operations
// depend only on its own pages, in ascending order, so every grouping gives the same bits.
//
// Shared tiles, all K-major with the 128-byte swizzle (16-byte chunk c of a 128-byte row r at
// chunk c ^ (r & 7)), the layout fp8::sw128_desc describes:
//   Q tile, 16 KiB per consumer: 64 rows x 128 dims as two blocks of 64 dims (8 KiB each);
//   K half page, 16 KiB: 64 tokens x 128 dims as the same two blocks;
//   V^T half page, 16 KiB: 128 dims x 64 tokens (one 128-byte row per dim).
// A k16 step advances the start address by 32 bytes inside a block (+2 in the descriptor);
// QK's steps 4 .. 7 read the second block. The S accumulator of a k16 step's 16 columns is,
// converted to BF16 in place, exactly the A fragment of the PV product (no token permutation).
#pragma once

#include "fp8_wgmma.cuh"

namespace pageweaver {
namespace bf16 {

using namespace fp8;  // descriptors, waits, ex2, pack_bf16, softmax_max / finish, store_rows

constexpr int kStageTokens = 64;               // half a page
constexpr int kBlockBytes = 64 * 128;          // one swizzled block: 64 rows x 128 bytes
constexpr int kTileBytes = 2 * kBlockBytes;    // 16 KiB: K (or V^T) of a half page
constexpr int kQKSteps = kDim / 16;            // 8 k16 steps over d
constexpr int kPVSteps = kStageTokens / 16;    // 4 k16 steps over the stage's tokens

// D[64x64] (+)= A[64x16] * B[16x64]^T, A and B K-major in shared memory, FP32 accumulation.
template <bool kAccumulate>
__device__ __forceinline__ void wgmma_ss_m64n64k16(float (&d)[32], uint64_t desc_a,
                                                   uint64_t desc_b) {
  if constexpr (kAccumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " PW_DREGS32
        ", %32, %33, p, 1, 1, 0, 0;\n}"
        : PW_D32(PW_RW)
        : "l"(desc_a), "l"(desc_b), "r"(1));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " PW_DREGS32
        ", %32, %33, p, 1, 1, 0, 0;\n}"
        : PW_D32(PW_WO)
        : "l"(desc_a), "l"(desc_b), "r"(0));
  }
}
// D[64x128] += A[64x16] (registers, BF16) * B[16x128] (shared, K-major), FP32 accumulation.
__device__ __forceinline__ void wgmma_m64n128k16_acc(float (&d)[64], const uint32_t (&a)[4],
                                                     uint64_t desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " PW_DREGS
      ", {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}"
      : PW_D64(PW_RW)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(1));
}

// Start (not wait for) S = Q K^T of a stage: 8 k16 steps, the last 4 in the second blocks.
__device__ __forceinline__ void issue_qk(float (&d)[32], uint32_t q_tile, uint32_t k_tile) {
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < kQKSteps; ++ks) {
    const int off = (ks >> 2) * kBlockBytes;
    const uint64_t da = sw128_desc(q_tile + off) + 2 * (ks & 3);
    const uint64_t db = sw128_desc(k_tile + off) + 2 * (ks & 3);
    if (ks == 0) {
      wgmma_ss_m64n64k16<false>(d, da, db);
    } else {
      wgmma_ss_m64n64k16<true>(d, da, db);
    }
  }
  wgmma_commit();
}
// Start (not wait for) O += P V of a stage: 4 k16 steps over its 64 tokens.
__device__ __forceinline__ void issue_pv(float (&o)[64], const uint32_t (&pa)[kPVSteps][4],
                                         uint32_t vt_tile) {
  const uint64_t desc = sw128_desc(vt_tile);
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < kPVSteps; ++ks) wgmma_m64n128k16_acc(o, pa[ks], desc + 2 * ks);
  wgmma_commit();
}

// The exponentials of a stage on rows g and g + 8 (after softmax_max<kMasked, 64, 0>), their
// sums, and P in BF16 as the PV product's A fragments: for k16 step ks, accumulator tiles
// j = 2ks (columns 16ks + 2t, +1) and j = 2ks + 1 (columns 16ks + 8 + 2t, +1).
template <bool kMasked>
__device__ __forceinline__ void softmax_exps(float (&d)[32], int vis, int t, float c,
                                             SoftmaxSums& st, uint32_t (&pa)[kPVSteps][4]) {
  const int vis_t = vis - 2 * t;
#pragma unroll
  for (int ks = 0; ks < kPVSteps; ++ks) {
#pragma unroll
    for (int j = 2 * ks; j < 2 * ks + 2; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float p0 = ex2(fmaf(d[4 * j + e], c, st.sh_lo));
        float p1 = ex2(fmaf(d[4 * j + 2 + e], c, st.sh_hi));
        if (kMasked && 8 * j + e >= vis_t) p0 = p1 = 0.f;
        d[4 * j + e] = p0;
        d[4 * j + 2 + e] = p1;
        st.sum_lo += p0;
        st.sum_hi += p1;
      }
    }
    pa[ks][0] = pack_bf16(d[8 * ks], d[8 * ks + 1]);
    pa[ks][1] = pack_bf16(d[8 * ks + 2], d[8 * ks + 3]);
    pa[ks][2] = pack_bf16(d[8 * ks + 4], d[8 * ks + 5]);
    pa[ks][3] = pack_bf16(d[8 * ks + 6], d[8 * ks + 7]);
  }
}

// A consumer's Q tile from the group's Q stage: slot w's 16 rows (4 KiB of BF16, one 256-byte
// row per local head) become tile rows 16w .. 16w + 15, swizzled into the two blocks; rows of
// slots without a query (bit w of `present` clear) are zero. 128 threads, 8 chunks each.
__device__ __forceinline__ void copy_q_tile(uint32_t q_stage, uint32_t q_tile, int tid,
                                            uint32_t present) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int q = tid + 128 * i;        // 16-byte chunk q of the 64 x 256-byte tile
    const int row = q >> 4, cc = q & 15;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if ((present >> (row >> 4)) & 1u) {
      asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                   : "r"(q_stage + (row >> 4) * 4096 + (row & 15) * 256 + cc * 16)
                   : "memory");
    }
    const uint32_t dst =
        q_tile + (cc >> 3) * kBlockBytes + row * 128 + (((cc & 7) ^ (row & 7)) << 4);
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(dst), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w)
                 : "memory");
  }
}

}  // namespace bf16
}  // namespace pageweaver
