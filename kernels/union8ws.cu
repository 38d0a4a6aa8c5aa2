// Warp-specialized Union8 on one SM per group (sm_90a): the fast kernel of the series.
//
// The cluster kernel (union8_fp8.cu) runs Figure 3 literally: two CTAs on two SMs walk U_G in
// lockstep through two shared slots, so each CTA waits for its peer on every page, also on the
// pages only the peer needs. This kernel keeps the work split and the arithmetic and changes
// where the two halves of a group live:
//
//   one CTA per SM, persistent, 3 warpgroups (384 threads):
//     warpgroup 0, the producer (setmaxnreg kProducerRegs):
//       warp 0, the loader (union8ws_ring.cuh): streams each group through the ring, its Q
//         stage then the pages of U_G, with bulk copies and each stage's metadata;
//       warp 1, the scheduler (union8ws_scheduler.cuh): claims groups from the group counter,
//         the groups with the most pages first, and writes their headers, one group ahead;
//     warpgroups 1 and 2, the consumers (setmaxnreg kConsumerRegs): consumer c owns slots
//       4c .. 4c+3, i.e. the paper's CTA c: 4 queries x 16 local heads = one M64 tile (the
//       fast and accurate FP8 mainloops pair the rows: a warp holds 8 heads of two queries).
//       Both read the same stage, so each union page is copied into the SM once; each walks the
//       ring with the page walk below and does its arithmetic in a mainloop
//       (union8ws_mainloop_*.cuh) on the running state O, m, l (union8ws_softmax_state.cuh),
//       then its epilogue (union8ws_epilogue.cuh).
//
// One page step of a consumer (Mainloop::step, fast FP8 with PW_WS_OVERLAP; page k is cur,
// page k + 1 is nxt; both started wgmma groups run in order on the tensor cores):
//
//   walk    next(): wait ① of k + 1, read its metadata (a stage none of my warps sees: ② at once)
//   tensor  [ S = Q8 K8^T (k+1) ][ O_p dims 0..63 (k) ]        [ O_p dims 64..127 (k) ]
//   CUDA    start both | softmax A (k+1): m', a, p cols 0..63 | fold 0 | start | softmax B
//                      ^ wait S                      wait O_p ^              (k+1): p cols
//                                                                            64..127, l
//           | fold 1: O = fma(O, a, O_p) | ② of k
//
// A row whose query does not see page k + 1 (seen = 0) skips the softmax and the folds and
// leaves its P as it was (its rows of O_p are its own and unused); the group's first working
// page runs its S and softmax alone (first), its last one its PV alone (last). Every
// mbarrier wait is bounded (PW_WAIT_TIMEOUT_NS): a protocol bug faults the launch instead of
// hanging the device.
#include "union8ws_mainloop_bf16.cuh"
#include "union8ws_mainloop_fp8.cuh"
#include "union8ws_mainloop_fp8_lazy.cuh"
#include "union8ws_mainloop_fp8acc.cuh"
#include "union8ws_ring.cuh"
#include "union8ws_scheduler.cuh"

#include <type_traits>

// The mainloop of the union8ws_fp8 entry: PW_WS_ACCURATE = 1 the accurate mode (two-level
// E4M3 Q and P, union8ws_mainloop_fp8acc.cuh); else PW_WS_LAZY = 1 O accumulated in the
// tensor core across pages (union8ws_mainloop_fp8_lazy.cuh); else the fast mode, the cluster
// kernel's arithmetic (union8ws_mainloop_fp8.cuh).
#ifndef PW_WS_ACCURATE
#define PW_WS_ACCURATE 0
#endif
#ifndef PW_WS_LAZY
#define PW_WS_LAZY 0
#endif

namespace pageweaver {
namespace union8ws {

// Shared memory, from a 1 KiB aligned base.
struct SharedStorage {
  uint8_t stages[kStages][kStageBytes];     // the ring: K tile + V^T tile (or a group's Q)
  uint8_t q_tile[kConsumers][kQTileBytes];  // a Q tile per consumer (BF16, or Q8 + ones)
  StageMeta meta[kStages];                  // per stage: the tokens each slot sees
  GroupHeader headers[2];
  uint64_t full[kStages], empty[kStages];   // ring events ① and ②
  uint64_t hfull[2], hfree[2];              // header written / read
};
static_assert(PW_AT(SharedStorage, stages) == 0 && kStageBytes % 1024 == 0 &&
              PW_AT(SharedStorage, q_tile) % 1024 == 0, "swizzled tiles are 1 KiB aligned");
static_assert(PW_AT(SharedStorage, full) % 8 == 0, "mbarriers are 8-byte aligned");
constexpr int kSmemBytes = 1024 + sizeof(SharedStorage);  // 1 KiB of alignment slack
static_assert(kSmemBytes <= 232448, "227 KiB of dynamic shared memory per block");

// Registers: the producer warpgroup gives its registers to the consumers (setmaxnreg).
constexpr int kProducerRegs = 24;
constexpr int kConsumerRegs = 240;
static_assert(kProducerRegs % 8 == 0 && kConsumerRegs % 8 == 0, "setmaxnreg takes multiples of 8");
static_assert(kProducerRegs >= 24 && kConsumerRegs <= 256, "setmaxnreg's range");
// The launch gives every thread kEntryRegs (__launch_bounds__(kThreads, 1): 65536 / 384, in
// multiples of 8), and setmaxnreg.inc takes only what setmaxnreg.dec gave back of that: a
// budget over it leaves the consumers waiting for registers that never come.
constexpr int kEntryRegs = 65536 / kThreads / 8 * 8;
static_assert(128 * kProducerRegs + kConsumerThreads * kConsumerRegs <= kThreads * kEntryRegs,
              "the consumers' registers come from the producer warpgroup's");

// The page walk of consumer c, the same for every mainloop: open each group, build its Q tile,
// then over the group's working stages run first / step ... step / last, keeping one stage
// pending (its PV in flight) while the next is found; Frag a and b alternate so a PV in flight
// never reads fragments that are being rewritten.
template <class Mainloop>
__device__ __forceinline__ void consume(const Args& a, uint32_t base, int c) {
  using Ring = ConsumerRing<SharedStorage, Mainloop::kPairedRows>;
  const int tid = threadIdx.x - 128 * (1 + c);  // thread in my warpgroup
  __builtin_assume(tid >= 0 && tid < 128);
  Mainloop ml(a, base + PW_AT(SharedStorage, q_tile) + c * kQTileBytes, tid);
  Ring w{base, c, tid >> 5};
  for (int q_stage; w.open(Mainloop::kStagesPerPage, q_stage);) {
    ml.load_q(a, w, q_stage);
    w.close_q(q_stage);
    ml.begin_group();
    typename Mainloop::Frag fa, fb;
    Page cur{0}, nxt{0};
    // stage of cur is done: release it (event ②) and go on with nxt
    auto step = [&](typename Mainloop::Frag& f, typename Mainloop::Frag& f_nxt) {
      __syncwarp();  // wgmma is .aligned: the warp converges after the per-thread waits
      ml.step(w, cur, f, nxt, f_nxt);
      w.release(cur.s());
      cur = nxt;
    };
    auto last = [&](typename Mainloop::Frag& f) {
      __syncwarp();
      ml.last(w, cur, f);
      w.release(cur.s());
    };
    for (int got = w.next(cur, -1); got == Ring::kFound; got = w.next(cur, -1)) {
      __syncwarp();
      ml.first(w, cur, fa);
      for (;;) {
        got = w.next(nxt, cur.s());
        if (got != Ring::kFound) {
          last(fa);
          break;
        }
        step(fa, fb);
        got = w.next(nxt, cur.s());
        if (got != Ring::kFound) {
          last(fb);
          break;
        }
        step(fb, fa);
      }
      if (got == Ring::kNone) break;
    }
    ml.store(a, w);
    w.close_group();
  }
}

// The kernel body: barriers, then the three roles.
template <class Mainloop>
__device__ __forceinline__ void union8ws(const Args& a) {
  extern __shared__ __align__(1024) uint8_t smem[];
  const uint32_t base = (smem_addr(smem) + 1023u) & ~1023u;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

  if (threadIdx.x == 0) {
    init_ring_barriers<SharedStorage>(base);
    init_header_barriers<SharedStorage>(base);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (warp < 4) {  // the producer warpgroup gives registers to the consumers
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kProducerRegs));
    if (warp == 0) load_pages<SharedStorage, Mainloop::kStagesPerPage>(a, base, lane);
    if (warp == 1) schedule<SharedStorage>(a, base, lane);
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kConsumerRegs));
  consume<Mainloop>(a, base, warp / 4 - 1);
}

using Fp8Build = std::conditional_t<
    PW_WS_ACCURATE, Fp8AccMainloop,
    std::conditional_t<PW_WS_LAZY, Fp8LazyMainloop, Fp8Mainloop>>;

}  // namespace union8ws
}  // namespace pageweaver

// Persistent: grid = one CTA per SM, 384 threads, union8ws::kSmemBytes of dynamic shared memory;
// the plan is built with g = 8. FP8: a.k / a.vt are the FP8 cache's tiles, one per page and
// head; BF16: the half-page BF16 tiles of the same layout (k_scale / v_scale unused).
extern "C" __global__ void __launch_bounds__(pageweaver::union8ws::kThreads, 1)
    union8ws_fp8(const pageweaver::union8ws::Args a) {
  pageweaver::union8ws::union8ws<pageweaver::union8ws::Fp8Build>(a);
}
extern "C" __global__ void __launch_bounds__(pageweaver::union8ws::kThreads, 1)
    union8ws_bf16(const pageweaver::union8ws::Args a) {
  pageweaver::union8ws::union8ws<pageweaver::union8ws::Bf16Mainloop>(a);
}
// The claim order of a launch (union8ws_scheduler.cuh): one CTA of kOrderThreads threads,
// counts = the plan's page_counts, total = H*G; launched before either entry on its stream.
extern "C" __global__ void __launch_bounds__(pageweaver::union8ws::kOrderThreads, 1)
    union8ws_claim_order(const int* __restrict__ counts, int total, int* __restrict__ order) {
  pageweaver::union8ws::claim_order(counts, total, order);
}
// The dynamic shared memory the launcher must pass (read by the GPU tests).
extern "C" __device__ const int union8ws_smem_bytes = pageweaver::union8ws::kSmemBytes;
