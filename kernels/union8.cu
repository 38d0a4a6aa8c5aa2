// Union8 / Union4 sparse attention over a group's page union (docs/definitions.md#union8-execution,
// docs/definitions.md#slot-protocol; arXiv:2610.11201, §4.2 and Figure 3). BF16 teaching
// version: mma.sync m16n8k16, FP32 state.
//
// Work split. One group G = g member positions; position r runs original query π[base + r].
//   Union8: a cluster of two 128-thread CTAs (__cluster_dims__(2,1,1)); CTA0 owns positions 0-3,
//           CTA1 positions 4-7. Union4: one CTA owns positions 0-3 (the group-size control).
//   Inside a CTA, warp w owns member position w: its query's 16 local Q heads are the warp's 16 MMA rows,
//   so a CTA holds 4 queries x 16 heads = 64 rows (one M64 tile), and the membership, causal
//   and length masks are uniform across a warp.
//   The cluster walks U_G (ascending page ids, `pages[page_offsets[G] ..]`) in order. For each
//   page p, every warp whose query selects p (bit r of the membership byte, r = member position) and
//   sees at least one token of p (t < min(c_i + 1, L_i)) does, for each 64-token stage C of p
//   (see KV staging) whose first token is visible,
//       Z = Q K_C^T            (16 x 64 scores, FP32)
//       m' = max(m, rowmax Z)  l = l * 2^(m - m') + rowsum 2^(Z - m')  O = O * 2^(m - m') + P V_C
//   and every other warp skips the arithmetic but still takes part in the slot protocol.
//   At the end O / l (0 for an empty A_i) is written as BF16 straight to o[π[r]]. No partial
//   outputs, no combine, no output reorder. Positions past a short tail group write nothing.
//
// KV staging (Figure 3). Each CTA owns kNumSlots (= 2) KV slots; a slot holds one stage: half a
// page (64 tokens) of K and of V, 32 KiB (the paper's slot size: one FP8 page). Stage n of the
// walk is half n % 2 of page n / 2 of U_G and goes to slot n % kNumSlots. Two events per slot:
//   event ① "stage ready" full[s]  (one per CTA, local): thread 0 of the CTA arms it with
//            arrive.expect_tx(bytes) and the bulk copies complete the bytes.
//   event ② "slot free"   empty[s] (lives in CTA0): every thread of BOTH CTAs arrives once its
//            warp has finished reading slot s (256 arrivals for Union8, 128 for Union4); only
//            then may CTA0 overwrite that slot in both CTAs.
//   Schedule: stage 0 -> slot0, stage 1 -> slot1 (prologue); compute stage 0; both CTAs
//   release slot0; stage 2 -> slot0 while stage 1 is computed; ... The producer (CTA0 warp
//   0, which also computes) waits for event ② right after its own release. Polling ② instead
//   (copying when it completes, blocking only for the stage it needs next, as union8_fp8.cu
//   does) starts each stage later in this kernel, whose producer also computes
//   (benchmarks/union8_notes.md).
// Why half pages. Two slots of a whole BF16 page (2 x 64 KiB) allow one CTA per SM, i.e. one
// warp per SM sub-partition: every MMA, shuffle and barrier latency is exposed, and a CTA that
// waits for its peer leaves the SM idle. Half-page slots (2 x 32 KiB) let two CTAs (two
// clusters) share an SM, each hiding the other's stalls; the softmax already ran in 64-token
// chunks, so a stage is exactly one softmax step.
// Why every thread arrives on ②. One arrival per warp (lane 0 after __syncwarp) is the usual
// single-signalling-thread pattern, but compute-sanitizer's racecheck does not credit reads that
// __syncwarp orders before another lane's arrive and reports the peer's multicast copy as a
// hazard; with every lane arriving after its own ldmatrix reads the report is clean.
//
// Why multicast rather than DSMEM. Each page must come from HBM/L2 once per cluster. The
// alternative (CTA0 loads, CTA1 reads CTA0's slot through distributed shared memory) would
// make CTA1 feed its tensor cores with ld.shared::cluster: ldmatrix works on the local CTA's
// shared memory only, and remote loads are much slower and add SM-to-SM traffic on every
// MMA operand, every page. With cp.async.bulk ... .multicast::cluster the copy engine writes
// the same bytes into the same offset of both CTAs' slot and completes the tx bytes on both
// CTAs' event ① barriers, so each CTA reads its operands locally with ldmatrix.
//
// Layout. A stage of K (or V) is 64 token rows of 256 B. It is copied as 8 blocks of 8 rows
// (2 KiB each, 16 bulk copies per stage for K and V) into a slot whose blocks are 2,064 B apart
// (16 B of padding per block): stage token t sits at (t / 8) * 2064 + (t % 8) * 256. An MMA
// n-tile takes the 8 tokens {j, j+8, ..., j+56} (one per block), so the 8 row addresses of
// every ldmatrix phase fall in 8 different 16-byte bank groups: no bank conflicts. Softmax
// does not care which tokens share a tile; the causal / length mask uses each column's real
// token id, and P V reads V with the same token order. Few large copies rather than one per
// row: the copy engine pays per request (the earlier layouts: benchmarks/union8_notes.md).
//
// Arithmetic is isolated in `Bf16Math` (Q fragments, Z = Q K^T, O += P V, slot geometry); an
// FP8 E4M3 policy (per-row Q scale, scaled P, wgmma) can replace it without touching the slot
// protocol or the online softmax.
//
// Inputs (BF16 tensors; H = KV heads, 16 Q heads per KV head, d = 128, P = 128):
//   q [N, H*16, 128], k/v [pages, H, 128, 128] (H = 1: [pages, 128, 128]), o [N, H*16, 128]
//   the union plan of all KV heads, in the layout of kernels/union_prepare.cu:
//   groups [H*G] int4 (first position in the flat [H*N] π, members, row base h*N, 0), perm [H*N]
//   (head-local original ids), page_offsets / page_counts [H*G] into pages int32 (page ids,
//   used as K/V pool rows and as token positions p*P) and masks uint8 (bit r = position r
//   selects p).
//   Group gi = h*G + j runs on CTAs (kCtas*j .. , h). causal_pos / lengths [N] int32 or null.
#include "cluster_pipeline.cuh"
#include "pageweaver_common.cuh"
#include "union_plan_args.cuh"

#include <cuda_bf16.h>
#include <stddef.h>
#include <stdint.h>

#ifndef PW_UNION_SLOTS
#define PW_UNION_SLOTS 2
#endif

namespace pageweaver {
namespace union8 {

constexpr int kHeads = 16;      // local Q heads per KV head = MMA rows per warp
constexpr int kDim = 128;       // d
constexpr int kPage = 128;      // P tokens per page
constexpr int kWarps = kSlotsPerCta;  // one warp per member position
constexpr int kThreads = kWarps * kWarpSize;  // 128
constexpr int kNumSlots = PW_UNION_SLOTS;     // KV slots per CTA (2 as in Figure 3)
constexpr int kNoLimit = 0x7fffffff;

struct Args {
  const __nv_bfloat16* __restrict__ q;  // [N, H*16, 128]
  const __nv_bfloat16* __restrict__ k;  // [pages, H, 128, 128]
  const __nv_bfloat16* __restrict__ v;  // [pages, H, 128, 128]
  __nv_bfloat16* __restrict__ o;        // [N, H*16, 128]
  UnionPlanArgs plan;                   // the union plan, positions, N, G, H (88 B)
};
static_assert(sizeof(Args) == 120 && offsetof(Args, plan) == 32,
              "the packed host buffer (Bf16UnionAttention in pageweaver_edu/gpu/union8.py)");

// ---------------------------------------------------------------- PTX helpers
// The slot protocol (smem_addr, cluster_rank, cluster_sync, events ① / ②: mbar_*,
// bulk_copy, init_barriers, cta_sync) comes from cluster_pipeline.cuh;
// this kernel's waits are unbounded spins.
using namespace pipeline;

__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// ---------------------------------------------------------------- arithmetic policy (BF16)
// Fragment layouts of mma.m16n8k16 (g = lane / 4, t = lane % 4):
//   A (16x16): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)
//   B (16x8):  b0 = (k 2t..2t+1, n g), b1 = (k 2t+8.., n g)
//   C (16x8):  c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)
struct Bf16Math {
  static constexpr int kRowBytes = kDim * 2;            // one token of K or V
  static constexpr int kStage = 64;                     // tokens per stage (half a page)
  static constexpr int kBlockRows = 8;                  // tokens per bulk copy
  static constexpr int kBlocks = kStage / kBlockRows;   // 8 blocks = 8 rows of an n-tile
  static constexpr int kBlockBytes = kBlockRows * kRowBytes;  // 2 KiB per copy
  static constexpr int kBlockStride = kBlockBytes + 16;  // padded: conflict-free ldmatrix
  static constexpr int kTileBytes = kBlocks * kBlockStride;  // one stage of K (or V) in a slot
  static constexpr int kSlotBytes = 2 * kTileBytes;     // K then V
  static constexpr uint32_t kTxBytes = 2u * kStage * kRowBytes;  // bytes landing per stage
  static constexpr int kKSteps = kDim / 16;             // 8 k-steps over d for Z = Q K^T
  static constexpr int kStageTiles = kStage / 8;        // n-tiles of 8 tokens per stage

  // Token (stage-relative) of column `col` of n-tile `jt`: tile jt = {jt, jt+8, ..., jt+56}.
  static __device__ __forceinline__ int token(int jt, int col) { return jt + kBlockRows * col; }
  static constexpr int kDimTiles = kDim / 8;            // 16 n-tiles of 8 dims for O

  using QFrag = uint32_t[kKSteps][4];

  // Q rows of one query (16 heads x 128 dims) straight from global into A fragments.
  static __device__ __forceinline__ void load_q(const __nv_bfloat16* qrow, int lane, QFrag& qa) {
    const int g = lane >> 2, t = lane & 3;
    const uint32_t* q32 = reinterpret_cast<const uint32_t*>(qrow);
    const int w = kDim / 2;  // 32-bit words per head row
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      const int c = ks * 8 + t;  // word column of dims 16ks + 2t
      qa[ks][0] = __ldg(q32 + g * w + c);
      qa[ks][1] = __ldg(q32 + (g + 8) * w + c);
      qa[ks][2] = __ldg(q32 + g * w + c + 4);
      qa[ks][3] = __ldg(q32 + (g + 8) * w + c + 4);
    }
  }

  // Z = Q K^T over the stage's n-tiles: s[nt] is the C tile of n-tile nt (tokens
  // token(nt, 0..7)).
  static __device__ __forceinline__ void scores(uint32_t k_tile, int lane,
                                                const QFrag& qa, float (&s)[kStageTiles][4]) {
#pragma unroll
    for (int nt = 0; nt < kStageTiles; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
    // ldmatrix.x4: lane l gives the row of token token(jt, l % 8) (block l % 8), matrix
    // m = l / 8 covers dims 32kk + 8m .. +7.
    const uint32_t row_base = k_tile + (lane & 7) * kBlockStride + (lane >> 3) * 16;
#pragma unroll
    for (int nt = 0; nt < kStageTiles; ++nt) {
#pragma unroll
      for (int kk = 0; kk < kKSteps / 2; ++kk) {
        uint32_t b[4];
        ldsm_x4(row_base + nt * kRowBytes + kk * 64, b);
        mma_bf16(s[nt], qa[2 * kk], b[0], b[1]);
        mma_bf16(s[nt], qa[2 * kk + 1], b[2], b[3]);
      }
    }
  }

  // region: pv-fragments
  // O += P V over the stage: P comes from the score registers (the C layout of two adjacent
  // token tiles is the A layout of one k-step of the next MMA).
  // k-step j runs over n-tiles 2j (k = 0..7) and 2j + 1 (k = 8..15).
  static __device__ __forceinline__ void accumulate(uint32_t v_tile, int lane,
                                                    const float (&p)[kStageTiles][4],
                                                    float (&o)[kDimTiles][4]) {
    // ldmatrix.x4.trans: matrix m holds the V rows of n-tile 2j + (m & 1) (row i = block i),
    // dims 16dp + 8(m >> 1) .. +7.
    const int m = lane >> 3;
    const uint32_t row_base =
        v_tile + (lane & 7) * kBlockStride + (m & 1) * kRowBytes + (m >> 1) * 16;
#pragma unroll
    for (int j = 0; j < kStage / 16; ++j) {
      const uint32_t pa[4] = {pack_bf16(p[2 * j][0], p[2 * j][1]),
                              pack_bf16(p[2 * j][2], p[2 * j][3]),
                              pack_bf16(p[2 * j + 1][0], p[2 * j + 1][1]),
                              pack_bf16(p[2 * j + 1][2], p[2 * j + 1][3])};
#pragma unroll
      for (int dp = 0; dp < kDimTiles / 2; ++dp) {
        uint32_t b[4];
        ldsm_x4_t(row_base + 2 * j * kRowBytes + dp * 32, b);
        mma_bf16(o[2 * dp], pa, b[0], b[1]);
        mma_bf16(o[2 * dp + 1], pa, b[2], b[3]);
      }
    }
  }
  // endregion: pv-fragments
};

// ---------------------------------------------------------------- the kernel body
template <int kCtas, class Math>
__device__ __forceinline__ void union_attention(const Args& a) {
  extern __shared__ __align__(128) uint8_t smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int cta = (kCtas == 1) ? 0 : static_cast<int>(cluster_rank());
  const int group = blockIdx.x / kCtas;
  const int head = blockIdx.y;

  // smem: [slot 0 | slot 1 | ...] then full[kNumSlots] (event ①), empty[kNumSlots] (event ②)
  const uint32_t slots = smem_addr(smem);
  const uint32_t full0 = slots + kNumSlots * Math::kSlotBytes;
  const uint32_t empty0 = full0 + 8 * kNumSlots;

  const int gi = head * a.plan.num_groups + group;
  const int4 gs = __ldg(a.plan.groups + gi);
  const int p_begin = __ldg(a.plan.page_offsets + gi);
  const int count = __ldg(a.plan.page_counts + gi);  // |U_G|
  const int slot = cta * kWarps + warp;                 // r: this warp's member position
  bool present = slot < gs.y;                           // short tail group: no query here
  int qid = 0, limit = kNoLimit;                        // original id π[r]; t < limit
  if (present) {
    qid = __ldg(a.plan.perm + gs.x + slot);
    if (qid < 0 || qid >= a.plan.n) present = false, qid = 0;  // corrupt π entry: select nothing
    if (a.plan.causal_pos) limit = min(limit, __ldg(a.plan.causal_pos + qid) + 1);  // t <= c_i
    if (a.plan.lengths) limit = min(limit, __ldg(a.plan.lengths + qid));            // t <  L_i
  }

  constexpr int kStages = kPage / Math::kStage;  // stages per page (2)
  const int stages = count * kStages;             // the walk: 2 |U_G| stages
  if (threadIdx.x == 0) {
    init_barriers<kCtas, kNumSlots, kThreads>(full0, empty0);  // events ① and ② of every slot
    // Arm event ① for the prologue stages before the cluster barrier, so the expect_tx always
    // precedes the bytes the peer's multicast delivers.
    for (int s = 0; s < kNumSlots && s < stages; ++s) mbar_arm(full0 + 8 * s, Math::kTxBytes);
  }
  cta_sync<kCtas>();

  // Producer: CTA0's warp 0 copies stage n of the walk into slot n % kNumSlots of every CTA.
  const bool producer = (cta == 0) && (warp == 0);
  const size_t head_page = static_cast<size_t>(kPage) * kDim;  // elements per (page, head)
  auto issue = [&](int n) {
    const int s = n % kNumSlots;
    int pid = __ldg(a.plan.pages + p_begin + n / kStages);
    if (pid < 0 || pid >= a.plan.num_pages) pid = 0;  // out of range: a valid page, masked below
    const size_t base = (static_cast<size_t>(pid) * a.plan.kv_heads + head) * head_page +
                        static_cast<size_t>(n % kStages) * Math::kStage * kDim;
    if (lane < 2 * Math::kBlocks) {  // lanes 0-7: K blocks, lanes 8-15: V blocks
      const int b = lane % Math::kBlocks;
      const bool is_v = lane >= Math::kBlocks;
      const uint32_t dst = slots + s * Math::kSlotBytes + (is_v ? Math::kTileBytes : 0) +
                           b * Math::kBlockStride;
      const __nv_bfloat16* src = (is_v ? a.v : a.k) + base + b * Math::kBlockRows * kDim;
      bulk_copy<kCtas>(dst, src, Math::kBlockBytes, full0 + 8 * s);
    }
  };
  if (producer) {
    for (int n = 0; n < kNumSlots && n < stages; ++n) issue(n);
  }

  typename Math::QFrag qa;
  if (present) {
    Math::load_q(a.q + (static_cast<size_t>(qid) * a.plan.kv_heads + head) * kHeads * kDim, lane,
                 qa);
  }

  float o[Math::kDimTiles][4];
#pragma unroll
  for (int i = 0; i < Math::kDimTiles; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m_lo = -INFINITY, m_hi = -INFINITY;  // running max of rows g and g + 8 (log2 units)
  float l_lo = 0.f, l_hi = 0.f;              // this thread's part of the running sums
  const int t2 = 2 * (lane & 3);

  // region: stage-wait
  for (int n = 0; n < stages; ++n) {
    const int s = n % kNumSlots;
    const uint32_t parity = (n / kNumSlots) & 1;
    const int pe = p_begin + n / kStages;  // the stage's page in U_G
    const int pid = __ldg(a.plan.pages + pe);
    const uint32_t member = (__ldg(a.plan.masks + pe) >> slot) & 1u;
    // Visible tokens of the stage: t = first + j is valid for j < vis (first = the stage's first
    // token). A stage whose first token is masked (vis <= 0) is wholly masked: skip it.
    const int vis = limit - (pid * kPage + (n % kStages) * Math::kStage);
    const bool work = present && member && pid >= 0 && pid < a.plan.num_pages && vis > 0;

    mbar_wait_spin(full0 + 8 * s, parity);  // event ①: stage n is in my slot s
    if (threadIdx.x == 0 && n + kNumSlots < stages) {
      mbar_arm(full0 + 8 * s, Math::kTxBytes);  // arm slot s for stage n + kNumSlots
    }
  // endregion: stage-wait

    if (work) {
      const uint32_t k_tile = slots + s * Math::kSlotBytes;
      // One softmax step per stage (64 tokens: Z in 32 registers), stages in walk order for
      // every grouping: original and regrouped runs are bitwise identical.
      const bool partial = vis < Math::kStage;  // causal / length tail in the stage
      float sc[Math::kStageTiles][4];
      Math::scores(k_tile, lane, qa, sc);
      float mx_lo = -INFINITY, mx_hi = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < Math::kStageTiles; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = sc[nt][e] * a.plan.scale_log2;
          if (partial && Math::token(nt, t2 + (e & 1)) >= vis) x = -INFINITY;
          sc[nt][e] = x;
        }
        mx_lo = fmaxf(mx_lo, fmaxf(sc[nt][0], sc[nt][1]));
        mx_hi = fmaxf(mx_hi, fmaxf(sc[nt][2], sc[nt][3]));
      }
#pragma unroll
      for (int d = 1; d <= 2; d <<= 1) {  // the 4 lanes of a quad share rows g and g + 8
        mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, d));
        mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, d));
      }
      // region: online-softmax
      // The stage's first token is valid, so both maxima are finite here.
      const float new_lo = fmaxf(m_lo, mx_lo), new_hi = fmaxf(m_hi, mx_hi);
      const float al_lo = exp2f(m_lo - new_lo), al_hi = exp2f(m_hi - new_hi);  // rescale
      m_lo = new_lo;
      m_hi = new_hi;
      float sum_lo = 0.f, sum_hi = 0.f;
#pragma unroll
      for (int nt = 0; nt < Math::kStageTiles; ++nt) {
        sc[nt][0] = exp2f(sc[nt][0] - new_lo);
        sc[nt][1] = exp2f(sc[nt][1] - new_lo);
        sc[nt][2] = exp2f(sc[nt][2] - new_hi);
        sc[nt][3] = exp2f(sc[nt][3] - new_hi);
        sum_lo += sc[nt][0] + sc[nt][1];
        sum_hi += sc[nt][2] + sc[nt][3];
      }
      l_lo = l_lo * al_lo + sum_lo;
      l_hi = l_hi * al_hi + sum_hi;
#pragma unroll
      for (int i = 0; i < Math::kDimTiles; ++i) {
        o[i][0] *= al_lo;
        o[i][1] *= al_lo;
        o[i][2] *= al_hi;
        o[i][3] *= al_hi;
      }
      Math::accumulate(k_tile + Math::kTileBytes, lane, sc, o);
      // endregion: online-softmax
    }

    __syncwarp();
    // region: stage-release
    mbar_release<kCtas>(empty0 + 8 * s);  // event ②: this thread is done with slot s
    if (producer && n + kNumSlots < stages) {
      mbar_wait_spin(empty0 + 8 * s, parity);  // event ②: both CTAs released slot s
      issue(n + kNumSlots);
    }
    // endregion: stage-release
  }

  // Normalize and write o[π[r]] (BF16). Rows of an empty A_i have l = 0 and O = 0.
  if (present) {
#pragma unroll
    for (int d = 1; d <= 2; d <<= 1) {
      l_lo += __shfl_xor_sync(0xffffffffu, l_lo, d);
      l_hi += __shfl_xor_sync(0xffffffffu, l_hi, d);
    }
    const float inv_lo = l_lo > 0.f ? 1.f / l_lo : 0.f;
    const float inv_hi = l_hi > 0.f ? 1.f / l_hi : 0.f;
    const int g = lane >> 2;
    uint32_t* out = reinterpret_cast<uint32_t*>(
        a.o + (static_cast<size_t>(qid) * a.plan.kv_heads + head) * kHeads * kDim);
#pragma unroll
    for (int i = 0; i < Math::kDimTiles; ++i) {
      const int w = (i * 8 + t2) / 2;
      out[g * (kDim / 2) + w] = pack_bf16(o[i][0] * inv_lo, o[i][1] * inv_lo);
      out[(g + 8) * (kDim / 2) + w] = pack_bf16(o[i][2] * inv_hi, o[i][3] * inv_hi);
    }
  }

  // No CTA may leave while its peer can still arrive on its barriers or write its slots.
  if constexpr (kCtas == 2) cluster_sync();
}

// Dynamic shared memory the launcher requests: kNumSlots * 33,024 B + 16 B of barriers per slot
// (66,080 B for two slots: two CTAs per SM), above the 48 KiB default, hence
// MAX_DYNAMIC_SHARED_SIZE_BYTES.
[[maybe_unused]] constexpr int kSmemBytes = kNumSlots * Bf16Math::kSlotBytes + 16 * kNumSlots;

}  // namespace union8
}  // namespace pageweaver

// Union8: grid (2 * G, H), clusters of two CTAs along x; plan built with g = 8.
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(pageweaver::union8::kThreads, 2)
    union8_bf16(const pageweaver::union8::Args a) {
  pageweaver::union8::union_attention<2, pageweaver::union8::Bf16Math>(a);
}

// Union4 (group-size control): grid (G, H), one CTA per group; plan built with g = 4.
extern "C" __global__ void __launch_bounds__(pageweaver::union8::kThreads, 2)
    union4_bf16(const pageweaver::union8::Args a) {
  pageweaver::union8::union_attention<1, pageweaver::union8::Bf16Math>(a);
}
