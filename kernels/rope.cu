// RoPE alone (no norm) on row segments: the lightning indexer's query heads (§3.6). Elementwise:
// one thread per (row, segment, pair); no reduction, so trivially row-independent.
//
//   grid ceil(rows·segs·half / 256)   block 256
#include <algorithm>

#include "common.cuh"
#include "launch.cuh"
#include "ops.h"
#include "rope.cuh"

namespace memra::cuda {

namespace {

__global__ void rope_kernel(NormRopeArgs a) {
  pdl_begin();
  const int64_t total = static_cast<int64_t>(a.rows) * a.segs * a.half;
  for (int64_t id = global_thread(); id < total; id += global_stride()) {
    const int i = static_cast<int>(id % a.half);
    const int64_t rs = id / a.half;
    const int seg = static_cast<int>(rs % a.segs), row = static_cast<int>(rs / a.segs);
    float* x = a.x + static_cast<int64_t>(row) * a.row_stride + static_cast<int64_t>(seg) * a.width;
    rope_pair(x + (a.width - 2 * a.half) + 2 * i, a.inv_freq[i], a.pos[row], a.sign);
  }
}

}  // namespace

cudaError_t rope_only(const NormRopeArgs& a, cudaStream_t stream) {
  if (a.rows == 0 || a.half == 0) return cudaSuccess;
  if (!a.x || !a.inv_freq || !a.pos || a.rows < 0 || a.segs < 1 || a.half < 0 || 2 * a.half > a.width ||
      a.row_stride < static_cast<int64_t>(a.segs) * a.width)
    return cudaErrorInvalidValue;
  const int64_t total = static_cast<int64_t>(a.rows) * a.segs * a.half;
  const int blocks = static_cast<int>(std::min<int64_t>((total + 255) / 256, 65535));
  return launch(rope_kernel, blocks, 256, 0, stream, a);
}

}  // namespace memra::cuda
