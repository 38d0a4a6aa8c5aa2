// The launch arguments both Union8 / Union4 kernels share (kernels/union8.cu BF16,
// kernels/union8_fp8.cu FP8): the union plan of every KV head in the layout of
// kernels/union_prepare.cu (CSR: group G's pages at page_offsets[G] .. + page_counts[G]) or of
// the fused online regroup kernels/regroup.cu (one row of a fixed capacity per group: the same
// two arrays with page_offsets[G] = G * capacity), the query positions and the launch
// geometry. Each kernel's Args holds its own tensors first, then this struct as its member
// `plan`; the Python front ends (pageweaver_edu/gpu/union_attention.py and its subclasses)
// pack Args by value, so the fields, their order and sizeof(UnionPlanArgs) (8 pointers, 5
// ints and a float: 88 B) are part of that format.
#pragma once

#include <stdint.h>

namespace pageweaver {

struct UnionPlanArgs {
  const int* __restrict__ perm;         // [H*N] π, head-local original ids
  const int4* __restrict__ groups;      // [H*G] (first slot in perm, slots, h*N, 0)
  const int* __restrict__ page_offsets; // [H*G (+ 1)] first entry of U_G in pages / masks
  const int* __restrict__ page_counts;  // [H*G] |U_G|
  const int* __restrict__ pages;        // [T] U_G per group, ascending
  const uint8_t* __restrict__ masks;    // [T] bit r: slot r selects the page
  const int* __restrict__ causal_pos;   // [N] c_i or nullptr
  const int* __restrict__ lengths;      // [N] L_i or nullptr
  int n;                                // N
  int num_groups;                       // G per KV head
  int kv_heads;                         // H
  int num_pages;                        // pages in the K/V pool (bounds check)
  float scale_log2;                     // softmax scale * log2(e)
  int pad_;                             // keeps the size a multiple of 8 (the packed host buffer)
};
static_assert(sizeof(UnionPlanArgs) == 88, "the launchers pack 8 pointers + 5 ints + 1 float");

}  // namespace pageweaver
