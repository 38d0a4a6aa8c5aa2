// Keeps the stream busy ahead of a timed launch (benchmarks only): one thread spins for
// `ns` nanoseconds of %globaltimer, so the host-side launch gaps of PyCUDA (a few µs per
// call) overlap this kernel instead of entering the CUDA-event interval that follows it.
// Prepared format "Q": ns.
extern "C" __global__ void spin_ns(unsigned long long ns) {
  if (threadIdx.x != 0) return;
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
