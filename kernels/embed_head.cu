// Data movement around the model's ends and between paths: the embedding gather into the n
// identical hc streams, row gathers/scatters (the per-expert MoE path, the LM-head rows), fills and
// the f32 → bf16/f16 conversion in front of cuBLAS (cuda-fast). No arithmetic beyond conversions
// (bf16/f16 → f32 is exact; f32 → bf16/f16 rounds to nearest even, fast path only).
//
// All: block 256, grid ≤ 524280 blocks; the embedding, the row moves and the conversion take one
// block per row (grid-stride over rows), the fill a grid-stride loop over elements.
#include "common.cuh"
#include "half_store.cuh"
#include "launch.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;

int grid_for(int64_t total) {
  const int64_t b = (total + kBlock - 1) / kBlock;
  return static_cast<int>(b < 65535 * 8 ? (b > 0 ? b : 1) : 65535 * 8);
}

// One block per row (grid-stride over rows): each embedding value read once and stored into the n
// streams. An element-wise loop with two 64-bit divisions per element took a 2048-row prefill's
// embedding 0.16 ms, four times its bytes (run 119).
template <typename WT>
__global__ void embed_kernel(const WT* embed, const int32_t* tokens, int rows, int n, int D, float* X) {
  pdl_begin();
  for (int t = blockIdx.x; t < rows; t += gridDim.x) {
    const WT* e = embed + static_cast<int64_t>(tokens[t]) * D;
    float* x = X + static_cast<int64_t>(t) * n * D;
    for (int i = threadIdx.x; i < D; i += kBlock) {
      const float v = to_f32(e[i]);
      for (int j = 0; j < n; ++j) x[static_cast<int64_t>(j) * D + i] = v;
    }
  }
}

// Rows move whole: one block per row (grid-stride over rows), 16-byte vectors when the row starts
// and the width allow it (`vec`), else one float per thread. An element-wise loop with a 64-bit
// division per element ran these at a third of the copy rate (cuda-fast prefill, run 32).
__device__ __forceinline__ void copy_row(const float* __restrict__ s, float* __restrict__ d, int width, bool vec) {
  if (vec) {
    for (int i = threadIdx.x; i < width / 4; i += kBlock)
      reinterpret_cast<float4*>(d)[i] = reinterpret_cast<const float4*>(s)[i];
  } else {
    for (int i = threadIdx.x; i < width; i += kBlock) d[i] = s[i];
  }
}

// out[out_idx ? out_idx[r] : r] = src[src_idx ? src_idx[r] : r]: a gather, a scatter, or both at
// once (the batched experts' outputs from their slots straight to their pairs).
__global__ void move_kernel(const float* src, int64_t src_stride, const int32_t* src_idx, int n, int width, float* out,
                            int64_t out_stride, const int32_t* out_idx, bool vec) {
  pdl_begin();
  for (int r = blockIdx.x; r < n; r += gridDim.x)
    copy_row(src + static_cast<int64_t>(src_idx ? src_idx[r] : r) * src_stride,
             out + static_cast<int64_t>(out_idx ? out_idx[r] : r) * out_stride, width, vec);
}

// dst[r] = src[rows_idx[r]] for rows of 16-bit values (cuda-fast's bf16 / f16 GEMM rows): 8 values a
// 16-byte vector when the rows allow it (`vec`), else one at a time.
__global__ void gather16_kernel(const uint16_t* src, int64_t src_stride, const int32_t* rows_idx, int n, int cols,
                                uint16_t* dst, bool vec) {
  pdl_begin();
  for (int r = blockIdx.x; r < n; r += gridDim.x) {
    const uint16_t* s = src + static_cast<int64_t>(rows_idx[r]) * src_stride;
    uint16_t* d = dst + static_cast<int64_t>(r) * cols;
    if (vec) {
      for (int i = threadIdx.x; i < cols / 8; i += kBlock) reinterpret_cast<uint4*>(d)[i] = reinterpret_cast<const uint4*>(s)[i];
    } else {
      for (int i = threadIdx.x; i < cols; i += kBlock) d[i] = s[i];
    }
  }
}

__global__ void fill_kernel(float* p, int64_t n, float value) {
  pdl_begin();
  for (int64_t i = global_thread(); i < n; i += global_stride()) p[i] = value;
}

template <typename T>
__global__ void convert_kernel(const float* src, int64_t src_stride, const int32_t* rows_idx, int rows, int cols, T* dst,
                               bool vec) {
  pdl_begin();
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* s = src + static_cast<int64_t>(rows_idx ? rows_idx[r] : r) * src_stride;
    T* d = dst + static_cast<int64_t>(r) * cols;
    if (vec) {  // 4 values: one 16-byte load, one 8-byte store
      for (int i = threadIdx.x; i < cols / 4; i += kBlock) {
        const float4 v = reinterpret_cast<const float4*>(s)[i];
        store_four(d, i, v.x, v.y, v.z, v.w);
      }
    } else {
      for (int i = threadIdx.x; i < cols; i += kBlock) d[i] = from_f32<T>(s[i]);
    }
  }
}

// dst[i] = T(swiglu(g[i], u[i])): the batched experts' hidden rows straight into the bf16 / f16 input
// of their down GEMM (the f32 h in between was written and read once more, run 145).
template <typename T>
__global__ void swiglu_convert_kernel(const float* g, const float* u, T* dst, int64_t n, float limit, bool vec) {
  pdl_begin();
  if (vec) {  // 4 values: two 16-byte loads, one 8-byte store
    for (int64_t i = global_thread(); i < n / 4; i += global_stride()) {
      const float4 a = reinterpret_cast<const float4*>(g)[i], b = reinterpret_cast<const float4*>(u)[i];
      store_four(dst, i, swiglu_f(a.x, b.x, limit), swiglu_f(a.y, b.y, limit), swiglu_f(a.z, b.z, limit),
                 swiglu_f(a.w, b.w, limit));
    }
  } else {
    for (int64_t i = global_thread(); i < n; i += global_stride()) dst[i] = from_f32<T>(swiglu_f(g[i], u[i], limit));
  }
}

// swiglu_convert on gate and up already in T (the batched experts' GEMMs writing bf16 / f16): each
// value widened exactly to f32 (to_f32), then swiglu_convert's arithmetic.
template <typename T>
__global__ void swiglu16_convert_kernel(const T* g, const T* u, T* dst, int64_t n, float limit, bool vec) {
  pdl_begin();
  if (vec) {  // 4 values: two 8-byte loads, one 8-byte store
    struct alignas(8) Four {
      T x[4];
    };
    for (int64_t i = global_thread(); i < n / 4; i += global_stride()) {
      const Four a = reinterpret_cast<const Four*>(g)[i], b = reinterpret_cast<const Four*>(u)[i];
      store_four(dst, i, swiglu_f(to_f32(a.x[0]), to_f32(b.x[0]), limit), swiglu_f(to_f32(a.x[1]), to_f32(b.x[1]), limit),
                 swiglu_f(to_f32(a.x[2]), to_f32(b.x[2]), limit), swiglu_f(to_f32(a.x[3]), to_f32(b.x[3]), limit));
    }
  } else {
    for (int64_t i = global_thread(); i < n; i += global_stride()) dst[i] = from_f32<T>(swiglu_f(to_f32(g[i]), to_f32(u[i]), limit));
  }
}

// Whether rows of `width` floats at `a` (stride sa) and `b` (stride sb, elements of `eb` bytes)
// can move as 16-byte float vectors (and their 4·eb-byte counterparts).
bool rows_vec(const void* a, int64_t sa, const void* b, int64_t sb, int width, int eb) {
  return width % 4 == 0 && sa % 4 == 0 && sb % 4 == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(b) % (4 * eb) == 0;
}

int grid_rows(int rows) { return rows < 65535 * 8 ? (rows > 0 ? rows : 1) : 65535 * 8; }

// launch_t(T{}) with T the bf16 or f16 element type of dst_type; any other type is not a GEMM input.
template <typename F>
cudaError_t by_half_type(WType dst_type, F&& launch_t) {
  switch (dst_type) {
    case WType::kBF16: return launch_t(__nv_bfloat16{});
    case WType::kF16: return launch_t(__half{});
    case WType::kF32:
    case WType::kFp8Block:
    case WType::kFp4Block: return cudaErrorInvalidValue;
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t embed_rows(const void* embed, WType wtype, const int32_t* tokens, int rows, int n, int D, float* X,
                       cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!embed || !tokens || !X || rows < 0 || n < 1 || D <= 0) return cudaErrorInvalidValue;
  const int grid = grid_rows(rows);
  switch (wtype) {
    case WType::kF32: return launch(embed_kernel<float>, grid, kBlock, 0, stream, static_cast<const float*>(embed), tokens, rows, n, D, X);
    case WType::kBF16:
      return launch(embed_kernel<__nv_bfloat16>, grid, kBlock, 0, stream, static_cast<const __nv_bfloat16*>(embed), tokens, rows,
                    n, D, X);
    case WType::kF16: return launch(embed_kernel<__half>, grid, kBlock, 0, stream, static_cast<const __half*>(embed), tokens, rows, n, D, X);
    case WType::kFp8Block:
    case WType::kFp4Block: return cudaErrorInvalidValue;  // the embedding is uploaded plain (weights.cpp)
  }
  return cudaErrorInvalidValue;
}

cudaError_t move_rows(const float* src, int64_t src_stride, const int32_t* src_idx, int n, int width, float* out,
                      int64_t out_stride, const int32_t* out_idx, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (!src || !out || n < 0 || width <= 0 || src_stride < width || out_stride < width) return cudaErrorInvalidValue;
  return launch(move_kernel, grid_rows(n), kBlock, 0, stream, src, src_stride, src_idx, n, width, out, out_stride, out_idx,
                rows_vec(src, src_stride, out, out_stride, width, 4));
}

cudaError_t gather_rows(const float* src, int64_t src_stride, const int32_t* rows_idx, int out_rows, int width,
                        float* out, int64_t out_stride, cudaStream_t stream) {
  if (!rows_idx && out_rows > 0) return cudaErrorInvalidValue;
  return move_rows(src, src_stride, rows_idx, out_rows, width, out, out_stride, nullptr, stream);
}

cudaError_t scatter_rows(const float* src, int64_t src_stride, const int32_t* rows_idx, int src_rows, int width,
                         float* out, int64_t out_stride, cudaStream_t stream) {
  if (!rows_idx && src_rows > 0) return cudaErrorInvalidValue;
  return move_rows(src, src_stride, nullptr, src_rows, width, out, out_stride, rows_idx, stream);
}

cudaError_t gather_rows16(const void* src, int64_t src_stride, const int32_t* rows_idx, int rows, int cols, void* dst,
                          cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!src || !rows_idx || !dst || rows < 0 || cols <= 0 || src_stride < cols) return cudaErrorInvalidValue;
  const bool vec = cols % 8 == 0 && src_stride % 8 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  return launch(gather16_kernel, grid_rows(rows), kBlock, 0, stream, static_cast<const uint16_t*>(src), src_stride, rows_idx,
                rows, cols, static_cast<uint16_t*>(dst), vec);
}

cudaError_t fill_f32(float* p, int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (!p || n < 0) return cudaErrorInvalidValue;
  return launch(fill_kernel, grid_for(n), kBlock, 0, stream, p, n, value);
}

cudaError_t convert_rows(const float* src, int64_t src_stride, int rows, int cols, void* dst, WType dst_type,
                         cudaStream_t stream, const int32_t* rows_idx) {
  if (rows == 0) return cudaSuccess;
  if (!src || !dst || rows < 0 || cols <= 0 || src_stride < cols) return cudaErrorInvalidValue;
  const int grid = grid_rows(rows);
  const bool vec = rows_vec(src, src_stride, dst, cols, cols, 2);
  return by_half_type(dst_type, [&](auto t) {
    using T = decltype(t);
    return launch(convert_kernel<T>, grid, kBlock, 0, stream, src, src_stride, rows_idx, rows, cols, static_cast<T*>(dst), vec);
  });
}

cudaError_t swiglu16_convert(const void* g, const void* u, void* dst, WType type, int64_t n, float limit,
                             cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (!g || !u || !dst || n < 0) return cudaErrorInvalidValue;
  const bool vec = n % 4 == 0 && reinterpret_cast<uintptr_t>(g) % 8 == 0 && reinterpret_cast<uintptr_t>(u) % 8 == 0 &&
                   reinterpret_cast<uintptr_t>(dst) % 8 == 0;
  const int grid = grid_for(vec ? n / 4 : n);
  return by_half_type(type, [&](auto t) {
    using T = decltype(t);
    return launch(swiglu16_convert_kernel<T>, grid, kBlock, 0, stream, static_cast<const T*>(g), static_cast<const T*>(u),
                  static_cast<T*>(dst), n, limit, vec);
  });
}

cudaError_t swiglu_convert(const float* g, const float* u, void* dst, WType dst_type, int64_t n, float limit,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (!g || !u || !dst || n < 0) return cudaErrorInvalidValue;
  const bool vec = n % 4 == 0 && reinterpret_cast<uintptr_t>(g) % 16 == 0 && reinterpret_cast<uintptr_t>(u) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(dst) % 8 == 0;
  const int grid = grid_for(vec ? n / 4 : n);
  return by_half_type(dst_type, [&](auto t) {
    using T = decltype(t);
    return launch(swiglu_convert_kernel<T>, grid, kBlock, 0, stream, g, u, static_cast<T*>(dst), n, limit, vec);
  });
}

}  // namespace memra::cuda
