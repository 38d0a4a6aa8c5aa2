// Puzzle 1: a query's visible tokens A_i (reference solution).
__global__ void visible_tokens(const int* topk, int k, int page_size, const int* lengths,
                               const int* causal_pos, int* tokens) {
  const int i = blockIdx.x, t = threadIdx.x;
  const int c = t / page_size, o = t % page_size;
  const int* row = topk + i * k;
  const int page = row[c];
  bool first = page >= 0;
  for (int e = 0; e < c; ++e) first = first && row[e] != page;  // duplicates count once
  const int token = page * page_size + o;
  const int limit = min(lengths[i], causal_pos[i] + 1);  // token < L_i and token <= c_i
  tokens[i * k * page_size + t] = first && token < limit ? token : -1;
}
