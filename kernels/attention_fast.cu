// cuda-fast core attention on tensor cores (TF32 WMMA): the exact kernels (attention.cu) compute a
// 2048-row prefill's CSA attention as 2048 × 64 heads × 640 keys × 512 dims of f32 FMAs, twice
// (logits, outputs): ~172 G FMA, 8.6 ms on an H200, bound by the f32 FMA rate (bench/NOTES.md,
// round 4). Here a block takes one row and 32 heads (MQA: the heads share the keys), so both
// products are matrix products: S = Q·Kᵀ [32 × keys] and O = P·K [32 × d], on tensor cores.
//
//   pass 1  S tile (16 heads × 16 keys) per warp, over key tiles of 64 and dim chunks of DC;
//           Q staged once, K chunk by chunk in shared memory (rows past H or past the keys are
//           0), the next chunk loaded into registers while the tensor cores take this one
//   softmax one warp per head row: mx = max(sink, logits), p = exp(l − mx) / (exp(sink − mx) + Σ p)
//   pass 2  O (16 heads × d/4) per warp, keys staged 16 at a time with all d dims (prefetched alike)
//   output  each 16 × 16 tile through a per-warp scratch (heads ≥ H are not written), then the
//           inverse RoPE of the last 2·half dims in place
//
// Not exact: TF32 rounds q, k and p to 10 mantissa bits (|δ| ≤ 2⁻¹¹), the sums are f32 in the
// tensor cores' order. The ops test derives the band from that (test_attention_fast). The exact
// kernels keep the rows this one does not take (attention_fast_ok).
//
//   grid (rows, ceil(H / 32))   block 256   dynamic smem: S, Q, stage (fast_smem) + max_keys·8 bytes
#include <mma.h>

#include "attention_keys.cuh"
#include "common.cuh"
#include "device_caps.h"
#include "launch.cuh"
#include "ops.h"
#include "rope.cuh"

namespace memra::cuda {

namespace {

using namespace nvcuda;

constexpr int kBlock = 256;
constexpr int kHeads = 32;       // heads per block: two 16-row m-tiles
constexpr int kKeyTile = 64;     // pass 1: keys per tile (four 16-key n-tiles)
constexpr int kPass2Keys = 16;   // pass 2: keys staged at once
// Shared-memory rows are padded by 8 floats: with a row stride of a multiple of 128 bytes, a
// fragment's 16 rows fall on the same banks (16-way conflicts); 8 floats keep 32-byte alignment.
constexpr int kPad = 8;

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragBcol = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major>;
using FragBrow = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;

template <typename F>
__device__ __forceinline__ void to_tf32(F& f) {
#pragma unroll
  for (int t = 0; t < f.num_elements; ++t) f.x[t] = wmma::__float_to_tf32(f.x[t]);
}

int round_up(int v, int m) { return (v + m - 1) / m * m; }
__host__ __device__ constexpr int dim_chunk(int d) { return d >= 128 ? 128 : 64; }
// Staging floats: pass 1's K chunk, pass 2's 16 keys, or the 8 warps' 16 × 16 output scratch.
int stage_floats(int d) {
  const int p1 = kKeyTile * (dim_chunk(d) + kPad), p2 = kPass2Keys * (d + kPad), out = 8 * 256;
  return p1 > p2 ? (p1 > out ? p1 : out) : (p2 > out ? p2 : out);
}
int s_stride(int max_keys) { return round_up(max_keys, kKeyTile) + kPad; }
size_t fast_smem(int max_keys, int d) {
  return (static_cast<size_t>(kHeads) * s_stride(max_keys) + static_cast<size_t>(kHeads) * (d + kPad) + stage_floats(d)) *
             sizeof(float) +
         static_cast<size_t>(max_keys) * sizeof(float*);
}

// ND = d / 64: each warp's pass-2 output is ND tiles of 16 dims (a quarter of d).
template <int ND>
__global__ void __launch_bounds__(kBlock) attention_fast_kernel(AttentionArgs a, int s_ld, int stage_n) {
  pdl_begin();
  constexpr int d = ND * 64, DC = dim_chunk(d), DCP = DC + kPad, DP = d + kPad;
  extern __shared__ __align__(128) unsigned char smem[];
  float* S = reinterpret_cast<float*>(smem);                                    // [kHeads][s_ld] (s_ld: the padded row stride)
  float* Qs = S + kHeads * s_ld;                                               // [kHeads][DP]
  float* stage = Qs + kHeads * DP;                                              // [stage_n]
  const float** keys = reinterpret_cast<const float**>(stage + stage_n);        // [max_keys]
  __shared__ int s_ncmp;

  const int row = blockIdx.x, h0 = blockIdx.y * kHeads;
  const int nh = min(kHeads, a.H - h0);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t pos = a.row_pos[row];
  const float* q = a.q + (static_cast<int64_t>(row) * a.H + h0) * d;
  for (int i = threadIdx.x; i < kHeads * d / 4; i += kBlock) {  // Q once (heads past H: 0)
    const int hh = i / (d / 4), c = (i % (d / 4)) * 4;
    const float4 v = hh < nh ? *reinterpret_cast<const float4*>(q + static_cast<int64_t>(hh) * d + c)
                             : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    *reinterpret_cast<float4*>(Qs + hh * DP + c) = v;
  }
  const int n_keys = key_table(a, row, keys, &s_ncmp);  // its barriers also publish Qs

  // Pass 1: this warp's 16 × 16 tile (m, n) of every 64-key tile, chunk it = (tile, dim chunk) after
  // chunk; each thread loads chunk it+1 into registers while the warps multiply chunk it.
  {
    constexpr int NC = d / DC, NL = kKeyTile * DC / 4 / kBlock;
    const int m = warp / 4, n = warp % 4, total = (n_keys + kKeyTile - 1) / kKeyTile * NC;
    float* Kc = stage;  // [kKeyTile][DCP]
    float4 next[NL];
    auto fetch = [&](int it) {
      const int kt = it / NC, dc = (it % NC) * DC;
#pragma unroll
      for (int u = 0; u < NL; ++u) {
        const int i = threadIdx.x + u * kBlock, j = i / (DC / 4), c = (i % (DC / 4)) * 4, key = kt * kKeyTile + j;
        next[u] = key < n_keys ? *reinterpret_cast<const float4*>(keys[key] + dc + c) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
    };
    if (total > 0) fetch(0);
    FragC acc;
    for (int it = 0; it < total; ++it) {
      __syncthreads();  // the previous chunk's fragments are loaded
#pragma unroll
      for (int u = 0; u < NL; ++u) {
        const int i = threadIdx.x + u * kBlock;
        *reinterpret_cast<float4*>(Kc + (i / (DC / 4)) * DCP + (i % (DC / 4)) * 4) = next[u];
      }
      __syncthreads();
      if (it + 1 < total) fetch(it + 1);
      const int kt = it / NC, dc = (it % NC) * DC;
      if (dc == 0) wmma::fill_fragment(acc, 0.0f);
#pragma unroll 4
      for (int ks = 0; ks < DC; ks += 8) {
        FragA fa;
        FragBcol fb;  // Kᵀ: element (dim, key) at Kc[key·DCP + dim]
        wmma::load_matrix_sync(fa, Qs + m * 16 * DP + dc + ks, DP);
        wmma::load_matrix_sync(fb, Kc + n * 16 * DCP + ks, DCP);
        to_tf32(fa);
        to_tf32(fb);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      if (dc + DC == d) wmma::store_matrix_sync(S + m * 16 * s_ld + kt * kKeyTile + n * 16, acc, s_ld, wmma::mem_row_major);
    }
  }
  __syncthreads();

  // Softmax with the sink, one warp per head row; keys past n_keys (to pass 2's stride) get p = 0.
  const int n2 = (n_keys + kPass2Keys - 1) / kPass2Keys * kPass2Keys;
  for (int hh = warp; hh < kHeads; hh += kBlock / kWarp) {
    float* lg = S + hh * s_ld;
    const float sink = hh < nh ? a.sink[h0 + hh] : 0.0f;
    float mx = sink;
    for (int j = lane; j < n_keys; j += kWarp) mx = fmaxf(mx, lg[j] * a.scale);
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int j = lane; j < n_keys; j += kWarp) {
      const float p = expf(lg[j] * a.scale - mx);
      lg[j] = p;
      sum += p;
    }
    const float inv = 1.0f / (expf(sink - mx) + warp_sum(sum));
    for (int j = lane; j < n2; j += kWarp) lg[j] = j < n_keys ? lg[j] * inv : 0.0f;
  }

  // Pass 2: O rows m·16 … m·16+15, dims dq·d/4 … (dq+1)·d/4 − 1.
  const int m = warp / 4, dq = warp % 4;
  FragC o[ND];
#pragma unroll
  for (int t = 0; t < ND; ++t) wmma::fill_fragment(o[t], 0.0f);
  constexpr int NL2 = kPass2Keys * d / 4 / kBlock;  // = ND
  float4 next2[NL2];
  auto fetch2 = [&](int c0) {
#pragma unroll
    for (int u = 0; u < NL2; ++u) {
      const int i = threadIdx.x + u * kBlock, key = c0 + i / (d / 4), c = (i % (d / 4)) * 4;
      next2[u] = key < n_keys ? *reinterpret_cast<const float4*>(keys[key] + c) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  };
  if (n2 > 0) fetch2(0);
  for (int c0 = 0; c0 < n2; c0 += kPass2Keys) {
    __syncthreads();  // softmax done / the previous keys' fragments are loaded
#pragma unroll
    for (int u = 0; u < NL2; ++u) {
      const int i = threadIdx.x + u * kBlock;
      *reinterpret_cast<float4*>(stage + (i / (d / 4)) * DP + (i % (d / 4)) * 4) = next2[u];
    }
    __syncthreads();
    if (c0 + kPass2Keys < n2) fetch2(c0 + kPass2Keys);
#pragma unroll
    for (int ks = 0; ks < kPass2Keys; ks += 8) {
      FragA fa;  // P: element (head, key) at S[head·s_ld + key]
      wmma::load_matrix_sync(fa, S + m * 16 * s_ld + c0 + ks, s_ld);
      to_tf32(fa);
#pragma unroll
      for (int t = 0; t < ND; ++t) {
        FragBrow fb;  // K: element (key, dim) at stage[key·DP + dim]
        wmma::load_matrix_sync(fb, stage + ks * DP + dq * (d / 4) + t * 16, DP);
        to_tf32(fb);
        wmma::mma_sync(o[t], fa, fb, o[t]);
      }
    }
  }
  __syncthreads();  // the stage becomes the warps' output scratch

  float* scratch = stage + warp * 256;
  float* orow = a.o + static_cast<int64_t>(row) * a.H * d;
#pragma unroll
  for (int t = 0; t < ND; ++t) {
    wmma::store_matrix_sync(scratch, o[t], 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += kWarp) {
      const int hh = m * 16 + e / 16;
      if (hh < nh) orow[static_cast<int64_t>(h0 + hh) * d + dq * (d / 4) + t * 16 + e % 16] = scratch[e];
    }
    __syncwarp();
  }
  __syncthreads();  // the block's outputs are written (global writes are visible to the block after it)
  for (int t = threadIdx.x; t < nh * a.half; t += kBlock) {
    const int u = t / a.half, i = t % a.half;
    rope_pair(orow + static_cast<int64_t>(h0 + u) * d + (d - 2 * a.half) + 2 * i, a.inv_freq[i], static_cast<int32_t>(pos), -1.0f);
  }
}

}  // namespace

bool attention_fast_ok(const AttentionArgs& a) {
  const int nd = a.d / 64;
  if (a.d % 64 != 0 || !(nd == 1 || nd == 2 || nd == 4 || nd == 8)) return false;
  DeviceCaps caps;
  if (current_device_caps(caps) != cudaSuccess) return false;
  return fast_smem(a.max_keys, a.d) + 1024 <= static_cast<size_t>(caps.smem_optin);
}

cudaError_t attention_fast(const AttentionArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return cudaSuccess;
  if (!attention_fast_ok(a)) return attention(a, stream);
  if (!a.seqs || !a.row_seq || !a.row_pos || !a.q || !a.kv || !a.sink || !a.o || a.rows < 0 || a.H < 1 ||
      a.H > 65535 * kHeads || a.W < 1 || a.max_keys < 1 || a.half < 0 || 2 * a.half > a.d ||
      (a.half > 0 && !a.inv_freq) || (a.kind == AttnKind::kCSA && (!a.selected || a.K < 1)) ||
      (a.kind != AttnKind::kSliding && a.m < 1))
    return cudaErrorInvalidValue;
  const int s_ld = s_stride(a.max_keys), stage_n = stage_floats(a.d);
  const size_t smem = fast_smem(a.max_keys, a.d);
  auto launch_nd = [&](auto kernel) {
    cudaError_t e = allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
    if (e != cudaSuccess) return e;
    return launch(kernel, dim3(a.rows, (a.H + kHeads - 1) / kHeads), kBlock, smem, stream, a, s_ld, stage_n);
  };
  switch (a.d / 64) {
    case 1: return launch_nd(attention_fast_kernel<1>);
    case 2: return launch_nd(attention_fast_kernel<2>);
    case 4: return launch_nd(attention_fast_kernel<4>);
    default: return launch_nd(attention_fast_kernel<8>);
  }
}

}  // namespace memra::cuda
