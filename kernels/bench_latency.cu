// Dependent-chain latencies of the instructions a regroup round is made of (benchmarks
// only: benchmarks/bench_gpu_regroup.py explains the round's floor with them). One warp runs
// `iters` dependent steps of each chain and stores the SM cycles per step:
//   out[0]: redux.sync min + add      out[1]: shared load (pointer chase) + and
//   out[2]: popcount + add            out[3]: shuffle + add      out[4]: add alone
// Prepared format "Pi": out (int64 [5]), iters.
extern "C" __global__ void chain_latency(long long* out, int iters) {
  __shared__ unsigned next[32];
  const unsigned lane = threadIdx.x;
  next[lane] = (lane + 1) & 31;
  __syncwarp();
  unsigned v = lane;
  long long t[6];
  t[0] = clock64();
  for (int i = 0; i < iters; ++i) v = __reduce_min_sync(0xffffffffu, v) + lane;
  t[1] = clock64();
  for (int i = 0; i < iters; ++i) v = next[v & 31] & 31;
  t[2] = clock64();
  for (int i = 0; i < iters; ++i) v = __popc(v) + lane;
  t[3] = clock64();
  for (int i = 0; i < iters; ++i) v = __shfl_xor_sync(0xffffffffu, v, 1) + lane;
  t[4] = clock64();
  for (int i = 0; i < iters; ++i) v = v * 3u + lane;
  t[5] = clock64();
  if (lane == 0) {
    for (int c = 0; c < 5; ++c) out[c] = (t[c + 1] - t[c]) / iters;
    if (v == 0xdeadbeefu) out[0] = -1;  // keeps every chain live
  }
}
