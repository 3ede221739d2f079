// One row segment's RMSNorm on a block of kNormBlock threads: the body norm_rope_kernel (norm.cu)
// runs per (row, segment), kept in one place so that hc_pre's fused form (mhc.cu), which normalises
// the collapsed row in the block that made it, has the same bits by construction.
#pragma once
#include "common.cuh"

namespace memra::cuda {

inline constexpr int kNormBlock = 256;
inline constexpr int kNormCache = 16;  // values per thread held in registers: segments up to 4096 wide

// The cached form's arithmetic on values a thread already holds (v[u] = x[t + 256·u]): thread t's
// f32 fma chain over u ascending, block_sum<256>, then x[i] = weight ? wv·(v·r) : v·r. norm_row
// and hc_pre_norm_kernel (whose values are its collapse's, mhc.cu) both end here: the same bits.
__device__ __forceinline__ void norm_cached(const float (&v)[kNormCache], const float (&wv)[kNormCache], bool weighted,
                                            float* x, int width, float eps, float* scratch) {
  float ss = 0.0f;
#pragma unroll
  for (int u = 0; u < kNormCache; ++u)
    if (threadIdx.x + u * kNormBlock < width) ss = __fmaf_rn(v[u], v[u], ss);
  ss = block_sum<kNormBlock>(ss, scratch);
  const float r = rms_inverse(ss, width, eps);
#pragma unroll
  for (int u = 0; u < kNormCache; ++u) {
    const int i = threadIdx.x + u * kNormBlock;
    if (i < width) x[i] = weighted ? wv[u] * (v[u] * r) : v[u] * r;
  }
}

// One warp playing norm_row's 256-thread block over a segment of `width` ≤ 256·PER values: v[k][u]
// = x[lane + 32k + 256u] (played thread lane + 32k; anything past the width is skipped). Returns
// r = rsqrt(mean(x²) + eps) on every lane with norm_row's bits: each played thread's fma chain over
// u ascending, block_sum<256>'s per-warp butterflies (warp_sum_many's bits), then its butterfly over
// the 8 warp sums on lanes 0-7, zeros above (norm_rope_warp_kernel, attention_fast's raw queries).
template <int PER>
__device__ __forceinline__ float played_rms_inverse(const float (&v)[kNormBlock / kWarp][PER], int width, float eps) {
  constexpr int kPlayed = kNormBlock / kWarp;
  const int lane = threadIdx.x % kWarp;
  float part[kPlayed];
#pragma unroll
  for (int k = 0; k < kPlayed; ++k) {
    float ss = 0.0f;
#pragma unroll
    for (int u = 0; u < PER; ++u)
      if (lane + k * kWarp + u * kNormBlock < width) ss = __fmaf_rn(v[k][u], v[k][u], ss);
    part[k] = ss;
  }
  const float warp_total = warp_sum_many<kPlayed>(part);  // value k on lanes 4k … 4k + 3
  const float mine = __shfl_sync(kFullMask, warp_total, (lane % kPlayed) * (kWarp / kPlayed));
  return rms_inverse(warp_sum(lane < kPlayed ? mine : 0.0f), width, eps);
}

// x[i] = weight[i]·(x[i]·r) (weight null: x[i]·r), r = rsqrt(mean(x²) + eps): thread t's f32 fma chain
// over i = t, t + 256, … then block_sum<256>. Every thread of the block calls it; `scratch` holds
// kNormBlock / 32 floats. The block's own earlier writes to x must be visible (a barrier before).
__device__ __forceinline__ void norm_row(float* x, int width, const float* weight, float eps, float* scratch) {
  if (width <= kNormBlock * kNormCache) {
    // The thread's values and weights loaded once, together (one round trip to memory instead of
    // one per pass and unrolled group); the same chain, block_sum and products as the form below.
    float v[kNormCache], wv[kNormCache];
#pragma unroll
    for (int u = 0; u < kNormCache; ++u) {
      const int i = threadIdx.x + u * kNormBlock;
      v[u] = i < width ? x[i] : 0.0f;
      wv[u] = weight && i < width ? weight[i] : 0.0f;
    }
    norm_cached(v, wv, weight != nullptr, x, width, eps, scratch);
  } else {
    float ss = 0.0f;
    for (int i = threadIdx.x; i < width; i += kNormBlock) ss = __fmaf_rn(x[i], x[i], ss);
    ss = block_sum<kNormBlock>(ss, scratch);
    const float r = rms_inverse(ss, width, eps);
    for (int i = threadIdx.x; i < width; i += kNormBlock) x[i] = weight ? weight[i] * (x[i] * r) : x[i] * r;
  }
}

}  // namespace memra::cuda
