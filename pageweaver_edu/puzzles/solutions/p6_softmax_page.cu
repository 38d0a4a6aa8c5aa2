// Puzzle 6: the online-softmax step of one page (reference solution).
__device__ void softmax_page(float x, const float* v, float& m, float& l, float& o) {
  const int lane = threadIdx.x & 31;
  float page_max = x;
  for (int d = 16; d > 0; d >>= 1)
    page_max = fmaxf(page_max, __shfl_xor_sync(0xffffffffu, page_max, d));
  const float m_new = fmaxf(m, page_max);
  if (m_new == -INFINITY) return;  // nothing visible yet: 2^(-inf - -inf) would be NaN
  const float alpha = exp2f(m - m_new);  // rescale of what came before (0 on the first page)
  const float p = exp2f(x - m_new);      // 0 for a masked token
  float sum = p;
  for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
  float pv = 0.f;
  for (int e = 0; e < 32; ++e) pv += __shfl_sync(0xffffffffu, p, e) * v[e * 32 + lane];
  l = l * alpha + sum;
  o = o * alpha + pv;
  m = m_new;
}
