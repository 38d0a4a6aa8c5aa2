// The puzzles' helpers on a real GPU: the same names as simt_cpu.h gives them on a CPU.
// Events are Hopper mbarriers in shared memory; a wait gives up after kPwWaitNs and returns
// false (the harness then reports the wait that never completed instead of hanging the device).
#pragma once
#include <cuda_fp8.h>
#include <stdint.h>

constexpr unsigned long long kPwWaitNs = 1000000000ull;  // 1 s: far above any puzzle's wait

__device__ __forceinline__ uint32_t pw_smem(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void pw_event_init(uint64_t* ev, unsigned count, const char*) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(pw_smem(ev)), "r"(count)
               : "memory");
}
__device__ __forceinline__ void pw_event_arrive(uint64_t* ev) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(pw_smem(ev))
               : "memory");
}
__device__ __forceinline__ bool pw_event_try(uint64_t* ev, unsigned parity) {
  uint32_t ok;
  asm volatile(
      "{\n\t.reg .pred done;\n\t"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, done;\n}"
      : "=r"(ok)
      : "r"(pw_smem(ev)), "r"(parity & 1u)
      : "memory");
  return ok != 0;
}
__device__ __forceinline__ unsigned long long pw_clock_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ bool pw_event_wait(uint64_t* ev, unsigned parity) {
  const unsigned long long t0 = pw_clock_ns();
  while (!pw_event_try(ev, parity)) {
    if (pw_clock_ns() - t0 > kPwWaitNs) return false;
  }
  return true;
}
__device__ __forceinline__ unsigned char pw_to_e4m3(float x) {
  return static_cast<unsigned char>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}
