// f32 → bf16 / f16 stores, round to nearest even: the cuda-fast realization's GEMM inputs written by
// the conversions (embed_head.cu) and by the kernels that write them directly (attention_fast.cu),
// one rounding everywhere so both give the same bits (the exact widening back: common.cuh's to_f32).
#pragma once
#include "common.cuh"

namespace memra::cuda {

template <typename T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) {
  return __float2half_rn(v);
}

// dst[i·4 … i·4 + 3] = T(a), T(b), T(c), T(d) as one 8-byte store.
template <typename T>
__device__ __forceinline__ void store_four(T* dst, int64_t i, float a, float b, float c, float d) {
  struct alignas(8) Four {
    T x[4];
  } o;
  o.x[0] = from_f32<T>(a), o.x[1] = from_f32<T>(b), o.x[2] = from_f32<T>(c), o.x[3] = from_f32<T>(d);
  reinterpret_cast<Four*>(dst)[i] = o;
}

// dst[0], dst[1] = T(a), T(b) as one 4-byte store.
template <typename T>
__device__ __forceinline__ void store_two(T* dst, float a, float b) {
  struct alignas(4) Two {
    T x[2];
  } o;
  o.x[0] = from_f32<T>(a), o.x[1] = from_f32<T>(b);
  *reinterpret_cast<Two*>(dst) = o;
}

}  // namespace memra::cuda
