// RMSNorm (weighted or not) of row segments, optionally followed by RoPE of each segment's last
// 2·half dims: attn/ffn/q/kv/final norms, the per-head query norm with its rotation, the kv
// rotation. One block per (row, segment); the sum of squares is a thread-strided f32 fma chain
// (thread t takes elements t, t+256, …) closed by block_sum<256>: its order depends on the
// segment width only, so a row's result does not depend on how many rows are launched.
//
//   grid (rows, segs)   block 256
// Many narrow segments (a prefill's query heads: 2048 rows × 64 segments of 512) one warp each
// (norm_rope_warp_kernel): the warp's lane l plays threads l, l + 32, …, l + 224 of the block, so
// each sum and product is the block's, and block_sum<256>'s two butterfly stages are replayed in
// its order: the same bits without a block's barriers per segment.
//   grid (rows, ceil(segs / 8))   block 256 (a warp per segment)
#include "ab_switch.h"
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

constexpr int kVirtual = kBlock / kWarp;       // block threads a lane plays
constexpr int kWarpMaxWidth = 4 * kBlock;       // up to 4 values a played thread: 32 a lane
constexpr int64_t kWarpFormSegments = 1024;     // rounds with at least this many segments

__global__ void __launch_bounds__(kBlock, 3) norm_rope_warp_kernel(NormRopeArgs a) {
  pdl_begin();
  constexpr int kPer = kWarpMaxWidth / kBlock;
  const int lane = threadIdx.x % kWarp, row = blockIdx.x, seg = blockIdx.y * kVirtual + threadIdx.x / kWarp;
  if (seg >= a.segs) return;  // warp-uniform; no block barrier below
  float* x = a.x + static_cast<int64_t>(row) * a.row_stride + static_cast<int64_t>(seg) * a.width;
  const int width = a.width;
  if (a.norm) {
    // v[k][u]: element t + 256u of played thread t = lane + 32k (norm_row's register path).
    float v[kVirtual][kPer];
#pragma unroll
    for (int k = 0; k < kVirtual; ++k)
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
        const int i = lane + k * kWarp + u * kBlock;
        v[k][u] = i < width ? x[i] : 0.0f;
      }
    const float r = played_rms_inverse(v, width, a.eps);
#pragma unroll
    for (int k = 0; k < kVirtual; ++k)
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
        const int i = lane + k * kWarp + u * kBlock;
        if (i < width) x[i] = a.weight ? a.weight[i] * (v[k][u] * r) : v[k][u] * r;
      }
  }
  if (a.inv_freq) {
    __syncwarp();  // the rotation reads values other lanes normalised
    float* tail = x + (width - 2 * a.half);
    for (int i = lane; i < a.half; i += kWarp) rope_pair(tail + 2 * i, a.inv_freq[i], a.pos[row], a.sign);
  }
}

// MEMRA_CUDA_NORM_WARP=0 (A/B timing; the same bits): a block per segment whatever the round.
bool warp_form_on() {
  static const bool on = switch_on("MEMRA_CUDA_NORM_WARP");
  return on;
}

}  // namespace

cudaError_t norm_rope(const NormRopeArgs& a, cudaStream_t stream, int form) {
  if (a.rows == 0) return cudaSuccess;
  if (!a.x || a.rows < 0 || a.segs < 1 || a.segs > 65535 || a.width <= 0 ||
      a.row_stride < static_cast<int64_t>(a.segs) * a.width || (a.inv_freq && (!a.pos || a.half < 0 || 2 * a.half > a.width)))
    return cudaErrorInvalidValue;
  if (form == 0)
    form = a.width <= kWarpMaxWidth && static_cast<int64_t>(a.rows) * a.segs >= kWarpFormSegments && warp_form_on() ? 2 : 1;
  if (form == 2 && a.width <= kWarpMaxWidth)
    return launch(norm_rope_warp_kernel, dim3(a.rows, (a.segs + kVirtual - 1) / kVirtual), kBlock, 0, stream, a);
  return launch(norm_rope_kernel, dim3(a.rows, a.segs), kBlock, 0, stream, a);
}

}  // namespace memra::cuda
