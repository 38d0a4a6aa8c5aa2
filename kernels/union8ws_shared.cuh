// What every part of the warp-specialized Union8 (kernels/union8ws.cu) shares: the shape of
// the CTA, the launch arguments, the group header the scheduler writes, and the few
// shared-memory and barrier primitives the roles use.
//
// The parts address shared memory through the kernel's SharedStorage (a template parameter
// `Smem` of each part): a member's shared address is the 1 KiB aligned base plus its offset
// (PW_AT), a constant, so every address is one register and an immediate.
#pragma once

#include "cluster_pipeline.cuh"
#include "fp8_wgmma.cuh"
#include "union_plan_args.cuh"

#include <cuda_bf16.h>
#include <stddef.h>
#include <stdint.h>

#ifndef PW_UNION_SLOTS
#define PW_UNION_SLOTS 6
#endif
#ifndef PW_WAIT_TIMEOUT_NS
#define PW_WAIT_TIMEOUT_NS 10000000000ull
#endif

namespace pageweaver {
namespace union8ws {

using namespace pipeline;
using namespace fp8;

constexpr int kStages = PW_UNION_SLOTS;        // ring depth
constexpr int kGroupSlots = 8;                 // g: two consumers of four slots
constexpr int kConsumerSlots = 4;
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kConsumerThreads = 128 * kConsumers;
constexpr int kStageBytes = 2 * kTileBytes;    // K tile, then V^T tile
constexpr int kQRowBytes = kHeads * kDim * 2;  // one query's 16 local heads in BF16: 4 KiB
static_assert(kGroupSlots * kQRowBytes == kStageBytes, "a group's BF16 Q fills one stage");
constexpr int kQTileBytes = 64 * kDim * 2;     // a consumer's 4 queries: BF16 16 KiB, E4M3 8 KiB

struct Args {
  const __nv_bfloat16* __restrict__ q;  // [N, H*16, 128] bf16
  const uint8_t* __restrict__ k;        // [pages, H, 16384] swizzled K tiles (E4M3)
  const uint8_t* __restrict__ vt;       // [pages, H, 16384] swizzled V^T tiles (E4M3)
  __nv_bfloat16* __restrict__ o;        // [N, H*16, 128] bf16
  const float* __restrict__ k_scale;    // [H]
  const float* __restrict__ v_scale;    // [H]
  unsigned long long* counter;          // the group counter, 0 between launches (union8ws_scheduler.cuh)
  const int* __restrict__ order;        // [H*G] claim i runs group order[i] (union8ws_claim_order)
  UnionPlanArgs plan;
};
static_assert(sizeof(Args) == 152 && offsetof(Args, plan) == 64,
              "the packed host buffer (ARG_FORMAT of the union8ws front end)");

// A group's header, written by the scheduler, read by the loader and both consumers.
struct GroupHeader {
  int work;               // head * G + group, or -1: no more groups
  int begin;              // first entry of U_G in plan.pages / plan.masks
  int count;              // |U_G|
  int head;               // the KV head
  int qid[kGroupSlots];   // π[base + r], or -1 (no query in slot r)
  int lim[kGroupSlots];   // visible tokens of slot r: min(c_i + 1, L_i), 0 for no query
};
constexpr int kHeaderBytes = sizeof(GroupHeader);
static_assert(kHeaderBytes == 80, "two headers of 80 bytes (the front end's smem size)");
constexpr int kHWork = offsetof(GroupHeader, work), kHBegin = offsetof(GroupHeader, begin),
              kHCount = offsetof(GroupHeader, count), kHHead = offsetof(GroupHeader, head),
              kHQid = offsetof(GroupHeader, qid), kHLim = offsetof(GroupHeader, lim);

// A stage's metadata, written by the loader: byte r = the tokens of the stage that slot r
// sees, 0 .. 128 (0: slot r does not select the page, or sees none of it; 128: all of it).
// Word c holds consumer c's four slots, so "consumer c works on this stage" is one compare.
using StageMeta = uint8_t[kGroupSlots];
constexpr int kMetaBytes = sizeof(StageMeta);

// The offset of `member` in the shared-memory layout S, as the int the address arithmetic uses.
#define PW_AT(S, member) static_cast<int>(offsetof(S, member))

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  mbar_wait_bounded<PW_WAIT_TIMEOUT_NS>(bar, parity);  // a protocol bug faults, never hangs
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
// A value every lane of the warp holds, read back through redux.sync (every lane must call):
// the compiler then keeps it, and what is computed from it, in uniform registers, and treats
// branches on it as taken by the whole warp.
__device__ __forceinline__ uint32_t warp_uniform(uint32_t v) {
  return __reduce_min_sync(0xffffffffu, v);
}

}  // namespace union8ws
}  // namespace pageweaver
