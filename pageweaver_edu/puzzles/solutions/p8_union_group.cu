// Puzzle 8: a mini Union kernel, 8 queries over their union (reference solution).
__global__ void union_group(const float* q, const float* k, const float* v, const int* pages,
                            const unsigned char* masks, int n_pages, const int* perm, int size,
                            const int* limits, float scale_log2, float* out) {
  const int r = threadIdx.x / 32, lane = threadIdx.x & 31;
  if (r >= size) return;  // a whole warp leaves: no collective of another warp waits for it
  const int i = perm[r];  // position r runs original query i: Q row, mask and output row are i's
  float m = -INFINITY, l = 0.f, o = 0.f;
  for (int x = 0; x < n_pages; ++x) {  // one walk of U_G; every warp sees every page
    if (!((masks[x] >> r) & 1u)) continue;  // warp-uniform: position r did not select the page
    const int page = pages[x], token = page * 32 + lane;
    float s = 0.f;
    for (int d = 0; d < 32; ++d) s += q[i * 32 + d] * k[(page * 32 + lane) * 32 + d];
    const float xs = token < limits[i] ? s * scale_log2 : -INFINITY;
    float page_max = xs;
    for (int d = 16; d > 0; d >>= 1)
      page_max = fmaxf(page_max, __shfl_xor_sync(0xffffffffu, page_max, d));
    const float m_new = fmaxf(m, page_max);
    if (m_new == -INFINITY) continue;  // no visible token yet
    const float alpha = exp2f(m - m_new), p = exp2f(xs - m_new);
    float sum = p;
    for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
    float pv = 0.f;
    for (int e = 0; e < 32; ++e)
      pv += __shfl_sync(0xffffffffu, p, e) * v[(page * 32 + e) * 32 + lane];
    l = l * alpha + sum;
    o = o * alpha + pv;
    m = m_new;
  }
  out[i * 32 + lane] = l > 0.f ? o / l : 0.f;
}
