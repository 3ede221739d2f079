// Device-side building blocks shared by every kernel file: weight element types, the fixed-order
// warp and block reductions that make the exact realization's results independent of how many rows
// run together, and the scalar functions (sigmoid, silu, softplus) written as the CPU reference
// writes them.
//
// Exactness rules every kernel follows (kernels/README.md):
//  - the library is compiled with --fmad=false: `a * b + c` is a rounded product and a rounded sum,
//    exactly as on the CPU; a fused multiply-add appears only where written (__fmaf_rn);
//  - a reduction's order depends only on compile-time constants (block size, lane count, vector
//    width) and on the reduced length, never on the number of rows, sequences or chunks;
//  - block sizes are constants, never derived from a launch's shape.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace memra::cuda {

inline constexpr int kWarp = 32;
inline constexpr unsigned kFullMask = 0xffffffffu;

// A kernel's dynamic shared memory as a `T name[]` aligned to `align` bytes; memra-emu hands each
// block its own buffer instead (an extern __shared__ array has no meaning in plain C++).
#if defined(MEMRA_CUDA_EMU)
#define MEMRA_DYNAMIC_SMEM(T, name, align) T* name = reinterpret_cast<T*>(::memra::emu::dynamic_smem())
#else
#define MEMRA_DYNAMIC_SMEM(T, name, align) extern __shared__ __align__(align) T name[]
#endif

// The start of every kernel's work (launch.cuh): wait until the grids this one depends on have
// completed and their writes are visible (returns at once for a launch without PDL), then let the
// next kernel of the stream launch, so its blocks are resident when this one ends. Nothing an
// earlier kernel wrote is read, and nothing is written, before it; weights may be read before it.
__device__ __forceinline__ void pdl_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The device's global timer, nanoseconds (the timeline's spin kernel, the graph marks).
__device__ __forceinline__ unsigned long long global_ns() {
#if defined(MEMRA_CUDA_EMU)
  return emu::global_ns();
#else
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

// 16 bytes global → shared without a register round trip (cp.async, L2 only); `valid` false fills
// the 16 bytes with zeros and reads nothing. Complete after cp_async_commit() + cp_async_wait<N>()
// leaves at most N later groups in flight (then a barrier, for other threads' copies).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
#if defined(MEMRA_CUDA_EMU)
  emu::cp_async16(smem, gmem, valid);  // lands at the wait that completes its group
#else
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(gmem), "r"(valid ? 16 : 0) : "memory");
#endif
}
#if defined(MEMRA_CUDA_EMU)
__device__ __forceinline__ void cp_async_commit() { emu::cp_async_commit(); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  emu::cp_async_wait(N);
}
#else
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
#endif

// Two bf16 values in 32 bits (the lower-addressed one in the low half) as f32, from their bits: a
// shift and a mask. In the raw register-tiled linear's loop it took 32 instructions a half step
// where __bfloat162float took 48 (SASS, runs 76-77); dot_exact.cuh's decode keeps
// __bfloat162float, which ptxas compiled shorter there (the tiled linear 2552 against 2824).
__device__ __forceinline__ void bf16x2_f32(uint32_t u, float& lo, float& hi) {
  lo = __uint_as_float(u << 16);
  hi = __uint_as_float(u & 0xffff0000u);
}

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }

// Butterfly sum over the 32 lanes. Every lane ends with the same bits: at each level a lane adds
// the same two operands as its partner, in swapped order, and f32 addition is commutative.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

// warp_sum of N values at once (N a power of two ≤ 32) in 31 + log2(32/N) shuffles instead of 5·N:
// each of the first log2(N) butterfly levels halves the values a lane carries (the lanes whose
// level bit is set keep the upper half, their partners the lower, each adding its partner's copy
// of what it keeps), then the remaining levels are plain butterflies. Every partial is a lane's
// own value plus its partner's, as in warp_sum, so value j's sum has warp_sum's bits. Returns the
// sum of value j = lane >> (5 − log2 N) (lanes j·32/N … (j+1)·32/N − 1 hold value j).
template <int C, int N>
__device__ __forceinline__ void warp_halve(float (&v)[N], int lane, int off) {
  if constexpr (C > 1) {
    const bool upper = lane & off;
#pragma unroll
    for (int i = 0; i < C / 2; ++i) {
      const float keep = upper ? v[i + C / 2] : v[i];
      const float send = upper ? v[i] : v[i + C / 2];
      v[i] = keep + __shfl_xor_sync(kFullMask, send, off);
    }
    warp_halve<C / 2>(v, lane, off >> 1);
  }
}

template <int N>
__device__ __forceinline__ float warp_sum_many(float (&v)[N]) {
  static_assert(N >= 1 && N <= kWarp && (N & (N - 1)) == 0, "a power of two up to 32");
  warp_halve<N>(v, threadIdx.x % kWarp, 16);
  float s = v[0];
#pragma unroll
  for (int off = 16 / N; off > 0; off >>= 1) s += __shfl_xor_sync(kFullMask, s, off);
  return s;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}

// Sum of one value per thread over a block of BLOCK threads (a multiple of 32): each warp's
// butterfly, then warp 0 adds the per-warp sums in a butterfly. Fixed order for a fixed BLOCK.
// `scratch` holds at least BLOCK/32 floats; the result is returned to every thread.
template <int BLOCK>
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  static_assert(BLOCK % kWarp == 0 && BLOCK <= 1024, "block size");
  constexpr int kWarps = BLOCK / kWarp;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float t = lane < kWarps ? scratch[lane] : 0.0f;
  t = warp_sum(t);
  return t;
}

template <int BLOCK>
__device__ __forceinline__ float block_max(float v, float* scratch) {
  constexpr int kWarps = BLOCK / kWarp;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float t = lane < kWarps ? scratch[lane] : -INFINITY;
  return warp_max(t);
}

// 1/rms of a row from its sum of squares: every RMSnorm of the library (norm_rope, the mHC streams,
// the compressor's entries) scales by this one expression, so a norm moved between kernels keeps
// its bits.
__device__ __forceinline__ float rms_inverse(float sum_sq, int width, float eps) {
  return 1.0f / sqrtf(sum_sq / static_cast<float>(width) + eps);
}

// The CPU reference's scalar functions (lib/engine/cpu_ops.h), in f32.
__device__ __forceinline__ float sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float silu_f(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float softplus_f(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

// SwiGLU with the clamp (docs/architecture.md §3.8): g ≤ L, |u| ≤ L, h = silu(g)·u. limit ≤ 0: none.
__device__ __forceinline__ float swiglu_f(float g, float u, float limit) {
  if (limit > 0.0f) {
    g = fminf(g, limit);
    u = fminf(fmaxf(u, -limit), limit);
  }
  return silu_f(g) * u;
}

// Grid-stride loop bound for elementwise kernels.
__device__ __forceinline__ int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t global_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace memra::cuda
