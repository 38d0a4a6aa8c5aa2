// Puzzle 1: a query's visible tokens A_i (reference solution).
__global__ void visible_tokens(const int* topk, int k, int page_size, const int* lengths,
                               const int* causal_pos, int* tokens) {
  const int i = blockIdx.x, tid = threadIdx.x;
  const int e = tid / page_size, o = tid % page_size;  // Top-K entry e, offset o in its page
  const int* row = topk + i * k;
  const int page = row[e];
  bool first = page >= 0;
  for (int f = 0; f < e; ++f) first = first && row[f] != page;  // duplicates count once
  const int t = page * page_size + o;
  const int limit = min(lengths[i], causal_pos[i] + 1);  // t < L_i and t <= c_i
  tokens[i * k * page_size + tid] = first && t < limit ? t : -1;
}
