// The query heads' norm_rope done by the exact attention kernels while they stage q
// (AttentionArgs::q_raw): RMSNorm without weight, then RoPE of the last 2·half dims, with
// norm_rope's bits, so that a decode-sized round loses the separate launch on its critical path
// (2-3 us a layer in the graph, run 192's marks). cuda-fast's kernel has its own form
// (attention_fast.cu: TF32 columns).
#pragma once
#include "common.cuh"
#include "norm_row.cuh"
#include "rope.cuh"

namespace memra::cuda {

// Widest head the staging takes: norm_rope_warp_kernel's bound (4 values a played thread).
inline constexpr int kQueryStageMaxDim = 4 * kNormBlock;

// Heads u = 0 … HB − 1 of one row's query (q: head u at q + u·d; heads ≥ nh staged as zeros) into
// at(u, i), normalised and rotated as norm_rope's query heads. Warp w takes heads w, w + warps, …,
// each as norm_rope_warp_kernel takes a segment: lane l plays norm_row's threads l, l + 32, …
// (played_rms_inverse: its bits), v·r stored, then each pair of the last 2·half dims rotated from
// the stored values, as norm_rope rotates after its norm. Every thread of the block calls it; the
// caller's next block barrier publishes at().
template <int PER, typename At>
__device__ __forceinline__ void stage_raw_queries(const float* q, int d, int HB, int nh, float eps, const float* inv_freq,
                                                  int half, int32_t pos, At&& at) {
  constexpr int kPlayed = kNormBlock / kWarp;
  const int warps = blockDim.x / kWarp, warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int rope0 = d - 2 * half;
  for (int u = warp; u < HB; u += warps) {  // warp-uniform
    float v[kPlayed][PER];
#pragma unroll
    for (int k = 0; k < kPlayed; ++k)
#pragma unroll
      for (int p = 0; p < PER; ++p) {
        const int i = lane + k * kWarp + p * kNormBlock;
        v[k][p] = u < nh && i < d ? q[static_cast<int64_t>(u) * d + i] : 0.0f;
      }
    const float r = u < nh ? played_rms_inverse(v, d, eps) : 0.0f;
#pragma unroll
    for (int k = 0; k < kPlayed; ++k)
#pragma unroll
      for (int p = 0; p < PER; ++p) {
        const int i = lane + k * kWarp + p * kNormBlock;
        if (i < d) at(u, i) = v[k][p] * r;
      }
    __syncwarp();  // the rotation reads values other lanes normalised
    if (u < nh && inv_freq)
      for (int p = lane; p < half; p += kWarp) {
        float pair[2] = {at(u, rope0 + 2 * p), at(u, rope0 + 2 * p + 1)};
        rope_pair(pair, inv_freq[p], pos, 1.0f);
        at(u, rope0 + 2 * p) = pair[0], at(u, rope0 + 2 * p + 1) = pair[1];
      }
    __syncwarp();
  }
}

}  // namespace memra::cuda
