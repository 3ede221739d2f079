// The exact dot product: one warp computes x[r]·w for up to RB rows r sharing the weight row w.
// Shared by linear_exact.cu and the fused MoE kernels (moe.cu), so the per-expert and fused MoE
// paths and every linear agree by bits.
//
// Order of one (row, output) element, fixed by the weight type alone:
//   lane l accumulates, starting from +0, acc = fma(x[i], w[i], acc) for
//     base = l·V, l·V + 32·V, l·V + 64·V, … (< in);  i = base + 0 … base + V−1 (< in)
//   (V = 16 bytes of weights: 4 for f32, 8 for bf16/f16; 8 codes for packed FP8/FP4), then the
//   32 lane sums meet in the butterfly of warp_sum. Neither the number of rows in the call (RB, nr), nor the alignment that
//   picks the vector or the scalar load path, changes that sequence: a row gives the same bits
//   alone, in a group of 8, in any chunk or batch. A packed row's values are the exact products
//   code · scale (packed_decode.h), so with V = 8 an FP8/FP4 row gives the bits of the bf16 row
//   holding the same values.
#pragma once
#include "common.cuh"
#include "ops.h"
#include "packed_decode.h"

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
// kCg: through L2 only (ld.global.cg), for activations that other blocks of the same launch wrote
// (the one-row MoE's h): an L1 line fetched earlier for a neighbouring row could hold stale values.
template <int V, bool kCg = false>
__device__ __forceinline__ void load_x(const float* p, float (&out)[V]) {
#pragma unroll
  for (int i = 0; i < V; i += 4) {
    const float4 v = kCg ? __ldcg(reinterpret_cast<const float4*>(p + i)) : *reinterpret_cast<const float4*>(p + i);
    out[i] = v.x, out[i + 1] = v.y, out[i + 2] = v.z, out[i + 3] = v.w;
  }
}

// A weight row as dot_rows reads it: V values per lane step (16 bytes of a plain type; 8 codes of
// a packed type, so FP8/FP4 rows take bf16's order), a vector load of those V values, and one value
// by index for the scalar path. The vector path needs `vec_ok` (alignment, whole steps, one scale
// per step); either path gives the same values in the same order.
template <typename WT>
struct PlainRow {
  static constexpr int kV = WVec<WT>::kN;
  const WT* w;
  // Row r of the matrix at `base` with `cols` columns (scales unused).
  __device__ __forceinline__ static PlainRow at(const void* base, const WScale&, int64_t r, int cols) {
    return {static_cast<const WT*>(base) + r * cols};
  }
  __device__ __forceinline__ static int64_t matrix_bytes(int64_t rows, int64_t cols) { return rows * cols * sizeof(WT); }
  __device__ __forceinline__ bool vec_ok(int in) const {
    return in % kV == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
  }
  __device__ __forceinline__ void load(int base, float (&out)[kV]) const { load_w16(w + base, out); }
  __device__ __forceinline__ float value(int i) const { return to_f32(w[i]); }
  // load() in two halves: the 16 bytes now (a load issued early, held in 4 registers), their V
  // values later.
  __device__ __forceinline__ uint4 load_raw(int base) const { return *reinterpret_cast<const uint4*>(w + base); }
  __device__ __forceinline__ static void decode(const uint4& v, float (&out)[kV]) {
    const WT* h = reinterpret_cast<const WT*>(&v);
#pragma unroll
    for (int i = 0; i < kV; ++i) out[i] = to_f32(h[i]);
  }
};

// FP8 e4m3 row: 8 codes (8 bytes) per step; `s` is the row's scale row, value i uses s[i / bc].
struct Fp8Row {
  static constexpr int kV = 8;
  const uint8_t* w;
  const uint8_t* s;
  int bc;
  __device__ __forceinline__ static Fp8Row at(const void* base, const WScale& ws, int64_t r, int cols) {
    return {static_cast<const uint8_t*>(base) + r * cols, ws.ptr + (r / ws.block_rows) * ws.cols, ws.block_cols};
  }
  __device__ __forceinline__ static int64_t matrix_bytes(int64_t rows, int64_t cols) { return rows * cols; }
  __device__ __forceinline__ bool vec_ok(int in) const {
    return in % kV == 0 && bc % kV == 0 && reinterpret_cast<uintptr_t>(w) % 8 == 0;
  }
  __device__ __forceinline__ void load(int base, float (&out)[kV]) const {
    const uint2 v = *reinterpret_cast<const uint2*>(w + base);
    fp8x8_f32(v.x, v.y, e8m0_f32(s[base / bc]), out);
  }
  __device__ __forceinline__ float value(int i) const { return fp8_at(w, i, e8m0_f32(s[i / bc])); }
};

// FP4 e2m1 row: 8 codes (4 bytes) per step, value i in byte i/2 (low nibble first), scale s[i / bc].
struct Fp4Row {
  static constexpr int kV = 8;
  const uint8_t* w;
  const uint8_t* s;
  int bc;
  __device__ __forceinline__ static Fp4Row at(const void* base, const WScale& ws, int64_t r, int cols) {
    return {static_cast<const uint8_t*>(base) + r * (cols / 2), ws.ptr + (r / ws.block_rows) * ws.cols, ws.block_cols};
  }
  __device__ __forceinline__ static int64_t matrix_bytes(int64_t rows, int64_t cols) { return rows * (cols / 2); }
  __device__ __forceinline__ bool vec_ok(int in) const {
    return in % kV == 0 && bc % kV == 0 && reinterpret_cast<uintptr_t>(w) % 4 == 0;
  }
  __device__ __forceinline__ void load(int base, float (&out)[kV]) const {
    fp4x8_f32(*reinterpret_cast<const uint32_t*>(w + base / 2), e8m0_f32(s[base / bc]), out);
  }
  __device__ __forceinline__ float value(int i) const { return fp4_at(w, i, e8m0_f32(s[i / bc])); }
};

// Row o of matrix e of a stack [count, rows, cols]: each matrix's codes, and its scales, follow the
// previous matrix's (weights.cpp stacks experts this way).
template <typename Row>
__device__ __forceinline__ Row stack_row(const void* base, WScale ws, int64_t e, int64_t rows, int cols, int64_t o) {
  if (ws.ptr) ws.ptr += e * ((rows + ws.block_rows - 1) / ws.block_rows * ws.cols);  // = wscale_matrix_bytes
  return Row::at(static_cast<const uint8_t*>(base) + e * Row::matrix_bytes(rows, cols), ws, o, cols);
}

// acc[r] = x[r]·w for r < nr (nr ≤ RB); every lane of the warp returns the same sums. kCg: x read
// through L2 only (load_x); the order of the sums does not depend on it.
template <typename Row, int RB, bool kCg = false>
__device__ __forceinline__ void dot_rows(const float* const (&xr)[RB], int nr, const Row& w, int in, float (&acc)[RB]) {
  constexpr int V = Row::kV;
  const int lane = threadIdx.x % kWarp;
#pragma unroll
  for (int r = 0; r < RB; ++r) acc[r] = 0.0f;
  bool vec = w.vec_ok(in);
#pragma unroll
  for (int r = 0; r < RB; ++r)
    if (r < nr) vec = vec && (reinterpret_cast<uintptr_t>(xr[r]) % 16 == 0);
  if (vec) {
    // Unrolled so that several weight loads are in flight per lane before the first FMA (a
    // decode GEMV is bound by memory latency × loads in flight); the FMA order is unchanged.
    constexpr int kUnroll = RB == 1 ? 8 : RB == 2 ? 4 : 2;
#pragma unroll kUnroll
    for (int base = lane * V; base < in; base += kWarp * V) {
      float wf[V];
      w.load(base, wf);
#pragma unroll
      for (int r = 0; r < RB; ++r) {
        if (r < nr) {
          float xf[V];
          load_x<V, kCg>(xr[r] + base, xf);
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
          const float wv = w.value(i);
#pragma unroll
          for (int r = 0; r < RB; ++r)
            if (r < nr) acc[r] = __fmaf_rn(kCg ? __ldcg(xr[r] + i) : xr[r][i], wv, acc[r]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < RB; ++r) acc[r] = warp_sum(acc[r]);
}

// acc[q][r] = x[r]·w[q] for NW weight rows of the same length and r < nr (nr ≤ RB): each activation
// load serves NW weight rows (dot_rows reads the activations once per weight row, NW times the
// L1 traffic for rows of several activations). Each sum is dot_rows<Row, RB>'s sequence: the same
// bits. Rows or activations off the vector path take NW dot_rows calls.
template <typename Row, int RB, int NW>
__device__ __forceinline__ void dot_rows_multi(const float* const (&xr)[RB], int nr, const Row (&w)[NW], int in,
                                               float (&acc)[NW][RB]) {
  constexpr int V = Row::kV;
  const int lane = threadIdx.x % kWarp;
  bool vec = true;
#pragma unroll
  for (int q = 0; q < NW; ++q) vec = vec && w[q].vec_ok(in);
#pragma unroll
  for (int r = 0; r < RB; ++r)
    if (r < nr) vec = vec && (reinterpret_cast<uintptr_t>(xr[r]) % 16 == 0);
  if (!vec) {
#pragma unroll
    for (int q = 0; q < NW; ++q) dot_rows<Row, RB>(xr, nr, w[q], in, acc[q]);
    return;
  }
#pragma unroll
  for (int q = 0; q < NW; ++q)
#pragma unroll
    for (int r = 0; r < RB; ++r) acc[q][r] = 0.0f;
  constexpr int kUnroll = RB <= 4 ? 2 : 1;
#pragma unroll kUnroll
  for (int base = lane * V; base < in; base += kWarp * V) {
    float wf[NW][V];
#pragma unroll
    for (int q = 0; q < NW; ++q) w[q].load(base, wf[q]);
#pragma unroll
    for (int r = 0; r < RB; ++r) {
      if (r < nr) {
        float xf[V];
        load_x<V>(xr[r] + base, xf);
#pragma unroll
        for (int q = 0; q < NW; ++q)
#pragma unroll
          for (int v = 0; v < V; ++v) acc[q][r] = __fmaf_rn(xf[v], wf[q][v], acc[q][r]);
      }
    }
  }
#pragma unroll
  for (int q = 0; q < NW; ++q)
#pragma unroll
    for (int r = 0; r < RB; ++r) acc[q][r] = warp_sum(acc[q][r]);
}

// acc_a = x·wa and acc_b = x·wb for one row and two weight rows of the same length, in one loop
// (twice the loads in flight of two dot_rows calls); each sum is dot_rows<Row, 1>'s sequence.
template <typename Row>
__device__ __forceinline__ void dot_rows_pair(const float* x, const Row& wa, const Row& wb, int in, float& acc_a,
                                              float& acc_b) {
  constexpr int V = Row::kV;
  const int lane = threadIdx.x % kWarp;
  if (!(wa.vec_ok(in) && wb.vec_ok(in) && reinterpret_cast<uintptr_t>(x) % 16 == 0)) {
    const float* const xr[1] = {x};
    float a1[1], b1[1];
    dot_rows<Row, 1>(xr, 1, wa, in, a1);
    dot_rows<Row, 1>(xr, 1, wb, in, b1);
    acc_a = a1[0], acc_b = b1[0];
    return;
  }
  float sa = 0.0f, sb = 0.0f;
#pragma unroll 4
  for (int base = lane * V; base < in; base += kWarp * V) {
    float wfa[V], wfb[V], xf[V];
    wa.load(base, wfa);
    wb.load(base, wfb);
    load_x<V>(x + base, xf);
#pragma unroll
    for (int v = 0; v < V; ++v) sa = __fmaf_rn(xf[v], wfa[v], sa);
#pragma unroll
    for (int v = 0; v < V; ++v) sb = __fmaf_rn(xf[v], wfb[v], sb);
  }
  acc_a = warp_sum(sa);
  acc_b = warp_sum(sb);
}

}  // namespace memra::cuda
