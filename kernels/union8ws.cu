// Warp-specialized FP8 Union8 on one SM per group (sm_90a): the fast kernel of the series.
//
// The cluster kernel (union8_fp8.cu) runs Figure 3 literally: two CTAs on two SMs walk U_G in
// lockstep through two shared slots, so each CTA waits for its peer on every page, also on the
// pages only the peer needs. This kernel keeps the work split and the arithmetic and changes
// where the two halves of a group live:
//
//   one CTA per SM, persistent, 3 warpgroups (384 threads):
//     warpgroup 0, the producer (setmaxnreg 24):
//       warp 0, the loader: streams each group through a ring of kStages stages of 32 KiB:
//         first the group's Q (the 8 queries' BF16 rows, 4 KiB each), then the pages of U_G
//         (K tile + V^T tile), with bulk copies; beside each page stage it writes the tokens
//         each of the 8 slots sees on it (one byte per slot), so consumers never start a
//         dependent global load in the page loop;
//       warp 1, the scheduler: takes the next group from a global group counter and writes
//         its header (U_G in the plan, π of its slots, min(c_i + 1, L_i) per slot), one group
//         ahead (two headers);
//     warpgroups 1 and 2, the consumers (setmaxnreg 240): consumer c owns slots 4c .. 4c+3,
//       i.e. the paper's CTA c: 4 queries x 16 local heads = one M64 tile.
//   Both consumers read the same stage, so each union page is copied into the SM once.
//
// Events ① and ② become a ring of CTA-scope mbarriers:
//   full[s]   (event ①) the loader's arrive.expect_tx + the stage's copy bytes;
//   empty[s]  (event ②) one arrival per consumer thread (256): both consumers are done with
//             stage s, the loader may refill it;
//   hfull[b]  the scheduler wrote header b;  hfree[b] the loader and the consumers read it.
// A consumer with no visible slot on a stage waits on full (the stage holds its metadata),
// arrives on empty at once and does no MMA: its work is C4 rounds while the bytes are union
// visits, and one consumer may run up to kStages stages ahead of the other.
//
// Per working stage, consumer c does what the cluster kernel's CTA c does (fp8_wgmma.cuh):
// S = Q8 K8^T (Q8 in shared memory, quantized by the consumer at the group's Q stage), the
// online-softmax step on each warp whose query sees the page (other warps give P = 0 and do no
// exponentials), O_p = P8 V8, O = fma(O, a, O_p); the causal / length column mask only on a
// partially visible page. The arithmetic is the cluster kernel's op for op, so the two kernels'
// outputs are bitwise identical. The order of the products is FlashAttention-3's
// intra-warpgroup overlap: the next page's QK and this page's PV are in flight while the CUDA
// cores run the next page's softmax (PW_WS_OVERLAP).
//
// Every CTA's scheduler claims groups until its claim is past the end, so a launch makes exactly
// H*G + gridDim.x claims, numbered 0 .. H*G + gridDim.x - 1 from a counter that starts at 0. The
// scheduler that draws the last number knows every other claim is made: it sets the counter
// back to 0 for the next launch (no value kept on the host, so graph replays see 0 too).
// Every mbarrier wait is bounded (PW_WAIT_TIMEOUT_NS): a protocol bug faults the launch instead
// of hanging the device.
#include "cluster_pipeline.cuh"
#include "bf16_wgmma.cuh"
#include "fp8_wgmma.cuh"
#include "union_plan_args.cuh"

#include <cuda_bf16.h>
#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#ifndef PW_UNION_SLOTS
#define PW_UNION_SLOTS 6
#endif
// 1: a consumer starts the next page's QK and the current page's PV together and runs the
// next page's softmax while the tensor cores work (FlashAttention-3's intra-warpgroup
// overlap); 0: QK, softmax, PV one after the other.
#ifndef PW_WS_OVERLAP
#define PW_WS_OVERLAP 1
#endif
// 1: the FP8 consumer takes a page's sum p from the tensor core (P8 times a tile of E4M3 ones,
// issued with the second half of PV), so the softmax step runs no serial FADD chains and l sums
// exactly the E4M3 P that PV multiplies; 0: the cluster kernel's FP32 sums on the CUDA cores
// (then both kernels' outputs are bitwise identical).
#ifndef PW_WS_TC_SUM
#define PW_WS_TC_SUM 0
#endif
// 1: O accumulates in the tensor core across pages (and l too with PW_WS_TC_SUM); a row
// rescales them only when a page's maximum passes its reference maximum by more than kLazyTau
// (log2 units), so most pages run no fold and no rescale on the CUDA cores.
#ifndef PW_WS_LAZY
#define PW_WS_LAZY 0
#endif
#ifndef PW_WAIT_TIMEOUT_NS
#define PW_WAIT_TIMEOUT_NS 10000000000ull
#endif

namespace pageweaver {
namespace union8ws {

using namespace pipeline;
using namespace fp8;

constexpr int kStages = PW_UNION_SLOTS;
constexpr int kGroupSlots = 8;                 // g: two consumers of four slots
constexpr int kConsumerSlots = 4;
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kConsumerThreads = 128 * kConsumers;
constexpr int kStageBytes = 2 * kTileBytes;    // K tile, then V^T tile
constexpr int kQRowBytes = kHeads * kDim * 2;  // one query's 16 local heads in BF16: 4 KiB
static_assert(kGroupSlots * kQRowBytes == kStageBytes, "a group's BF16 Q fills one stage");
constexpr int kProducerRegs = 24;
constexpr int kConsumerRegs = 240;             // 128 x 24 + 256 x 240 <= 64 K registers

struct Args {
  const __nv_bfloat16* __restrict__ q;  // [N, H*16, 128] bf16
  const uint8_t* __restrict__ k;        // [pages, H, 16384] swizzled K tiles (E4M3)
  const uint8_t* __restrict__ vt;       // [pages, H, 16384] swizzled V^T tiles (E4M3)
  __nv_bfloat16* __restrict__ o;        // [N, H*16, 128] bf16
  const float* __restrict__ k_scale;    // [H]
  const float* __restrict__ v_scale;    // [H]
  unsigned long long* counter;          // the group counter: 0 between launches (see the header)
  UnionPlanArgs plan;
};
static_assert(sizeof(Args) == 144 && offsetof(Args, plan) == 56,
              "the packed host buffer (ARG_FORMAT of the union8ws front end)");

// A group's header (written by the scheduler), 80 bytes, two of them, int32 fields:
//   work   head * G + group, or -1: no more groups
//   begin  first entry of U_G in plan.pages / plan.masks;  count |U_G|;  head the KV head
//   qid[r] π[base + r], or -1 (no query in slot r)
//   lim[r] visible tokens of slot r: min(c_i + 1, L_i), 0 for no query
constexpr int kHWork = 0, kHBegin = 4, kHCount = 8, kHHead = 12, kHQid = 16,
              kHLim = kHQid + 4 * kGroupSlots, kHeaderBytes = kHLim + 4 * kGroupSlots;
// A stage's metadata (written by the loader), 8 bytes: byte r = the tokens of the page that
// slot r sees, 0 .. 128 (0: slot r does not select the page, or sees none of it; 128: all).
// Word c holds consumer c's four slots, so "consumer c works on this stage" is one compare.
constexpr int kMetaBytes = 8;

// Shared memory from a 1 KiB aligned base: the ring, a Q tile per consumer, metadata, two
// headers, barriers.
constexpr int kQTileBytes = 64 * kDim * 2;      // a consumer's 4 queries: BF16 16 KiB, E4M3 8 KiB
constexpr int kOnesOffset = kQTileBytes / 2;    // FP8: a 1 KiB tile of E4M3 ones behind Q8
static_assert(kOnesOffset + kOnesTileBytes <= kQTileBytes, "the ones tile fits behind Q8");
constexpr int kRingOffset = 0;
constexpr int kQTileOffset = kRingOffset + kStages * kStageBytes;
constexpr int kMetaOffset = kQTileOffset + kConsumers * kQTileBytes;
constexpr int kHeaderOffset = kMetaOffset + kStages * kMetaBytes;
constexpr int kBarOffset = kHeaderOffset + 2 * kHeaderBytes;
constexpr int kFull = kBarOffset, kEmpty = kFull + 8 * kStages, kHFull = kEmpty + 8 * kStages,
              kHFree = kHFull + 16;
constexpr int kSmemBytes = 1024 + kHFree + 16;  // 1 KiB of alignment slack
static_assert(kBarOffset % 8 == 0, "mbarriers are 8-byte aligned");
static_assert(kSmemBytes <= 232448, "227 KiB of dynamic shared memory per block");

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  mbar_wait_bounded<PW_WAIT_TIMEOUT_NS>(bar, parity);
}
__device__ __forceinline__ void arrive(uint32_t bar) { mbar_release<1>(bar); }
// Plain shared-memory words at 32-bit shared addresses (the producer writes headers and stage
// metadata, the consumers read them after the barrier that publishes them).
__device__ __forceinline__ int lds(uint32_t addr) {
  int v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint2 lds64(uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void sts(uint32_t addr, int v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

// ---------------------------------------------------------------- scheduler (warp 1)
__device__ __forceinline__ void schedule(const Args& a, uint32_t base, int lane) {
  const int total = a.plan.kv_heads * a.plan.num_groups;
  for (int j = 0;; ++j) {
    const int b = j & 1;
    const uint32_t h = base + kHeaderOffset + b * kHeaderBytes;
    if (j >= 2) mbar_wait(base + kHFree + 8 * b, ((j >> 1) - 1) & 1);  // header j-2 read
    unsigned long long claim = 0;
    if (lane == 0) {
      claim = atomicAdd(a.counter, 1ull);
      // The launch's last claim: no CTA touches the counter after it.
      if (claim == static_cast<unsigned long long>(total) + gridDim.x - 1) {
        atomicExch(a.counter, 0ull);
      }
    }
    claim = __shfl_sync(0xffffffffu, claim, 0);
    if (claim >= static_cast<unsigned long long>(total)) {
      if (lane == 0) sts(h + kHWork, -1);
      __syncwarp();
      arrive(base + kHFull + 8 * b);
      return;
    }
    const int w = static_cast<int>(claim);
    const int head = w / a.plan.num_groups;
    const int4 gs = __ldg(a.plan.groups + w);
    const int p_begin = __ldg(a.plan.page_offsets + w);
    const int count = __ldg(a.plan.page_counts + w);
    int id = -1, lim = 0;
    if (lane < kGroupSlots && lane < gs.y) id = __ldg(a.plan.perm + gs.x + lane);
    if (id >= 0 && id < a.plan.n) {
      lim = kNoLimit;
      if (a.plan.causal_pos) lim = min(lim, __ldg(a.plan.causal_pos + id) + 1);  // t <= c_i
      if (a.plan.lengths) lim = min(lim, __ldg(a.plan.lengths + id));            // t <  L_i
    } else {
      id = -1;
    }
    if (lane == 0) {
      sts(h + kHWork, w);
      sts(h + kHBegin, p_begin);
      sts(h + kHCount, count);
      sts(h + kHHead, head);
    }
    if (lane < kGroupSlots) {
      sts(h + kHQid + 4 * lane, id);
      sts(h + kHLim + 4 * lane, lim);
    }
    arrive(base + kHFull + 8 * b);  // 32 arrivals: the header is written
  }
}

// ---------------------------------------------------------------- loader (warp 0)
// kHalves stages per page: 1 (FP8: K and V^T tiles of a whole page, 16 KiB each) or 2 (BF16:
// half pages); a.k / a.vt hold [pages, H, kHalves, 16 KiB] tiles.
template <int kHalves>
__device__ __forceinline__ void load_pages(const Args& a, uint32_t base, int lane) {
  constexpr int kTokens = kPage / kHalves;  // tokens per stage
  // Ring position s; ring bit 0: the parity of the current pass over the ring, bit 1: a pass
  // has completed (from then on a stage is refilled only after event ②), bits 2..3: the group
  // number mod 4 (header b = bit 2, its phase parity = bit 3). Few registers: the producer
  // warpgroup runs on 24.
  int s = 0;
  uint32_t ring = 0;
  auto next_stage = [&]() {
    if (++s == kStages) s = 0, ring = (ring ^ 1u) | 2u;
  };
  auto wait_free = [&]() {
    if (ring & 2u) mbar_wait(base + kEmpty + 8 * s, (ring & 1u) ^ 1u);  // event ②
  };
  for (;; ring = (ring + 4u) & 15u) {
    const int b = (ring >> 2) & 1;
    const uint32_t h = base + kHeaderOffset + b * kHeaderBytes;
    mbar_wait(base + kHFull + 8 * b, (ring >> 3) & 1u);
    const int work = lds(h + kHWork), p_begin = lds(h + kHBegin);
    const int stages = lds(h + kHCount) * kHalves, head = lds(h + kHHead);
    const int lim = lane < kGroupSlots ? lds(h + kHLim + 4 * lane) : 0;  // lane r: slot r
    const int qid = lane < kGroupSlots ? lds(h + kHQid + 4 * lane) : -1;
    arrive(base + kHFree + 8 * b);  // done with the header
    if (work < 0) return;
    // The group's first stage holds its queries: slot r's 16 BF16 Q rows at r * 4 KiB.
    wait_free();
    {
      const uint32_t full = base + kFull + 8 * s;
      const int present = __popc(__ballot_sync(0xffffffffu, qid >= 0));
      if (lane == 0) mbar_arm(full, static_cast<uint32_t>(present * kQRowBytes));
      __syncwarp();  // the expect_tx precedes every copy's bytes
      if (qid >= 0) {
        const __nv_bfloat16* src =
            a.q + (static_cast<size_t>(qid) * a.plan.kv_heads + head) * kHeads * kDim;
        bulk_copy<1>(base + kRingOffset + s * kStageBytes + lane * kQRowBytes, src, kQRowBytes,
                     full);
      }
    }
    next_stage();
    int pid = -1, mask = 0;  // U_G entries m .. m + 31, one per lane
    for (int i = 0; i < stages; ++i) {
      const int m = i / kHalves, hf = i % kHalves;
      if ((m & 31) == 0 && hf == 0) {
        const int e = p_begin + m + lane;
        const bool in = m + lane < stages / kHalves;
        pid = in ? __ldg(a.plan.pages + e) : -1;
        mask = in ? __ldg(a.plan.masks + e) : 0;
      }
      // region: ws-loader-page
      wait_free();
      const int p = __shfl_sync(0xffffffffu, pid, m & 31);
      const int mk = __shfl_sync(0xffffffffu, mask, m & 31);
      const bool ok = p >= 0 && p < a.plan.num_pages;
      // lane r < 8: the tokens of this stage slot r sees (t < lim[r]), one byte per slot
      const int seen = (ok && ((mk >> lane) & 1))
                           ? min(max(lim - (p * kPage + hf * kTokens), 0), kTokens) : 0;
      const uint32_t w0 = __reduce_or_sync(0xffffffffu, lane < 4 ? seen << (8 * lane) : 0);
      const uint32_t w1 = __reduce_or_sync(
          0xffffffffu, lane >= 4 && lane < 8 ? seen << (8 * (lane - 4)) : 0);
      if (lane == 0) {
        const uint32_t meta = base + kMetaOffset + s * kMetaBytes;
        sts(meta, static_cast<int>(w0));
        sts(meta + 4, static_cast<int>(w1));
        const uint32_t full = base + kFull + 8 * s;
        const bool copy = ok && kPageCopies;  // (no copies: a PW_ABLATE timing build)
        mbar_arm(full, copy ? static_cast<uint32_t>(kStageBytes) : 0u);
        if (copy) {
          const size_t src =
              ((static_cast<size_t>(p) * a.plan.kv_heads + head) * kHalves + hf) * kTileBytes;
          const uint32_t dst = base + kRingOffset + s * kStageBytes;
          bulk_copy<1>(dst, a.k + src, kTileBytes, full);
          bulk_copy<1>(dst + kTileBytes, a.vt + src, kTileBytes, full);
        }
      }
      next_stage();
      // endregion: ws-loader-page
    }
  }
}

// ---------------------------------------------------------------- consumers (warpgroups 1, 2)
// A working stage of one consumer, packed in one register: ring position s and the tokens of
// the stage my warp's query sees (0: its rows give P = 0 and skip the softmax and the fold).
struct Page {
  int packed;  // s | seen << 8
  __device__ __forceinline__ int s() const { return packed & 0xff; }
  __device__ __forceinline__ int seen() const { return packed >> 8; }
};

// One consumer's walk over the ring (both consumers walk every stage, in order).
struct Walker {
  uint32_t base;
  int c, warp;      // consumer, warp in the consumer
  int s = 0;         // next ring position
  uint32_t ph = 0;   // bit 0: parity of the current pass over the ring; bits 1..2: groups
                     // opened so far mod 4 (header b = bit 1, its phase parity = bit 2)
  int left = 0;      // stages of the current group not looked at yet

  __device__ __forceinline__ uint32_t stage(int pos) const {
    return base + kRingOffset + pos * kStageBytes;
  }
  __device__ __forceinline__ uint32_t phase() const { return ph & 1u; }
  __device__ __forceinline__ void advance() {
    if (++s == kStages) s = 0, ph ^= 1u;
  }
  __device__ __forceinline__ void release(int pos) const {
    __syncwarp();
    arrive(base + kEmpty + 8 * pos);  // event ②: this thread is done with the stage
  }

  __device__ __forceinline__ uint32_t header() const {
    return base + kHeaderOffset + ((ph >> 1) & 1u) * kHeaderBytes;
  }
  __device__ __forceinline__ int head() const { return lds(header() + kHHead); }
  __device__ __forceinline__ int qid(int slot) const { return lds(header() + kHQid + 4 * slot); }
  __device__ __forceinline__ int my_qid() const { return qid(kConsumerSlots * c + warp); }

  // Opens the next group: reads its header (returns false at the end of the work), waits for
  // the group's Q stage and returns its position in q_stage; the caller builds its Q tile from
  // it, calls close_q(q_stage), works through the group's stages, reads what it needs of the
  // header and calls close_group().
  __device__ __forceinline__ bool open(int stages_per_page, int& q_stage) {
    mbar_wait(base + kHFull + 8 * ((ph >> 1) & 1u), (ph >> 2) & 1u);
    if (lds(header() + kHWork) < 0) return false;  // (the loader and scheduler are done too)
    left = lds(header() + kHCount) * stages_per_page;
    mbar_wait(base + kFull + 8 * s, phase());
    q_stage = s;
    advance();
    return true;
  }
  __device__ __forceinline__ void close_group() {
    arrive(base + kHFree + 8 * ((ph >> 1) & 1u));  // the header is read
    ph = (ph + 2u) & 7u;
  }
  __device__ __forceinline__ void close_q(int q_stage) const {
    fence_proxy_async();  // my Q tile stores, before the tensor cores read them
    arrive(base + kEmpty + 8 * q_stage);
    asm volatile("bar.sync %0, 128;" ::"r"(1 + c) : "memory");  // the whole Q tile is there
  }

  // The next stage of the group that my consumer works on; stages it skips are released at
  // once. kNone: the group has no more. kBlocked: the next stage to look at would land in
  // ring slot `hold`, which this consumer still holds (the stage whose PV is pending), so the
  // loader cannot fill it: finish that stage first, then look again.
  static constexpr int kFound = 0, kNone = 1, kBlocked = 2;
  // region: ws-consumer-walk
  __device__ __forceinline__ int next(Page& pg, int hold) {
    while (left > 0) {
      if (s == hold) return kBlocked;
      --left;
      mbar_wait(base + kFull + 8 * s, phase());  // event ①: the stage and its metadata
      const uint32_t mine = lds(base + kMetaOffset + s * kMetaBytes + 4 * c);
      pg.packed = s | static_cast<int>(((mine >> (8 * warp)) & 0xffu) << 8);
      advance();
      if (mine) return kFound;  // warpgroup-uniform
      arrive(base + kEmpty + 8 * pg.s());
    }
    return kNone;
  }
  // endregion: ws-consumer-walk
};

// ---- FP8: one stage = one page (fp8_wgmma.cuh)
// The online-softmax step of my warp on page pg in two parts: part A the row maxima and the
// exponentials of columns 0 .. 63, part B those of columns 64 .. 127 and the running sums; each
// part fills half of the P fragments. A warp whose query does not see the page gives P = 0 and
// a = 1.
struct PageStep {
  SoftmaxSums st;
  float al_lo, al_hi;
};
__device__ __forceinline__ void softmax_a(float (&d)[64], const Page& pg, int t,
                                          float rf_lo, float rf_hi, float& m_lo, float& m_hi,
                                          PageStep& ps, uint32_t (&pa)[kKSteps][4]) {
  ps.al_lo = ps.al_hi = 1.f;
  const int vis = pg.seen();
  if (vis > 0 && kSoftmaxStep) {
    if (vis < kPage) {  // causal / length tail inside this page
      softmax_max<true>(d, vis, t, rf_lo, rf_hi, m_lo, m_hi, ps.al_lo, ps.al_hi, ps.st);
      softmax_exps<true, 0, 2, !PW_WS_TC_SUM>(d, vis, t, rf_lo, rf_hi, ps.st, pa);
    } else {
      softmax_max<false>(d, kPage, t, rf_lo, rf_hi, m_lo, m_hi, ps.al_lo, ps.al_hi, ps.st);
      softmax_exps<false, 0, 2, !PW_WS_TC_SUM>(d, kPage, t, rf_lo, rf_hi, ps.st, pa);
    }
  } else {
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) pa[ks][0] = pa[ks][1] = pa[ks][2] = pa[ks][3] = 0u;
  }
}
__device__ __forceinline__ void softmax_b(float (&d)[64], const Page& pg, int t,
                                          float rf_lo, float rf_hi, PageStep& ps, float& l_lo,
                                          float& l_hi, uint32_t (&pa)[kKSteps][4]) {
  const int vis = pg.seen();
  if (vis > 0 && kSoftmaxStep) {
    if (vis < kPage) {
      softmax_exps<true, 2, 4, !PW_WS_TC_SUM>(d, vis, t, rf_lo, rf_hi, ps.st, pa);
    } else {
      softmax_exps<false, 2, 4, !PW_WS_TC_SUM>(d, kPage, t, rf_lo, rf_hi, ps.st, pa);
    }
    if constexpr (!PW_WS_TC_SUM) softmax_finish(ps.al_lo, ps.al_hi, ps.st, l_lo, l_hi);
  } else {
#pragma unroll
    for (int ks = 2; ks < 4; ++ks) pa[ks][0] = pa[ks][1] = pa[ks][2] = pa[ks][3] = 0u;
  }
}

// S = Q8 K8^T of the page at stage address st, issued (not waited for).
__device__ __forceinline__ void issue_qk(float (&d)[64], uint32_t q8, uint32_t st) {
  if constexpr (kProducts) {
    wgmma_issue_ss(d, q8, st);
  } else {  // the ablation builds (PW_ABLATE, fp8_wgmma.cuh)
    opaque_accumulator(d);
  }
}
// Output dims 64 h .. 64 h + 63 of O_p = P8 V8 for the page at stage address st, issued as one
// committed group; with the second half (PW_WS_TC_SUM) also the page's row sums of P8 into rs
// (P8 times the ones tile: every column of rs is sum p of its row).
template <int kHalf>
__device__ __forceinline__ void issue_pv(float (&op)[32], float (&rs)[4],
                                         const uint32_t (&pa)[kKSteps][4], uint32_t st,
                                         uint32_t ones) {
  if constexpr (kProducts) {
    const uint64_t desc = sw128_desc(st + kTileBytes + kHalf * (kTileBytes / 2));
    wgmma_fence();
    wgmma_m64n64k32<false>(op, pa[0], desc);
#pragma unroll
    for (int ks = 1; ks < kKSteps; ++ks) wgmma_m64n64k32<true>(op, pa[ks], desc + 2 * ks);
    if constexpr (PW_WS_TC_SUM && kHalf == 1) {
      const uint64_t od = sw128_desc(ones);
      wgmma_m64n8k32<false>(rs, pa[0], od);
#pragma unroll
      for (int ks = 1; ks < kKSteps; ++ks) wgmma_m64n8k32<true>(rs, pa[ks], od + 2 * ks);
    }
    wgmma_commit();
  }
}

// Q rows g and g + 8 of my warp's query from the group's Q stage -> E4M3 -> my Q8 tile, and
// the row factors rf (my previous group's QKs have all completed, so the tile is free).
__device__ __forceinline__ void build_q8(const Args& a, const Walker& w, int q_stage,
                                         uint32_t q8, int g, int t, float& rf_lo,
                                         float& rf_hi) {
  const int qid = w.my_qid();
  uint2 raw[2][2 * kKSteps];
  uint32_t qa[kKSteps][4];
  const uint32_t qrow = w.stage(q_stage) + (kConsumerSlots * w.c + w.warp) * kQRowBytes;
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
#pragma unroll
    for (int cc = 0; cc < 2 * kKSteps; ++cc) {
      const int col = 32 * (cc >> 1) + 16 * (cc & 1) + 4 * t;
      raw[hr][cc] = qid >= 0 ? lds64(qrow + 2 * ((g + 8 * hr) * kDim + col))
                             : make_uint2(0u, 0u);
    }
  }
  quantize_q_rows(raw, __ldg(a.k_scale + w.head()) * a.plan.scale_log2, qa, rf_lo, rf_hi);
  store_a_tile(q8, qa, w.warp, g, t);
}

// Every consumer thread writes 8 bytes of its consumer's 1 KiB tile of E4M3 ones (B of the
// row-sum product); the first close_q's proxy fence and barrier publish it to the tensor cores.
__device__ __forceinline__ void fill_ones(uint32_t ones, int tid) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %1};" ::"r"(ones + 8 * tid), "r"(kE4m3OnesWord)
               : "memory");
}

__device__ __forceinline__ void consume_fp8(const Args& a, uint32_t base, int c) {
  const int tid = threadIdx.x - 128 * (1 + c);
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const uint32_t q8 = base + kQTileOffset + c * kQTileBytes;
  const uint32_t ones = q8 + kOnesOffset;
  if constexpr (PW_WS_TC_SUM) fill_ones(ones, tid);
  Walker w{base, c, warp};
  for (int q_stage; w.open(1, q_stage);) {
    float rf_lo, rf_hi;
    build_q8(a, w, q_stage, q8, g, t, rf_lo, rf_hi);
    w.close_q(q_stage);

    float o[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
    float m_lo = -INFINITY, m_hi = -INFINITY;  // running max (log2 units) of rows g, g + 8
    float l_lo = 0.f, l_hi = 0.f;              // this thread's part of the running sums (x 2^8)

    // Page k's PV runs on the tensor cores while page k + 1's softmax runs on the CUDA cores:
    // QK(k+1) and the first half of PV(k) are issued together, softmax part A of page k+1 runs
    // behind them, the second half of PV(k) is issued after the first is folded and runs
    // during part B. P fragments alternate between pa and pb (two unrolled steps), so the
    // registers a PV in flight reads are never written before it completes.
    float d[64], op[32], rs[4];
    uint32_t pa[kKSteps][4], pb[kKSteps][4];
    PageStep sa, sb;
    Page cur{0}, nxt{0};
    auto fold = [&](const PageStep& ps, auto half) {
      constexpr int kHalf = decltype(half)::value;
      wgmma_wait<0>();
      fence_acc(op);
      if constexpr (PW_WS_TC_SUM && kHalf == 1) fence_acc(rs);
      if (cur.seen()) {
        fold_half<kHalf>(o, op, ps.al_lo, ps.al_hi);
        if constexpr (PW_WS_TC_SUM && kHalf == 1) {  // l = l a + sum p8 (the page's row sums)
          l_lo = fmaf(l_lo, ps.al_lo, rs[0]);
          l_hi = fmaf(l_hi, ps.al_hi, rs[2]);
        }
      }
      __syncwarp();
    };
    auto step = [&](uint32_t (&p_cur)[kKSteps][4], const PageStep& s_cur,
                    uint32_t (&p_nxt)[kKSteps][4], PageStep& s_nxt) {
      __syncwarp();
      if constexpr (PW_WS_OVERLAP) {
        issue_qk(d, q8, w.stage(nxt.s()));        // S of the next page (d is free again) ...
        issue_pv<0>(op, rs, p_cur, w.stage(cur.s()), ones);  // ... then half of O_p of this page
        wgmma_wait<1>();                         // S is there; the PV half still runs
        fence_acc(d);
        softmax_a(d, nxt, t, rf_lo, rf_hi, m_lo, m_hi, s_nxt, p_nxt);
        fold(s_cur, std::integral_constant<int, 0>());
        issue_pv<1>(op, rs, p_cur, w.stage(cur.s()), ones);  // the other half runs during part B
        softmax_b(d, nxt, t, rf_lo, rf_hi, s_nxt, l_lo, l_hi, p_nxt);
        fold(s_cur, std::integral_constant<int, 1>());
      } else {  // one product at a time
        issue_pv<0>(op, rs, p_cur, w.stage(cur.s()), ones);
        fold(s_cur, std::integral_constant<int, 0>());
        issue_pv<1>(op, rs, p_cur, w.stage(cur.s()), ones);
        fold(s_cur, std::integral_constant<int, 1>());
        issue_qk(d, q8, w.stage(nxt.s()));
        wgmma_wait<0>();
        fence_acc(d);
        softmax_a(d, nxt, t, rf_lo, rf_hi, m_lo, m_hi, s_nxt, p_nxt);
        softmax_b(d, nxt, t, rf_lo, rf_hi, s_nxt, l_lo, l_hi, p_nxt);
      }
      w.release(cur.s());
      cur = nxt;
    };
    auto last = [&](uint32_t (&p_cur)[kKSteps][4], const PageStep& s_cur) {
      __syncwarp();
      issue_pv<0>(op, rs, p_cur, w.stage(cur.s()), ones);  // the group's last page
      fold(s_cur, std::integral_constant<int, 0>());
      issue_pv<1>(op, rs, p_cur, w.stage(cur.s()), ones);
      fold(s_cur, std::integral_constant<int, 1>());
      w.release(cur.s());
    };
    for (int got = w.next(cur, -1); got == Walker::kFound; got = w.next(cur, -1)) {
      __syncwarp();  // wgmma is .aligned: the warp converges after the per-thread waits
      issue_qk(d, q8, w.stage(cur.s()));
      wgmma_wait<0>();
      fence_acc(d);
      softmax_a(d, cur, t, rf_lo, rf_hi, m_lo, m_hi, sa, pa);
      softmax_b(d, cur, t, rf_lo, rf_hi, sa, l_lo, l_hi, pa);
      for (;;) {
        got = w.next(nxt, cur.s());
        if (got != Walker::kFound) {
          last(pa, sa);
          break;
        }
        step(pa, sa, pb, sb);
        got = w.next(nxt, cur.s());
        if (got != Walker::kFound) {
          last(pb, sb);
          break;
        }
        step(pb, sb, pa, sa);
      }
      if (got == Walker::kNone) break;
    }

    const int qid = w.my_qid(), head = w.head();
    if (qid >= 0) {  // o[π[r]]: O and l both carry the 2^8 of P; V's scale here
      store_rows<!PW_WS_TC_SUM>(
          a.o + (static_cast<size_t>(qid) * a.plan.kv_heads + head) * kHeads * kDim, o, l_lo,
          l_hi, __ldg(a.v_scale + head), g, t);
    }
    w.close_group();
  }
}

// ---- FP8 with O and l in the tensor core (PW_WS_LAZY)
constexpr int kLazyShift = 6;     // p = 2^(6 + rf S - m): at most 2^(6 + kLazyTau) = 256
constexpr float kLazyTau = 2.f;   // a row rescales only when its maximum grows by more

// The lazy online-softmax step of my warp on page pg: the page maximum; rows whose maximum
// passes their reference m by more than kLazyTau first scale O and l by 2^(m - m') (after the
// pending PV completed: O is a tensor-core accumulator) and take m'; then p into the A
// fragments. A row's first visible page only sets m (O and l are still 0). l4 holds l: with
// PW_WS_TC_SUM the m64n8 accumulator of the row sums of P8 (l4[0], l4[2]: rows g, g + 8, whole),
// else this thread's FP32 partial sums in l4[0] and l4[2] (summed over the quad at the end).
__device__ __forceinline__ void softmax_lazy(float (&d)[64], const Page& pg, int t, float rf_lo,
                                             float rf_hi, float& m_lo, float& m_hi,
                                             float (&o)[64], float (&l4)[4],
                                             uint32_t (&pa)[kKSteps][4]) {
  const int vis = pg.seen();
  if (vis == 0 || !kSoftmaxStep) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) pa[ks][0] = pa[ks][1] = pa[ks][2] = pa[ks][3] = 0u;
    return;
  }
  float mx_lo, mx_hi;
  if (vis < kPage) {
    page_max<true>(d, vis, t, mx_lo, mx_hi);
  } else {
    page_max<false>(d, kPage, t, mx_lo, mx_hi);
  }
  const float n_lo = mx_lo * rf_lo, n_hi = mx_hi * rf_hi;  // rf >= 0 keeps the order of S
  const bool up_lo = n_lo > m_lo + kLazyTau, up_hi = n_hi > m_hi + kLazyTau;
  const bool rs_lo = up_lo && m_lo != -INFINITY, rs_hi = up_hi && m_hi != -INFINITY;
  if (__any_sync(0xffffffffu, rs_lo || rs_hi)) {
    wgmma_wait<0>();
    fence_acc(o);
    fence_acc(l4);
    const float a_lo = rs_lo ? ex2(m_lo - n_lo) : 1.f, a_hi = rs_hi ? ex2(m_hi - n_hi) : 1.f;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      o[4 * j] *= a_lo;
      o[4 * j + 1] *= a_lo;
      o[4 * j + 2] *= a_hi;
      o[4 * j + 3] *= a_hi;
    }
    l4[0] *= a_lo;
    l4[1] *= a_lo;
    l4[2] *= a_hi;
    l4[3] *= a_hi;
  }
  m_lo = up_lo ? n_lo : m_lo;
  m_hi = up_hi ? n_hi : m_hi;
  SoftmaxSums st;
  st.sh_lo = static_cast<float>(kLazyShift) - m_lo;
  st.sh_hi = static_cast<float>(kLazyShift) - m_hi;
  st.sum_lo = st.sum_hi = 0.f;
  if (vis < kPage) {
    softmax_exps<true, 0, kKSteps, !PW_WS_TC_SUM>(d, vis, t, rf_lo, rf_hi, st, pa);
  } else {
    softmax_exps<false, 0, kKSteps, !PW_WS_TC_SUM>(d, kPage, t, rf_lo, rf_hi, st, pa);
  }
  if constexpr (!PW_WS_TC_SUM) {
    l4[0] += st.sum_lo;
    l4[2] += st.sum_hi;
  }
}

// O += P8 V8 (and l += P8 x ones with PW_WS_TC_SUM) for the page at stage address st: one
// committed group that accumulates into the running O and l.
__device__ __forceinline__ void issue_pv_acc(float (&o)[64], float (&l4)[4],
                                             const uint32_t (&pa)[kKSteps][4], uint32_t st,
                                             uint32_t ones) {
  if constexpr (kProducts) {
    const uint64_t desc = sw128_desc(st + kTileBytes), od = sw128_desc(ones);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) wgmma_m64n128k32<true>(o, pa[ks], desc + 2 * ks);
    if constexpr (PW_WS_TC_SUM) {
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) wgmma_m64n8k32<true>(l4, pa[ks], od + 2 * ks);
    }
    wgmma_commit();
  }
}

__device__ __forceinline__ void consume_fp8_lazy(const Args& a, uint32_t base, int c) {
  const int tid = threadIdx.x - 128 * (1 + c);
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const uint32_t q8 = base + kQTileOffset + c * kQTileBytes;
  const uint32_t ones = q8 + kOnesOffset;
  if constexpr (PW_WS_TC_SUM) fill_ones(ones, tid);
  Walker w{base, c, warp};
  for (int q_stage; w.open(1, q_stage);) {
    float rf_lo, rf_hi;
    build_q8(a, w, q_stage, q8, g, t, rf_lo, rf_hi);
    w.close_q(q_stage);

    float o[64], l4[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
    float m_lo = -INFINITY, m_hi = -INFINITY;  // reference maxima (log2 units) of rows g, g + 8

    // Page k's PV runs on the tensor cores while page k + 1's softmax runs on the CUDA cores;
    // P fragments alternate between pa and pb so a PV in flight never reads rewritten ones.
    float d[64];
    uint32_t pa[kKSteps][4], pb[kKSteps][4];
    Page cur{0}, nxt{0};
    auto finish = [&]() {  // the pending PV is done: its stage is free
      wgmma_wait<0>();
      fence_acc(o);
      fence_acc(l4);
      w.release(cur.s());
    };
    auto step = [&](uint32_t (&p_cur)[kKSteps][4], uint32_t (&p_nxt)[kKSteps][4]) {
      __syncwarp();
      issue_qk(d, q8, w.stage(nxt.s()));
      issue_pv_acc(o, l4, p_cur, w.stage(cur.s()), ones);
      wgmma_wait<1>();  // S of the next page is there; the PV still runs
      fence_acc(d);
      softmax_lazy(d, nxt, t, rf_lo, rf_hi, m_lo, m_hi, o, l4, p_nxt);
      finish();
      cur = nxt;
    };
    auto last = [&](uint32_t (&p_cur)[kKSteps][4]) {
      __syncwarp();
      issue_pv_acc(o, l4, p_cur, w.stage(cur.s()), ones);
      finish();
    };
    for (int got = w.next(cur, -1); got == Walker::kFound; got = w.next(cur, -1)) {
      __syncwarp();
      issue_qk(d, q8, w.stage(cur.s()));
      wgmma_wait<0>();
      fence_acc(d);
      softmax_lazy(d, cur, t, rf_lo, rf_hi, m_lo, m_hi, o, l4, pa);
      for (;;) {
        got = w.next(nxt, cur.s());
        if (got != Walker::kFound) {
          last(pa);
          break;
        }
        step(pa, pb);
        got = w.next(nxt, cur.s());
        if (got != Walker::kFound) {
          last(pb);
          break;
        }
        step(pb, pa);
      }
      if (got == Walker::kNone) break;
    }

    const int qid = w.my_qid(), head = w.head();
    if (qid >= 0) {  // O and l both carry the 2^6 of p; V's scale here
      store_rows<!PW_WS_TC_SUM>(
          a.o + (static_cast<size_t>(qid) * a.plan.kv_heads + head) * kHeads * kDim, o, l4[0],
          l4[2], __ldg(a.v_scale + head), g, t);
    }
    w.close_group();
  }
}

// ---- BF16: one stage = half a page (bf16_wgmma.cuh), the PV accumulates into O
// The softmax step of my warp on the stage pg (P = 0 and a = 1 when my query does not see it).
__device__ __forceinline__ void softmax_bf16(float (&d)[32], const Page& pg, int t, float c,
                                             float& m_lo, float& m_hi, float& l_lo,
                                             float& l_hi, float& al_lo, float& al_hi,
                                             uint32_t (&pa)[bf16::kPVSteps][4]) {
  al_lo = al_hi = 1.f;
  const int vis = pg.seen();
  SoftmaxSums st;
  if (vis >= bf16::kStageTokens) {
    softmax_max<false, bf16::kStageTokens, 0>(d, vis, t, c, c, m_lo, m_hi, al_lo, al_hi, st);
    bf16::softmax_exps<false>(d, vis, t, c, st, pa);
    softmax_finish(al_lo, al_hi, st, l_lo, l_hi);
  } else if (vis > 0) {  // causal / length tail inside this stage
    softmax_max<true, bf16::kStageTokens, 0>(d, vis, t, c, c, m_lo, m_hi, al_lo, al_hi, st);
    bf16::softmax_exps<true>(d, vis, t, c, st, pa);
    softmax_finish(al_lo, al_hi, st, l_lo, l_hi);
  } else {
#pragma unroll
    for (int ks = 0; ks < bf16::kPVSteps; ++ks) pa[ks][0] = pa[ks][1] = pa[ks][2] = pa[ks][3] = 0u;
  }
}

__device__ __forceinline__ void consume_bf16(const Args& a, uint32_t base, int c) {
  const int tid = threadIdx.x - 128 * (1 + c);
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const uint32_t q_tile = base + kQTileOffset + c * kQTileBytes;
  const float cs = a.plan.scale_log2;
  Walker w{base, c, warp};
  for (int q_stage; w.open(2, q_stage);) {
    uint32_t present = 0;  // bit r: slot 4c + r holds a query
#pragma unroll
    for (int r = 0; r < kConsumerSlots; ++r) {
      present |= (w.qid(kConsumerSlots * c + r) >= 0 ? 1u : 0u) << r;
    }
    bf16::copy_q_tile(w.stage(q_stage) + kConsumerSlots * c * kQRowBytes, q_tile, tid, present);
    w.close_q(q_stage);

    float o[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
    float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.f, l_hi = 0.f;

    // Stage k's PV (accumulating into O) runs while stage k + 1's softmax runs; O is rescaled
    // by stage k + 1's a once that PV is done, before stage k + 1's PV is issued.
    float d[32];
    uint32_t pa[bf16::kPVSteps][4], pb[bf16::kPVSteps][4];
    float al_lo, al_hi;
    Page cur{0}, nxt{0};
    auto step = [&](uint32_t (&p_cur)[bf16::kPVSteps][4], uint32_t (&p_nxt)[bf16::kPVSteps][4]) {
      __syncwarp();
      bf16::issue_qk(d, q_tile, w.stage(nxt.s()));
      bf16::issue_pv(o, p_cur, w.stage(cur.s()) + bf16::kTileBytes);
      wgmma_wait<1>();
      fence_acc(d);
      softmax_bf16(d, nxt, t, cs, m_lo, m_hi, l_lo, l_hi, al_lo, al_hi, p_nxt);
      wgmma_wait<0>();
      fence_acc(o);
      if (nxt.seen()) bf16::rescale(o, al_lo, al_hi);
      w.release(cur.s());
      cur = nxt;
    };
    auto last = [&](uint32_t (&p_cur)[bf16::kPVSteps][4]) {
      __syncwarp();
      bf16::issue_pv(o, p_cur, w.stage(cur.s()) + bf16::kTileBytes);
      wgmma_wait<0>();
      fence_acc(o);
      w.release(cur.s());
    };
    for (int got = w.next(cur, -1); got == Walker::kFound; got = w.next(cur, -1)) {
      __syncwarp();
      bf16::issue_qk(d, q_tile, w.stage(cur.s()));
      wgmma_wait<0>();
      fence_acc(d);
      softmax_bf16(d, cur, t, cs, m_lo, m_hi, l_lo, l_hi, al_lo, al_hi, pa);
      if (cur.seen()) bf16::rescale(o, al_lo, al_hi);
      for (;;) {
        got = w.next(nxt, cur.s());
        if (got != Walker::kFound) {
          last(pa);
          break;
        }
        step(pa, pb);
        got = w.next(nxt, cur.s());
        if (got != Walker::kFound) {
          last(pb);
          break;
        }
        step(pb, pa);
      }
      if (got == Walker::kNone) break;
    }

    const int qid = w.my_qid(), head = w.head();
    if (qid >= 0) {
      store_rows(a.o + (static_cast<size_t>(qid) * a.plan.kv_heads + head) * kHeads * kDim, o,
                 l_lo, l_hi, 1.f, g, t);
    }
    w.close_group();
  }
}

// The kernel body: barriers, then the three roles.
template <bool kBf16>
__device__ __forceinline__ void union8ws(const Args& a) {
  extern __shared__ __align__(1024) uint8_t smem[];
  const uint32_t base = (smem_addr(smem) + 1023u) & ~1023u;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(base + kFull + 8 * s, 1);
      mbar_init(base + kEmpty + 8 * s, kConsumerThreads);
    }
    for (int b = 0; b < 2; ++b) {
      mbar_init(base + kHFull + 8 * b, 32);
      mbar_init(base + kHFree + 8 * b, kConsumerThreads + 32);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (warp < 4) {  // the producer warpgroup gives registers to the consumers
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kProducerRegs));
    if (warp == 0) load_pages<kBf16 ? 2 : 1>(a, base, lane);
    if (warp == 1) schedule(a, base, lane);
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kConsumerRegs));
  if constexpr (kBf16) {
    consume_bf16(a, base, warp / 4 - 1);
  } else if constexpr (PW_WS_LAZY) {
    consume_fp8_lazy(a, base, warp / 4 - 1);
  } else {
    consume_fp8(a, base, warp / 4 - 1);
  }
}

}  // namespace union8ws
}  // namespace pageweaver

// Persistent: grid = one CTA per SM, 384 threads, union8ws::kSmemBytes of dynamic shared memory;
// the plan is built with g = 8. FP8: a.k / a.vt are the FP8 cache's tiles, one per page and
// head; BF16: the half-page BF16 tiles of the same layout (k_scale / v_scale unused).
extern "C" __global__ void __launch_bounds__(pageweaver::union8ws::kThreads, 1)
    union8ws_fp8(const pageweaver::union8ws::Args a) {
  pageweaver::union8ws::union8ws<false>(a);
}
extern "C" __global__ void __launch_bounds__(pageweaver::union8ws::kThreads, 1)
    union8ws_bf16(const pageweaver::union8ws::Args a) {
  pageweaver::union8ws::union8ws<true>(a);
}
// The dynamic shared memory the launcher must pass (read by the GPU tests).
extern "C" __device__ const int union8ws_smem_bytes = pageweaver::union8ws::kSmemBytes;
