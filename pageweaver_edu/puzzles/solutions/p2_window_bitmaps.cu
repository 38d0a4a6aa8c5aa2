// Puzzle 2: a window's bitmaps and popcount(b & ~u) (reference solution).
__global__ void window_bitmaps(const int* topk, int n, int k, const unsigned* u,
                               unsigned* bits, int* delta) {
  const int j = threadIdx.x;
  if (j >= n) return;
  int d = 0;
  for (int w = 0; w < PW_WORDS; ++w) {
    unsigned word = 0u;
    for (int c = 0; c < k; ++c) {
      const int p = topk[j * k + c];
      if (p >= 0 && (p >> 5) == w) word |= 1u << (p & 31);
    }
    bits[j * PW_WORDS + w] = word;
    d += __popc(word & ~u[w]);
  }
  delta[j] = d;
}
