// A compressor's moves after a run of rows at positions [pos0, pos1) (docs/architecture.md §3.5),
// shared by compressor_update (compressor.cu: the rows are a round's projections) and keep_rows
// (keep_rows.cu: the rows are a forward journal's): PREV ← the Ca half of the last window the rows
// close (CSA); barrier; PEND ← the rows of the window still open at pos1. The barrier orders PREV's
// reads of old PEND rows before PEND is overwritten. row(p, col, kv, sc) gives position p's kv and
// score, ape included, for p ≥ pos0; positions before pos0 lie in the window open at pos0: PEND's.
#pragma once
#include "ops.h"

namespace memra::cuda {

template <int kThreads, typename Row>
__device__ __forceinline__ void compressor_moves(const CompressorDev& st, int m, int c, int w, int64_t pos0, int64_t pos1,
                                                 Row row) {
  const int cw = c * w;
  // 32-bit indices (m·w and the open rows · c·w are far below 2^31): the 64-bit division per element
  // cost more than its loads.
  if (c == 2 && pos1 / m > pos0 / m) {
    const int64_t base = (pos1 / m - 1) * m;  // first position of the last window closed
    for (int id = threadIdx.x; id < m * w; id += kThreads) {
      const int j = id / w, ch = id - j * w;
      const int64_t p = base + j;
      float kv, sc;
      if (p >= pos0) {
        row(p, ch, kv, sc);
      } else {
        kv = st.pend_kv[(p % m) * cw + ch];
        sc = st.pend_score[(p % m) * cw + ch];
      }
      st.prev_kv[static_cast<int64_t>(j) * w + ch] = kv;
      st.prev_score[static_cast<int64_t>(j) * w + ch] = sc;
    }
  }
  __syncthreads();
  const int64_t open = pos1 - pos1 % m;
  const int64_t first = open > pos0 ? open : pos0;
  const int n = static_cast<int>(pos1 - first) * cw;
  for (int id = threadIdx.x; id < n; id += kThreads) {
    const int r = id / cw, col = id - r * cw;
    const int64_t p = first + r, slot = p % m;
    row(p, col, st.pend_kv[slot * cw + col], st.pend_score[slot * cw + col]);
  }
}

}  // namespace memra::cuda
