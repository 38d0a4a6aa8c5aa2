// Puzzle 3: the warp-level arg-min of one greedy round (reference solution).
__device__ int pick_winner(int delta, bool alive) {
  // One 32-bit key orders (delta, id) lexicographically: delta above, the lane's id below.
  unsigned key = alive ? (static_cast<unsigned>(delta) << 8) | (threadIdx.x & 31u) : 0xffffffffu;
  for (int offset = 16; offset > 0; offset >>= 1)  // butterfly: every lane ends with the min
    key = min(key, __shfl_xor_sync(0xffffffffu, key, offset));
  return static_cast<int>(key & 0xffu);
}
