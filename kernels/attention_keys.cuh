// The key table of one attention row (docs/architecture.md §3.7), shared by the exact kernels
// (attention.cu) and the tensor-core kernel of cuda-fast (attention_fast.cu): the row's window
// (positions max(0, pos−W+1) … pos, oldest first: this round's kv rows for positions ≥ the
// sequence's pos0, the state's ring for older ones) followed by its compressed entries (HCA: every
// visible entry, ascending; CSA: the indexer's selection, ascending, up to its first −1).
#pragma once
#include "common.cuh"
#include "ops.h"

namespace memra::cuda {

// The row's keys in attention order (window oldest first, then the compressed entries) into
// keys[]; returns their count. Every thread of the block calls it (barriers inside).
__device__ inline int key_table(const AttentionArgs& a, int row, const float** keys, int* s_ncmp) {
  const int d = a.d;
  const SeqDesc& s = a.seqs[a.row_seq[row]];
  const LayerDev& st = s.layers[a.layer];
  const int64_t pos = a.row_pos[row];
  const int n_win = static_cast<int>(pos + 1 < a.W ? pos + 1 : a.W);
  const int64_t first = pos - n_win + 1;

  // Compressed keys: HCA every visible entry; CSA the selection up to its first −1 (the position
  // of the first padding entry, found by every thread over its stride and an integer atomicMin:
  // one thread walking the K = 512 entries was a chain of 512 dependent loads, ~90 µs per decode
  // step on an H200, bench/results/h200-20261201-13).
  if (threadIdx.x == 0)
    (*s_ncmp) = a.kind == AttnKind::kHCA ? static_cast<int>((pos + 1) / a.m) : a.kind == AttnKind::kCSA ? a.K : 0;
  __syncthreads();
  if (a.kind == AttnKind::kCSA) {
    const int32_t* sel = a.selected + static_cast<int64_t>(row) * a.K;
    for (int i = threadIdx.x; i < a.K; i += blockDim.x)
      if (sel[i] < 0) {
        atomicMin(s_ncmp, i);
        break;  // later entries of this thread's stride have larger indices
      }
  }
  __syncthreads();
  const int n_keys = n_win + (*s_ncmp);
  if (n_keys > a.max_keys) __trap();  // the host sized max_keys from the same rule

  for (int j = threadIdx.x; j < n_keys; j += blockDim.x) {
    const float* k;
    if (j < n_win) {
      const int64_t p = first + j;
      k = p >= s.pos0 ? a.kv + (s.row0 + (p - s.pos0)) * d : st.window + (p % a.W) * d;
    } else {
      const int64_t e = a.kind == AttnKind::kHCA ? (j - n_win) : a.selected[static_cast<int64_t>(row) * a.K + (j - n_win)];
      k = st.cmp.entries + e * d;
    }
    keys[j] = k;
  }
  __syncthreads();
  return n_keys;
}

}  // namespace memra::cuda
