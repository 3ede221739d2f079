// The exact dot product: one warp computes x[r]·w for up to RB rows r sharing the weight row w.
// Shared by linear_exact.cu and the fused MoE kernels (moe.cu), so the per-expert and fused MoE
// paths and every linear agree by bits.
//
// Order of one (row, output) element, fixed by the weight type alone:
//   lane l accumulates, starting from +0, acc = fma(x[i], w[i], acc) for
//     base = l·V, l·V + 32·V, l·V + 64·V, … (< in);  i = base + 0 … base + V−1 (< in)
//   (V = 16 bytes of weights: 4 for f32, 8 for bf16/f16), then the 32 lane sums meet in the
//   butterfly of warp_sum. Neither the number of rows in the call (RB, nr), nor the alignment that
//   picks the vector or the scalar load path, changes that sequence: a row gives the same bits
//   alone, in a group of 8, in any chunk or batch.
#pragma once
#include "common.cuh"

namespace memra::cuda {

template <typename WT>
struct WVec;
template <>
struct WVec<float> {
  static constexpr int kN = 4;
};
template <>
struct WVec<__nv_bfloat16> {
  static constexpr int kN = 8;
};
template <>
struct WVec<__half> {
  static constexpr int kN = 8;
};

// 16 bytes of weights → V floats.
__device__ __forceinline__ void load_w16(const float* p, float (&out)[4]) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
}
__device__ __forceinline__ void load_w16(const __nv_bfloat16* p, float (&out)[8]) {
  const uint4 v = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(&v);
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = __bfloat162float(h[i]);
}
__device__ __forceinline__ void load_w16(const __half* p, float (&out)[8]) {
  const uint4 v = *reinterpret_cast<const uint4*>(p);
  const __half* h = reinterpret_cast<const __half*>(&v);
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = __half2float(h[i]);
}
template <int V>
__device__ __forceinline__ void load_x(const float* p, float (&out)[V]) {
#pragma unroll
  for (int i = 0; i < V; i += 4) {
    const float4 v = *reinterpret_cast<const float4*>(p + i);
    out[i] = v.x, out[i + 1] = v.y, out[i + 2] = v.z, out[i + 3] = v.w;
  }
}

// acc[r] = x[r]·w for r < nr (nr ≤ RB); every lane of the warp returns the same sums.
template <typename WT, int RB>
__device__ __forceinline__ void dot_rows(const float* const (&xr)[RB], int nr, const WT* __restrict__ w, int in,
                                         float (&acc)[RB]) {
  constexpr int V = WVec<WT>::kN;
  const int lane = threadIdx.x % kWarp;
#pragma unroll
  for (int r = 0; r < RB; ++r) acc[r] = 0.0f;
  bool vec = (in % V == 0) && (reinterpret_cast<uintptr_t>(w) % 16 == 0);
#pragma unroll
  for (int r = 0; r < RB; ++r)
    if (r < nr) vec = vec && (reinterpret_cast<uintptr_t>(xr[r]) % 16 == 0);
  if (vec) {
    // Unrolled so that several 16-byte weight loads are in flight per lane before the first FMA
    // (a decode GEMV is bound by memory latency × loads in flight); the FMA order is unchanged.
    constexpr int kUnroll = RB == 1 ? 4 : 2;
#pragma unroll kUnroll
    for (int base = lane * V; base < in; base += kWarp * V) {
      float wf[V];
      load_w16(w + base, wf);
#pragma unroll
      for (int r = 0; r < RB; ++r) {
        if (r < nr) {
          float xf[V];
          load_x<V>(xr[r] + base, xf);
#pragma unroll
          for (int v = 0; v < V; ++v) acc[r] = __fmaf_rn(xf[v], wf[v], acc[r]);
        }
      }
    }
  } else {
    for (int base = lane * V; base < in; base += kWarp * V) {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const int i = base + v;
        if (i < in) {
          const float wv = to_f32(w[i]);
#pragma unroll
          for (int r = 0; r < RB; ++r)
            if (r < nr) acc[r] = __fmaf_rn(xr[r][i], wv, acc[r]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < RB; ++r) acc[r] = warp_sum(acc[r]);
}

}  // namespace memra::cuda
