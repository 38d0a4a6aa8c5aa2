// FP8 E4M3 Union8 / Union4 sparse attention on Hopper tensor cores (wgmma, sm_90a).
// docs/definitions.md#union8-execution and docs/definitions.md#fp8-arithmetic;
// arXiv:2610.11201 §4.2 and Figure 3. The BF16 teaching kernel (kernels/union8.cu) keeps its
// own arithmetic; this file runs the same slot protocol (the primitives of
// kernels/cluster_pipeline.cuh) with wgmma arithmetic and a producer that never blocks a CTA
// on its peer unless it must.
//
// Work split (as union8.cu). One group G = g member positions, position r runs original
// query π[base + r]. Union8: a cluster of two 128-thread CTAs, CTA0 positions 0-3, CTA1 4-7.
// Union4: one CTA, positions 0-3. The four warps of a CTA form ONE warpgroup; warp w owns
// member position w, i.e. rows 16w .. 16w+15 of the M64 wgmma tile = the 16 local Q heads of
// query π[base + r].
// The cluster walks U_G (ascending page ids). Per page p:
//   * the CTA skips the page when none of its four members selects p with a visible token
//     (membership bit, t < min(c_i + 1, L_i)); it still waits / releases the slot (protocol);
//   * otherwise the warpgroup computes Z = Q8 K8^T (4 x wgmma m64n128k32 e4m3, FP32 accum.),
//     each warp whose own member works on p does the FP32 online-softmax step on its 16 rows and
//     converts 2^8-scaled probabilities to E4M3 (rows of idle warps give P = 0),
//     the warpgroup computes the page product O_p = P8 V8 (4 x wgmma, fresh accumulator),
//     and each working warp folds it in: O = O * 2^(m - m') + O_p (FP32 FFMA).
//   O_p is fresh every page, so a row's arithmetic never depends on which other rows share its
//   CTA or on pages it does not select: original, regrouped and Union4 runs are bitwise
//   identical, and the FP8 MMA never accumulates more than one page (128 products per output)
//   before the FP32 combine on the CUDA cores.
//
// Arithmetic (kernels/fp8_wgmma.cuh, shared with the warp-specialized kernel union8ws.cu, so
// the two give the same bits; replayed op for op by pageweaver_edu/replay/fp8.py):
//   Q row (query, head): amax = max |q|, q8 = e4m3(q * (448 / amax)), qs = amax / 448.
//   rf = qs * (k_scale[h] * scale * log2 e)      (per row, FP32)
//   m' = max(m, rf * max_valid Z)   a = 2^(m - m')   p = 2^(fma(Z, rf, 8 - m'))  (= 256 P)
//   l = l * a + sum p               O = fma(O, a, e4m3(p) . v8)
//   o = bf16(O * (v_scale[h] / l))  (0 when the row saw no token)
//
// Paged FP8 cache (pageweaver_edu/gpu/fp8_tiles.py: fp8_cache_from_bf16, pack_tiles):
//   k  [pages, H, 16384] bytes: page (p, h) of K exactly as the wgmma B operand wants it in
//      shared memory: token t's 128 dims in row t (128 B), 16-byte chunk c stored at chunk
//      c ^ (t & 7) (the 128-byte swizzle), so one 16 KiB bulk copy lands a ready tile.
//   vt [pages, H, 16384] bytes: V TRANSPOSED, row n = dim n, column a = token tau(a), same
//      swizzle. k_scale / v_scale [H] float32.
// The K-major rule. FP8 wgmma takes B only K-major (no transpose bit for 8-bit types). For
// Z = Q K^T the reduction runs over d, and a K page is already token rows of d bytes. For
// O = P V it runs over tokens, so B must hold, for each output dim, the page's 128 tokens
// contiguously: V^T. Options: (a) transpose V in shared memory every page (FA3 does this
// with a producer warpgroup: LDSM.T/STSM, 16 KiB per page per CTA, a CTA barrier and a proxy
// fence before the MMA; both CTAs of the cluster would each redo it), or (b) keep V
// pre-transposed in the cache. We take (b): zero per-page cost and the multicast copy stays a
// plain byte copy; the price is paid by the cache writer, which appends a token as one byte in
// each of 128 rows of the V^T page (a strided write, at column tau^-1(t)) instead of one
// 128-byte row, and by any other consumer of the cache that expects token-major V. The column
// order inside each 32-token block (tau) is chosen so that the Z accumulator registers,
// converted in place, are exactly the wgmma A-operand fragment of the PV product: no
// shuffles, no shared memory.
//   tau(a) = 32 (a >> 5) + 16 ((a >> 4) & 1) + 8 ((a >> 1) & 1) + 2 ((a >> 2) & 3) + (a & 1)
//
// KV staging (Figure 3), as union8.cu: kNumSlots slots per CTA, page n in slot n % kNumSlots,
// event ① full[s] per CTA (armed by the CTA's thread 0 with expect_tx, completed by the
// multicast bytes), event ② empty[s] in CTA0 (one release per thread of both CTAs). The
// producer (CTA0 thread 0) copies page m only after every thread of both CTAs released page
// m - kNumSlots. It blocks only for the page its own CTA needs next; otherwise it polls
// (test_wait) between phases, so CTA0 is not held back by CTA1 finishing a page late.
// Every mbarrier wait is bounded (PW_WAIT_TIMEOUT_NS, default 10 s): a protocol bug faults
// (the launch fails with an error) instead of hanging the device.
#include "cluster_pipeline.cuh"
#include "fp8_wgmma.cuh"
#include "pageweaver_common.cuh"
#include "union_plan_args.cuh"

#include <cuda_bf16.h>
#include <stddef.h>
#include <stdint.h>

#ifndef PW_UNION_SLOTS
#define PW_UNION_SLOTS 2
#endif
#ifndef PW_WAIT_TIMEOUT_NS
#define PW_WAIT_TIMEOUT_NS 10000000000ull
#endif

namespace pageweaver {
namespace union8_fp8 {

using namespace fp8;  // the FP8 arithmetic of every FP8 union kernel (fp8_wgmma.cuh)

constexpr int kWarps = kSlotsPerCta;         // one warp per member position = one warpgroup
constexpr int kThreads = kWarps * kWarpSize; // 128
constexpr int kNumSlots = PW_UNION_SLOTS;
constexpr int kSlotBytes = 2 * kTileBytes;   // K then V^T
constexpr uint32_t kTxBytes = 2u * kTileBytes;

struct Args {
  const __nv_bfloat16* __restrict__ q;  // [N, H*16, 128] bf16
  const uint8_t* __restrict__ k;        // [pages, H, 16384] swizzled K tiles (E4M3)
  const uint8_t* __restrict__ vt;       // [pages, H, 16384] swizzled V^T tiles (E4M3)
  __nv_bfloat16* __restrict__ o;        // [N, H*16, 128] bf16
  const float* __restrict__ k_scale;    // [H]
  const float* __restrict__ v_scale;    // [H]
  UnionPlanArgs plan;                   // the union plan, positions, N, G, H (88 B)
};
static_assert(sizeof(Args) == 136 && offsetof(Args, plan) == 48,
              "the packed host buffer (Fp8UnionAttention in pageweaver_edu/gpu/union8_fp8.py)");

// ---------------------------------------------------------------- PTX helpers
// The slot protocol (smem_addr, cluster_rank, cluster_sync, events ① / ②: mbar_*,
// bulk_copy, init_barriers, cta_sync) comes from cluster_pipeline.cuh;
// this kernel's waits are bounded (mbar_wait).
using namespace pipeline;
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  mbar_wait_bounded<PW_WAIT_TIMEOUT_NS>(bar, parity);
}
// D = A B of one page (wgmma_tile: A from registers, B the page's tile), or an opaque constant
// in the no-products timing builds (PW_ABLATE, fp8_wgmma.cuh: chapter 07's lockstep table).
__device__ __forceinline__ void mma_page(float (&d)[64], const uint32_t (&a)[kKSteps][4],
                                         uint32_t tile) {
  if constexpr (kProducts) {
    wgmma_tile(d, a, tile);
  } else {
    opaque_accumulator(d);
  }
}
// ---------------------------------------------------------------- the kernel body
// Register layouts (g = lane / 4, t = lane % 4, warp w):
//   accumulator d[4j + e]: row 16w + g (e < 2) or + 8 (e >= 2), column 8j + 2t + (e & 1)
//   A fragment a[ks][r] (4 E4M3): row 16w + g (+8 for r odd), k = 32ks + 16(r >> 1) + 4t + 0..3
template <int kCtas>
__device__ __forceinline__ void union_attention_fp8(const Args& a) {
  extern __shared__ __align__(1024) uint8_t smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int cta = (kCtas == 1) ? 0 : static_cast<int>(cluster_rank());
  const int group = blockIdx.x / kCtas;
  const int head = blockIdx.y;

  // smem: [pad to 1 KiB][slot 0 | slot 1 | ...][full[kNumSlots] | empty[kNumSlots]]. Both
  // CTAs run the same kernel, so the aligned offsets (the multicast targets) agree.
  const uint32_t slots = (smem_addr(smem) + 1023u) & ~1023u;
  const uint32_t full0 = slots + kNumSlots * kSlotBytes;
  const uint32_t empty0 = full0 + 8 * kNumSlots;

  const int gi = head * a.plan.num_groups + group;
  const int4 gs = __ldg(a.plan.groups + gi);
  const int p_begin = __ldg(a.plan.page_offsets + gi);
  const int count = __ldg(a.plan.page_counts + gi);  // |U_G|

  // Visible-token limits of the CTA's four member positions (0: no query, nothing visible).
  int lim[kWarps];
  int qid = 0, my_lim = 0;
  bool present = false;
#pragma unroll
  for (int r = 0; r < kWarps; ++r) {
    const int slot = cta * kWarps + r;
    lim[r] = 0;
    int id = -1;
    if (slot < gs.y) id = __ldg(a.plan.perm + gs.x + slot);
    if (id >= 0 && id < a.plan.n) {
      int L = kNoLimit;
      if (a.plan.causal_pos) L = min(L, __ldg(a.plan.causal_pos + id) + 1);  // t <= c_i
      if (a.plan.lengths) L = min(L, __ldg(a.plan.lengths + id));            // t <  L_i
      lim[r] = L;
      if (r == warp) qid = id, my_lim = L, present = true;
    }
  }

  if (threadIdx.x == 0) {
    init_barriers<kCtas, kNumSlots, kThreads>(full0, empty0);  // events ① and ② of every slot
    // Arm event ① for the prologue pages before the cluster barrier, so the expect_tx always
    // precedes the bytes the peer's multicast delivers.
    for (int s = 0; s < kNumSlots && s < count; ++s) mbar_arm(full0 + 8 * s, kTxBytes);
  }
  cta_sync<kCtas>();

  // ---- producer: CTA0 thread 0 copies page m of U_G into slot m % kNumSlots of every CTA.
  const bool producer = (cta == 0) && (threadIdx.x == 0);
  const size_t tile_stride = kTileBytes;
  int issued = 0;
  auto pump = [&](int need) {  // start every page that may go; block only for page `need`
    while (issued < count) {
      const int m = issued, s = m % kNumSlots;
      if (m >= kNumSlots) {
        const uint32_t par = static_cast<uint32_t>((m / kNumSlots) - 1) & 1u;
        if (m <= need) {
          mbar_wait(empty0 + 8 * s, par);  // event ②: both CTAs released page m - kNumSlots
        } else if (!mbar_test(empty0 + 8 * s, par)) {
          break;
        }
      }
      int pid = __ldg(a.plan.pages + p_begin + m);
      if (pid < 0 || pid >= a.plan.num_pages) pid = 0;  // out of range: load a valid page, masked
      // region: fp8-tile-copy
      const size_t src = (static_cast<size_t>(pid) * a.plan.kv_heads + head) * tile_stride;
      const uint32_t dst = slots + s * kSlotBytes;
      bulk_copy<kCtas>(dst, a.k + src, kTileBytes, full0 + 8 * s);
      bulk_copy<kCtas>(dst + kTileBytes, a.vt + src, kTileBytes, full0 + 8 * s);
      // endregion: fp8-tile-copy
      ++issued;
    }
  };
  if (producer) pump(-1);

  // region: fp8-q-quantize
  // ---- Q rows g and g + 8 of my query: load BF16, quantize per row to E4M3 (A fragments).
  uint32_t qa[kKSteps][4];
  float rf_lo = 0.f, rf_hi = 0.f;  // Z -> log2 units, per row
  {
    uint2 raw[2][2 * kKSteps];
    const __nv_bfloat16* qbase =
        a.q + (static_cast<size_t>(qid) * a.plan.kv_heads + head) * kHeads * kDim;
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
#pragma unroll
      for (int c = 0; c < 2 * kKSteps; ++c) {
        raw[hr][c] = make_uint2(0u, 0u);
        if (present) {
          raw[hr][c] = __ldg(reinterpret_cast<const uint2*>(
              qbase + (g + 8 * hr) * kDim + 32 * (c >> 1) + 16 * (c & 1) + 4 * t));
        }
      }
    }
    quantize_q_rows(raw, __ldg(a.k_scale + head) * a.plan.scale_log2, qa, rf_lo, rf_hi);
  }
  // endregion: fp8-q-quantize

  float o[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.f;
  float m_lo = -INFINITY, m_hi = -INFINITY;  // running max (log2 units) of rows g, g + 8
  float l_lo = 0.f, l_hi = 0.f;              // this thread's part of the running sums (x 2^8)

  for (int n = 0; n < count; ++n) {
    const int s = n % kNumSlots;
    const uint32_t parity = static_cast<uint32_t>(n / kNumSlots) & 1u;
    if (producer) pump(n);  // page n must be on its way before anyone waits for it

    const int pid = __ldg(a.plan.pages + p_begin + n);
    const uint32_t mask = (__ldg(a.plan.masks + p_begin + n) >> (kWarps * cta)) & 0xFu;
    const bool pid_ok = pid >= 0 && pid < a.plan.num_pages;
    const int first = pid_ok ? pid * kPage : 0;  // token id of the page's first row
    bool cta_work = false, work = false;
#pragma unroll
    for (int r = 0; r < kWarps; ++r) {
      const bool w = kEveryPage ? pid_ok : pid_ok && ((mask >> r) & 1u) && first < lim[r];
      cta_work |= w;
      if (r == warp) work = w;
    }

    mbar_wait(full0 + 8 * s, parity);  // event ①: page n is in my slot s
    if (threadIdx.x == 0 && n + kNumSlots < count) {
      mbar_arm(full0 + 8 * s, kTxBytes);  // arm slot s for page n + kNumSlots
    }
    __syncwarp();  // wgmma is .aligned: the warp converges after the per-thread waits

    // region: fp8-page-products
    if (cta_work) {  // CTA-uniform: the whole warpgroup executes the wgmma
      const uint32_t k_tile = slots + s * kSlotBytes;
      float d[64];
      mma_page(d, qa, k_tile);  // Z = Q8 K8^T (FP32)
      if (producer) pump(-1);

      uint32_t pa[kKSteps][4];
      float al_lo = 1.f, al_hi = 1.f;
      if (work && kSoftmaxStep) {
        const int vis = kEveryPage ? kPage : my_lim - first;  // visible tokens of the page
        if (vis < kPage) {  // causal / length tail inside this page
          softmax_step<true>(d, vis, t, rf_lo, rf_hi, m_lo, m_hi, l_lo, l_hi, al_lo, al_hi, pa);
        } else {
          softmax_step<false>(d, kPage, t, rf_lo, rf_hi, m_lo, m_hi, l_lo, l_hi, al_lo, al_hi,
                              pa);
        }
      } else {
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) pa[ks][0] = pa[ks][1] = pa[ks][2] = pa[ks][3] = 0u;
      }
      __syncwarp();
      mma_page(d, pa, k_tile + kTileBytes);  // O_p = P8 V8 (fresh, FP32)
      if (work) fold_page(o, d, al_lo, al_hi);
    }
    // endregion: fp8-page-products

    __syncwarp();
    mbar_release<kCtas>(empty0 + 8 * s);  // event ②: this thread is done with slot s
    if (producer) pump(-1);
  }

  // Normalize and write o[π[r]] (BF16): O and l both carry the 2^8 of P; V's scale here.
  if (present) {
    store_rows(a.o + (static_cast<size_t>(qid) * a.plan.kv_heads + head) * kHeads * kDim, o,
               l_lo, l_hi, __ldg(a.v_scale + head), g, t);
  }

  // No CTA may leave while its peer can still arrive on its barriers or write its slots.
  if constexpr (kCtas == 2) cluster_sync();
}

// Dynamic shared memory the launcher requests: 1 KiB of alignment slack, kNumSlots slots of
// 32 KiB (K + V^T) and 16 B of barriers per slot (66,592 B for two slots).
[[maybe_unused]] constexpr int kSmemBytes = 1024 + kNumSlots * kSlotBytes + 16 * kNumSlots;

}  // namespace union8_fp8
}  // namespace pageweaver

// Union8: grid (2 * G, H), clusters of two CTAs along x; plan built with g = 8.
extern "C" __global__ void __cluster_dims__(2, 1, 1)
    __launch_bounds__(pageweaver::union8_fp8::kThreads, 2)
    union8_fp8(const pageweaver::union8_fp8::Args a) {
  pageweaver::union8_fp8::union_attention_fp8<2>(a);
}

// Union4 (group-size control): grid (G, H), one CTA per group; plan built with g = 4.
extern "C" __global__ void __launch_bounds__(pageweaver::union8_fp8::kThreads, 2)
    union4_fp8(const pageweaver::union8_fp8::Args a) {
  pageweaver::union8_fp8::union_attention_fp8<1>(a);
}
