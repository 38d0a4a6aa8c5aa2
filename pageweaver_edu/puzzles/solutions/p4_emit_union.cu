// Puzzle 4: U_G in ascending order with membership bytes (reference solution).
__global__ void emit_union(const unsigned* bits, int size, int* pages, unsigned char* masks,
                           int* count) {
  const int w = threadIdx.x;  // lane w owns pages 32 w .. 32 w + 31
  unsigned m[8], u = 0u;  // m[r]: word w of member position r's bitmap
  for (int r = 0; r < 8; ++r) {
    m[r] = r < size ? bits[r * 32 + w] : 0u;
    u |= m[r];
  }
  const int c = __popc(u);
  int incl = c;  // inclusive prefix sum of the lanes' popcounts (Hillis-Steele)
  for (int d = 1; d < 32; d <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, incl, d);
    if (w >= d) incl += v;
  }
  int pos = incl - c;
  for (unsigned todo = u; todo != 0u; todo &= todo - 1u) {
    const int bit = __ffs(todo) - 1;
    unsigned mask = 0u;
    for (int r = 0; r < 8; ++r) mask |= ((m[r] >> bit) & 1u) << r;
    pages[pos] = 32 * w + bit;
    masks[pos] = static_cast<unsigned char>(mask);
    ++pos;
  }
  if (w == 31) *count = incl;
}
