// The slot protocol of the Union8 / Union4 kernels (kernels/union8.cu BF16, kernels/union8_fp8.cu
// FP8), Figure 3 of arXiv:2610.11201: the PTX primitives both kernels stage U_G with.
// Symbols as in docs/definitions.md#slot-protocol and the notebooks:
//   slot s     one stage of K and V in every CTA's shared memory (BF16: half a page, FP8: a
//              page); stage n of the walk goes to slot n % kNumSlots, so each slot's barriers
//              complete one phase per kNumSlots stages;
//   event ①    "stage ready", full[s], one per CTA (local): the CTA's thread 0 arms it with
//              arrive.expect_tx(bytes) and the (multicast) bulk copies complete the bytes;
//   event ②    "slot free after BOTH CTAs released", empty[s], lives in CTA0: every thread
//              of every CTA arrives once it has finished reading slot s; only then may the
//              producer overwrite that slot in every CTA.
// Memory scopes: waits are acquire.cta and the peer's arrive on ② is release.cta (the CUTLASS
// pipelines' choice). Event ① orders async-proxy bytes that complete_tx makes visible with the
// phase itself; event ② only has to order the peer's completed ldmatrix/wgmma reads of its own
// slot before the producer starts the next copy into it (write-after-read), and no thread
// reads data the other CTA wrote. Cluster scope is not needed and costs on every stage: sm_90a
// compiles acquire.cluster to an L1 invalidation (CCTL.IVALL, so the next page-id / mask loads
// miss L1) and release.cluster to MEMBAR.ALL.GPU, once per stage (what dropping both saved:
// benchmarks/union8_notes.md).
// Two ways to wait: mbar_wait_spin (unbounded, the BF16 kernel) and mbar_wait_bounded
// (faults after a timeout instead of hanging the device, the FP8 kernels).
#pragma once

#include <stdint.h>

namespace pageweaver {
namespace pipeline {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
               ::: "memory");
}
__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// region: arm-expect-tx
__device__ __forceinline__ void mbar_arm(uint32_t bar, uint32_t bytes) {  // arrive + expect_tx
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
// endregion: arm-expect-tx

// region: wait-parity
// Unbounded wait for the phase of parity `parity` to complete (a spin loop inside the PTX).
__device__ __forceinline__ void mbar_wait_spin(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "PW_WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra PW_WAIT_%=;\n}" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// endregion: wait-parity

// One probe of phase `parity`: OP is try_wait (potentially suspending) or test_wait
// (non-blocking); true when the phase has completed.
#define PW_MBAR_PROBE(OP, bar, parity, ok)                                          \
  asm volatile(                                                                     \
      "{\n\t.reg .pred done;\n\t"                                                   \
      "mbarrier." OP ".parity.acquire.cta.shared::cta.b64 done, [%1], %2;\n\t"  \
      "selp.u32 %0, 1, 0, done;\n}"                                                 \
      : "=r"(ok) : "r"(bar), "r"(parity) : "memory")
__device__ __forceinline__ bool mbar_try(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  PW_MBAR_PROBE("try_wait", bar, parity, ok);
  return ok != 0;
}
__device__ __forceinline__ bool mbar_test(uint32_t bar, uint32_t parity) {  // the producer's poll
  uint32_t ok;
  PW_MBAR_PROBE("test_wait", bar, parity, ok);
  return ok != 0;
}
#undef PW_MBAR_PROBE

// Bounded wait: after kTimeoutNs a protocol error faults the launch (a store to address 0:
// "an illegal memory access was encountered") instead of hanging the device; the clock is read
// once per 256 probes. A fault rather than `trap`: ptxas treats a trap as an exit whose register
// state it cannot know and then ignores the setmaxnreg register budgets of the warp-specialized
// kernel (its consumers spill at the entry cap of 168 registers).
template <uint64_t kTimeoutNs>
__device__ __forceinline__ void mbar_wait_bounded(uint32_t bar, uint32_t parity) {
  if (mbar_try(bar, parity)) return;
  const uint64_t t0 = global_ns();
  for (uint32_t i = 1;; ++i) {
    if (mbar_try(bar, parity)) return;
    if ((i & 255u) == 0 && global_ns() - t0 > kTimeoutNs) {
      asm volatile("st.global.u32 [%0], 0;" ::"l"(0ull) : "memory");
    }
  }
}

// region: release
// Event ②: release my reading of a slot to the barrier in CTA 0 (the producer's CTA). Every
// thread calls it (init_barriers counts one arrival per thread).
template <int kCtas>
__device__ __forceinline__ void mbar_release(uint32_t bar_local) {
  if constexpr (kCtas == 1) {
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(bar_local)
                 : "memory");
  } else {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote) : "r"(bar_local));
    asm volatile("mbarrier.arrive.release.cta.shared::cluster.b64 _, [%0];" ::"r"(remote)
                 : "memory");
  }
}
// endregion: release

// One bulk copy global -> the same slot offset of every CTA of the cluster (multicast when
// kCtas > 1); the bytes complete event ① `bar` of every destination CTA.
template <int kCtas>
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes,
                                         uint32_t bar) {
  if constexpr (kCtas == 1) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
        ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
  } else {
    const uint16_t all = (1u << kCtas) - 1;
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1], %2, [%3], %4;" ::"r"(dst), "l"(src), "r"(bytes), "r"(bar), "h"(all)
        : "memory");
  }
}

// region: init-barriers
// Protocol start (thread 0 only): full[s] (event ①: thread 0's arm + the tx bytes) and
// empty[s] (event ②: one arrival per thread of each of the kCtas CTAs, see mbar_release) at
// full0 + 8s / empty0 + 8s, made visible to the cluster. The kernel then arms event ① for its
// prologue and calls cta_sync, so the expect_tx always precedes the bytes the peer's multicast
// delivers.
template <int kCtas, int kNumSlots, int kThreads>
__device__ __forceinline__ void init_barriers(uint32_t full0, uint32_t empty0) {
#pragma unroll
  for (int s = 0; s < kNumSlots; ++s) {
    mbar_init(full0 + 8 * s, 1);
    mbar_init(empty0 + 8 * s, kCtas * kThreads);
  }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// endregion: init-barriers

// Barrier of the CTA (Union4) or of the whole cluster (Union8).
template <int kCtas>
__device__ __forceinline__ void cta_sync() {
  if constexpr (kCtas == 1) {
    __syncthreads();
  } else {
    cluster_sync();
  }
}

}  // namespace pipeline
}  // namespace pageweaver
