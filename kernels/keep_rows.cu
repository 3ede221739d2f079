// Keeping a journaled forward's first rows (ops.h keep_rows; State::rewind(mark, rows)): after a
// speculative verify of v rows from pos0 and the rewind to its mark, the state takes the first k
// accepted rows by position instead of by a second forward. Its CPU twin is keep_journal_rows
// (lib/engine/decode_state.cpp); the backend test compares both against re-running the rows.
//
// keep_rows_kernel   grid (layers, 3)   block 256
//   y = 0: the window ring's slots (pos0 + t) % W ← journal_window[t], the last min(rows, W) rows;
//   y = 1, 2: the main / indexer compressor, compressor_update's moves (compressor_moves.cuh) with
//   the journal as the rows (their scores already carry ape): PREV ← the Ca half of the last window
//   the rows close (CSA; rows before pos0 from PEND, which the mark put back); barrier; PEND ← the
//   rows of the window still open at pos0 + rows. The entries those windows closed are the
//   forward's own: the rewind leaves entries alone, and an entry depends only on its rows.
#include "common.cuh"
#include "compressor_moves.cuh"
#include "launch.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;

__global__ void __launch_bounds__(kBlock) keep_rows_kernel(KeepArgs a) {
  pdl_begin();
  const LayerDev& layer = a.layers[a.first + blockIdx.x];
  const int64_t pos0 = a.pos0, pos1 = pos0 + a.rows;
  if (blockIdx.y == 0) {
    const int first = a.rows > a.W ? a.rows - a.W : 0;
    const int n = (a.rows - first) * a.d;
    for (int id = threadIdx.x; id < n; id += kBlock) {
      const int t = first + id / a.d, i = id % a.d;
      layer.window[((pos0 + t) % a.W) * a.d + i] = layer.journal_window[static_cast<int64_t>(t) * a.d + i];
    }
    return;
  }
  const CompressorDev& st = blockIdx.y == 1 ? layer.cmp : layer.idx;
  if (st.m == 0) return;  // no such compressor in this layer (the whole block leaves together)
  const int cw = st.c * st.w;
  compressor_moves<kBlock>(st, st.m, st.c, st.w, pos0, pos1, [&](int64_t p, int col, float& kv, float& sc) {
    const int64_t at = (p - pos0) * cw + col;
    kv = st.journal_kv[at];
    sc = st.journal_score[at];
  });
}

}  // namespace

cudaError_t keep_rows(const KeepArgs& a, cudaStream_t stream) {
  if (a.count == 0 || a.rows == 0) return cudaSuccess;
  if (!a.layers || a.first < 0 || a.count < 0 || a.count > 65535 || a.pos0 < 0 || a.rows < 0 || a.d < 1 || a.W < 1)
    return cudaErrorInvalidValue;
  return launch(keep_rows_kernel, dim3(a.count, 3), kBlock, 0, stream, a);
}

}  // namespace memra::cuda
