// RMSNorm (weighted or not) of row segments, optionally followed by RoPE of each segment's last
// 2·half dims: attn/ffn/q/kv/final norms, the per-head query norm with its rotation, the kv
// rotation. One block per (row, segment); the sum of squares is a thread-strided f32 fma chain
// (thread t takes elements t, t+256, …) closed by block_sum<256>: its order depends on the
// segment width only, so a row's result does not depend on how many rows are launched.
//
//   grid (rows, segs)   block 256
#include "common.cuh"
#include "launch.cuh"
#include "norm_row.cuh"
#include "ops.h"
#include "rope.cuh"

namespace memra::cuda {

namespace {

constexpr int kBlock = kNormBlock;

__global__ void __launch_bounds__(kBlock) norm_rope_kernel(NormRopeArgs a) {
  pdl_begin();
  __shared__ float scratch[kBlock / kWarp];
  const int row = blockIdx.x, seg = blockIdx.y;
  float* x = a.x + static_cast<int64_t>(row) * a.row_stride + static_cast<int64_t>(seg) * a.width;
  if (a.norm) norm_row(x, a.width, a.weight, a.eps, scratch);
  if (a.inv_freq) {
    __syncthreads();  // the rotation reads values other threads normalised
    float* tail = x + (a.width - 2 * a.half);
    for (int i = threadIdx.x; i < a.half; i += kBlock) rope_pair(tail + 2 * i, a.inv_freq[i], a.pos[row], a.sign);
  }
}

}  // namespace

cudaError_t norm_rope(const NormRopeArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return cudaSuccess;
  if (!a.x || a.rows < 0 || a.segs < 1 || a.segs > 65535 || a.width <= 0 ||
      a.row_stride < static_cast<int64_t>(a.segs) * a.width || (a.inv_freq && (!a.pos || a.half < 0 || 2 * a.half > a.width)))
    return cudaErrorInvalidValue;
  return launch(norm_rope_kernel, dim3(a.rows, a.segs), kBlock, 0, stream, a);
}

}  // namespace memra::cuda
