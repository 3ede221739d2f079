// mHC (docs/architecture.md §3.2) on the GPU: hc_pre (mix, Sinkhorn, pre-weighted collapse), hc_post
// (the transposed combine) and the hc head. A row's result never depends on the launch's row count:
//  - sum of squares over nD: thread-strided f32 fma chain + block_sum<256>;
//  - each mix value over nD = n·D inputs (the normalised stream values x·r, rounded first, as the
//    CPU does, times fn): split into fixed slices of kSlice inputs; slice s of value i is one warp's
//    lane-strided (lane l takes l, l+32, …) fma chain + warp_sum; the slices' partials are then
//    added s-ascending by one thread. The split is a constant, so the order is a function of nD
//    only; it spreads a decode row's 1.5 MB of fn (V4-Flash: 24 × 16384 f32) over rows × slices
//    blocks instead of one block per row, which one SM streamed at a fraction of HBM speed;
//  - Sinkhorn: one thread per matrix element, each sum in the CPU's order (f32 instead of double);
//  - the collapse / combine: per element, a fixed j-ascending fma chain;
//  - hc_post_moe: hc_post whose y is the MoE combine (moe_combine.cuh: combine_kernel's slot-ascending
//    mul-then-add chain + shared), computed per element where hc_post would load it: one dependent
//    launch fewer per layer on the decode path, and y is never stored. The attention's hc_post runs
//    the same way in the exact linear's epilogue (LinearArgs::hc, mhc_post.cuh).
//
//   hc_mix       grid (rows, slices)          block 256   partials [rows, M, slices]
//                (rows ≥ 16: hc_rms once per row, then grid (rows / 16, slices), 16 rows a block;
//                M = 8 or 24: hc_mix_rows4, 4 rows × M / 8 chains a lane side by side)
//   hc_pre       grid rows                    block 256   (n ≤ kMaxHc), then the sublayer's norm of x
//                (comb_apart with the norm, n ≤ 4: hc_pre_norm_kernel, the collapse's loads beside the mix's)
//                (rows ≥ 64 with the norm, n ≤ 4: hc_pre_norm_kernel, then hc_comb's rows form)
//                (cuda-fast, HcPreArgs::mix_given: the mix a cuBLAS TF32 GEMM made, no partials; mix_unscaled:
//                hc_pre_norm_kernel<true> scales it by the row's rms from the stream values it holds, else
//                hc_mix_finish first, grid rows)
//   hc_comb      grid rows                    block 256   the Sinkhorn alone (HcPreArgs::comb_apart)
//                (rows ≥ 64, n·n ≤ 32: grid rows / 8, a warp a row)
//   hc_post      grid ceil(rows·D / 256)      block 256
//   hc_post_moe  grid ceil(rows·D / 256)      block 256   (eo [rows·k, D], ew [rows, k], shared [rows, D])
//                (rows ≥ 64, n = 4: hc_post_rows, grid (D / 1024, rows), four elements a thread, either)
//   hc_head      grid out_rows                block 256   (after hc_mix of its M = n values)
#include <cstdint>
#include <initializer_list>

#include "ab_switch.h"
#include "common.cuh"
#include "launch.cuh"
#include "mhc_post.cuh"
#include "moe_combine.cuh"
#include "norm_row.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / kWarp;
constexpr int kMaxMix = (2 + kMaxHc) * kMaxHc;

// rsqrt(mean(X²) + eps) of one row's n·D stream values.
__device__ float stream_rms(const float* Xt, int nD, float eps, float* scratch) {
  // The same thread-strided chain, its loads issued kBatch at a time: a lone block (a decode row)
  // is bound by load latency, not bandwidth (V4-Flash: 64 values per thread, one round trip).
  constexpr int kBatch = 64;
  float ss = 0.0f;
  int i = threadIdx.x;
  for (; i + (kBatch - 1) * kBlock < nD; i += kBatch * kBlock) {
    float v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) v[u] = Xt[i + u * kBlock];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) ss = __fmaf_rn(v[u], v[u], ss);
  }
  for (; i < nD; i += kBlock) ss = __fmaf_rn(Xt[i], Xt[i], ss);
  ss = block_sum<kBlock>(ss, scratch);
  return rms_inverse(ss, nD, eps);
}

// mix[i] = (X·r)·fn[i] for i < M, one warp per value.
__device__ void stream_mix(const float* Xt, int nD, float r, const float* fn, int M, float* mix) {
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  for (int i = warp; i < M; i += kWarps) {
    const float* f = fn + static_cast<int64_t>(i) * nD;
    float acc = 0.0f;
    for (int e = lane; e < nD; e += kWarp) acc = __fmaf_rn(Xt[e] * r, f[e], acc);
    acc = warp_sum(acc);
    if (lane == 0) mix[i] = acc;
  }
}

constexpr int kSlice = 512;  // inputs per mix slice (a constant: the split never depends on rows)

int slices_of(int nD) { return (nD + kSlice - 1) / kSlice; }

// partial[t, i, s] = Σ over slice s of (X·r)·fn[i] for the M values i, row t = rows_idx[blockIdx.x]
// (or blockIdx.x), slice s = blockIdx.y. Every block recomputes the row's r (the same bits).
__global__ void __launch_bounds__(kBlock) hc_mix_kernel(const float* X, const int32_t* rows_idx, int nD, float eps,
                                                        const float* fn, int M, float* partial, const float* rms) {
  const int s = blockIdx.y, S = gridDim.y;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int e0 = s * kSlice, e1 = min(nD, e0 + kSlice);
  // The warp's values i = warp, warp + kWarps, … go kValBatch at a time, all their weights loaded
  // before the first chain: one round trip to memory per batch instead of one per value. The first
  // batch (V4-Flash's M = 24: all of them) is loaded before pdl_begin(): fn is a weight.
  constexpr int kPer = kSlice / kWarp;
  constexpr int kValBatch = 4;
  float fv[kValBatch][kPer];
  const auto load_fn = [&](int i0) {
#pragma unroll
    for (int b = 0; b < kValBatch; ++b) {
      const int i = i0 + b * kWarps;
      const float* f = fn + static_cast<int64_t>(i < M ? i : 0) * nD;
#pragma unroll
      for (int t = 0; t < kPer; ++t) {
        const int e = e0 + lane + t * kWarp;
        fv[b][t] = i < M && e < e1 ? f[e] : 0.0f;
      }
    }
  };
  load_fn(warp);
  pdl_begin();
  __shared__ float scratch[kWarps];
  const int t = rows_idx ? rows_idx[blockIdx.x] : blockIdx.x;
  const float* Xt = X + static_cast<int64_t>(t) * nD;
  const float r = rms ? rms[blockIdx.x] : stream_rms(Xt, nD, eps, scratch);
  // The lane's kPer stream values x·r are loaded once for all the warp's mix values, and each
  // value's kPer weights are loaded before its chain (e ascending, as the one-load-at-a-time loop).
  float xr[kPer];
#pragma unroll
  for (int t = 0; t < kPer; ++t) {
    const int e = e0 + lane + t * kWarp;
    xr[t] = e < e1 ? Xt[e] * r : 0.0f;
  }
  for (int i0 = warp; i0 < M; i0 += kWarps * kValBatch) {
    if (i0 != warp) load_fn(i0);
#pragma unroll
    for (int b = 0; b < kValBatch; ++b) {
      const int i = i0 + b * kWarps;
      if (i >= M) break;  // warp-uniform
      float acc = 0.0f;
#pragma unroll
      for (int t = 0; t < kPer; ++t)
        if (e0 + lane + t * kWarp < e1) acc = __fmaf_rn(xr[t], fv[b][t], acc);
      acc = warp_sum(acc);
      if (lane == 0) partial[(static_cast<int64_t>(blockIdx.x) * M + i) * S + s] = acc;
    }
  }
}

// hc_mix_kernel for a many-row round whose rms is computed once per row (hc_rms_kernel): kMixRows
// rows a block, so that a slice's fn values are loaded once for all of them (one block per row and
// slice re-read the 48 KB slice per row: ~0.8 ms per hc_pre of a 2048-row prefill). The rows'
// stream values come in with one round trip, times r as hc_mix_kernel makes them, stored so that a
// lane's kPer values of a row are contiguous (float4 reads; +4 floats a lane: no bank conflicts),
// and the partials of kMixGroup rows × kValBatch values go through one warp_sum_many (ncu, run
// 121: 311 us issue-bound, a warp_sum and the x·r products per (row, value)). Each (row, value,
// slice) partial is hc_mix_kernel's chain (lane-strided, e ascending, from +0) and butterfly: the
// same bits. Elements past the slice's end are staged as 0 with fn 0: fma(0, 0, acc) = acc.
constexpr int kMixRows = 16;
constexpr int kMixGroup = 4;

// A mix block's kMixRows rows of its slice [e0, e0 + n_e), times their rms (x·r as hc_mix_kernel makes
// it), every load in flight before the first store: put(row, e, x·r), 0 past the rows or the
// slice. Thread t takes elements t and t + 256 of every row.
template <typename Put>
__device__ __forceinline__ void stage_mix_rows(const float* X, int nD, int e0, int n_e, const float* rms, int r0, int nr, Put put) {
  constexpr int kStage = kMixRows * kSlice / kBlock;
  static_assert(kSlice == 2 * kBlock, "staging: thread t takes elements t and t + 256 of every row");
  float v[kStage], rv[kMixRows];
#pragma unroll
  for (int rr = 0; rr < kMixRows; ++rr) rv[rr] = rr < nr ? rms[r0 + rr] : 0.0f;
#pragma unroll
  for (int u = 0; u < kStage; ++u) {
    const int rr = u / 2, e = threadIdx.x + (u % 2) * kBlock;
    v[u] = rr < nr && e < n_e ? X[static_cast<int64_t>(r0 + rr) * nD + e0 + e] : 0.0f;
  }
#pragma unroll
  for (int u = 0; u < kStage; ++u) {
    const int rr = u / 2, e = threadIdx.x + (u % 2) * kBlock;
    put(rr, e, rr < nr && e < n_e ? v[u] * rv[rr] : 0.0f);
  }
}

__global__ void __launch_bounds__(kBlock, 2) hc_mix_rows_kernel(const float* X, int rows, int nD, const float* fn, int M,
                                                                float* partial, const float* rms) {
  constexpr int kPer = kSlice / kWarp;
  constexpr int kValBatch = 4;
  static_assert(kPer % 4 == 0, "a lane's staged values read by float4");
  const int s = blockIdx.y, S = gridDim.y;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int e0 = s * kSlice, e1 = min(nD, e0 + kSlice), n_e = e1 - e0;
  pdl_begin();
  __shared__ __align__(16) float xs[kMixRows][kWarp][kPer + 4];  // x·r of (row, e = lane + 32·t) at [row][lane][t]
  const int r0 = blockIdx.x * kMixRows, nr = min(kMixRows, rows - r0);
  stage_mix_rows(X, nD, e0, n_e, rms, r0, nr, [&](int rr, int e, float xr) { xs[rr][e % kWarp][e / kWarp] = xr; });
  __syncthreads();
  for (int i0 = warp; i0 < M; i0 += kWarps * kValBatch) {
    const int nb = min(kValBatch, (M - i0 + kWarps - 1) / kWarps);  // values i0 + b·kWarps < M
    float fv[kValBatch][kPer];
#pragma unroll
    for (int b = 0; b < kValBatch; ++b) {
      const float* f = fn + static_cast<int64_t>(b < nb ? i0 + b * kWarps : 0) * nD;
#pragma unroll
      for (int t = 0; t < kPer; ++t) {
        const int e = e0 + lane + t * kWarp;
        fv[b][t] = b < nb && e < e1 ? f[e] : 0.0f;
      }
    }
    for (int g = 0; g < nr; g += kMixGroup) {
      float p[kMixGroup * kValBatch];  // (row g + q, value b) at q·kValBatch + b
#pragma unroll
      for (int q = 0; q < kMixGroup; ++q) {
        float xr[kPer];
        const float4* src = reinterpret_cast<const float4*>(&xs[min(g + q, kMixRows - 1)][lane][0]);
#pragma unroll
        for (int k = 0; k < kPer / 4; ++k) {
          const float4 f4 = src[k];
          xr[4 * k] = f4.x, xr[4 * k + 1] = f4.y, xr[4 * k + 2] = f4.z, xr[4 * k + 3] = f4.w;
        }
#pragma unroll
        for (int b = 0; b < kValBatch; ++b) {
          float acc = 0.0f;
          if (b < nb)
#pragma unroll
            for (int t = 0; t < kPer; ++t) acc = __fmaf_rn(xr[t], fv[b][t], acc);
          p[q * kValBatch + b] = acc;
        }
      }
      constexpr int kSums = kMixGroup * kValBatch;
      const float sum = warp_sum_many<kSums>(p);  // slot j on lanes j·32/kSums …
      const int j = lane / (kWarp / kSums), q = j / kValBatch, b = j % kValBatch;
      if (lane % (kWarp / kSums) == 0 && g + q < nr && b < nb)
        partial[(static_cast<int64_t>(r0 + g + q) * M + i0 + b * kWarps) * S + s] = sum;
    }
  }
}

// hc_mix_rows_kernel's operations for M = 8·VPW values (each warp VPW of them) in another order:
// a lane's chains for 4 rows × VPW values go side by side, element by element, one 16-byte shared
// load giving the 4 rows' x·r at an element: 4·VPW independent chains where the per-row loop ran
// VPW of them (run 150's ncu: 47% of its compute phase's samples waiting on the previous FMA, 57 M
// instructions for 25 M FMAs). Each (row, value, slice) chain is still lane-strided, e ascending,
// from +0, then warp_sum_many's butterfly: the same bits.
constexpr int kMixGroups = kMixRows / 4;

template <int VPW>
__global__ void __launch_bounds__(kBlock, 2) hc_mix_rows4_kernel(const float* X, int rows, int nD, const float* fn, int M,
                                                                 float* partial, const float* rms) {
  constexpr int kPer = kSlice / kWarp;
  constexpr int kLane = kPer + 1;  // float4s a lane holds, padded: the lanes' rows 16 bytes apart in the banks
  constexpr int kSums = VPW == 1 ? 4 : 16;  // 4·VPW chains, a power of two for warp_sum_many
  static_assert(4 * VPW <= kSums, "the sums' slots");
  const int s = blockIdx.y, S = gridDim.y;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int e0 = s * kSlice, e1 = min(nD, e0 + kSlice), n_e = e1 - e0;
  float fv[VPW][kPer];  // a weight: loaded before pdl_begin
#pragma unroll
  for (int b = 0; b < VPW; ++b) {
    const float* f = fn + static_cast<int64_t>(warp + b * kWarps) * nD;
#pragma unroll
    for (int t = 0; t < kPer; ++t) {
      const int e = e0 + lane + t * kWarp;
      fv[b][t] = e < e1 ? f[e] : 0.0f;
    }
  }
  pdl_begin();
  __shared__ float4 xs4[kMixGroups][kWarp][kLane];  // rows 4g … 4g+3 of element lane + 32t at [g][lane][t]
  const int r0 = blockIdx.x * kMixRows, nr = min(kMixRows, rows - r0);
  stage_mix_rows(X, nD, e0, n_e, rms, r0, nr,
                 [&](int rr, int e, float xr) { reinterpret_cast<float*>(&xs4[rr / 4][e % kWarp][e / kWarp])[rr % 4] = xr; });
  __syncthreads();
  for (int g = 0; g < kMixGroups && 4 * g < nr; ++g) {
    float acc[kSums];  // (row 4g + q, value warp + b·8) at q·VPW + b
#pragma unroll
    for (int j = 0; j < kSums; ++j) acc[j] = 0.0f;
#pragma unroll
    for (int t = 0; t < kPer; ++t) {
      const float4 x = xs4[g][lane][t];
      const float xq[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int b = 0; b < VPW; ++b) acc[q * VPW + b] = __fmaf_rn(xq[q], fv[b][t], acc[q * VPW + b]);
    }
    const float sum = warp_sum_many<kSums>(acc);  // slot j on lanes j·32/kSums …
    const int j = lane / (kWarp / kSums), q = j / VPW, b = j % VPW, row = 4 * g + q;
    if (lane % (kWarp / kSums) == 0 && j < 4 * VPW && row < nr)
      partial[(static_cast<int64_t>(r0 + row) * M + warp + b * kWarps) * S + s] = sum;
  }
}

// rms[t] = stream_rms of row t, once per row: many-row rounds (a prefill) then spare each of the
// row's slice blocks re-reading its n·D values (same function, same bits).
__global__ void __launch_bounds__(kBlock) hc_rms_kernel(const float* X, int nD, float eps, float* rms) {
  pdl_begin();
  __shared__ float scratch[kWarps];
  const float r = stream_rms(X + static_cast<int64_t>(blockIdx.x) * nD, nD, eps, scratch);
  if (threadIdx.x == 0) rms[blockIdx.x] = r;
}

// hc_mix_finish: row blockIdx.x's M mix values times its stream_rms.
__global__ void __launch_bounds__(kBlock) hc_mix_finish_kernel(const float* X, int nD, float eps, float* mix, int M) {
  pdl_begin();
  __shared__ float scratch[kWarps];
  const float r = stream_rms(X + static_cast<int64_t>(blockIdx.x) * nD, nD, eps, scratch);
  for (int i = threadIdx.x; i < M; i += kBlock) mix[static_cast<int64_t>(blockIdx.x) * M + i] *= r;
}

// mix[i] from the slices' partials, s ascending (one thread per value: i = first, first + stride, …).
__device__ void gather_mix(const float* partial, int row, int M, int S, float* mix, int first = threadIdx.x,
                           int stride = kBlock) {
  constexpr int kBatch = 32;  // loads in flight per thread (a decode row's 32 slices: one round trip); s-ascending
  for (int i = first; i < M; i += stride) {
    const float* p = partial + (static_cast<int64_t>(row) * M + i) * S;
    float acc = 0.0f;
    int s = 0;
    for (; s + kBatch <= S; s += kBatch) {
      float v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) v[u] = p[s + u];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) acc = acc + v[u];
    }
    for (; s < S; ++s) acc = acc + p[s];
    mix[i] = acc;
  }
}

// out[i] = Σ_j w[j]·X[j, i] (j ascending from +0) for i = first, first + stride, … < D, where X is a
// row's n streams [n, D]: hc_pre's collapse (w = pre) and the hc head's (w = its sigmoid mix).
// KU elements per thread go at a time with all their n loads in flight, the last batch masked
// (V4-Flash's 4096 elements: three batches over 224 threads in hc_pre, one over 256 in the head).
template <int KU>
__device__ void collapse_streams(const float* Xt, int n, int D, const float* w, float* out, int first, int stride) {
  for (int i = first; i < D; i += KU * stride) {
    float v[KU][kMaxHc];
#pragma unroll
    for (int u = 0; u < KU; ++u)
#pragma unroll
      for (int j = 0; j < kMaxHc; ++j)
        v[u][j] = j < n && i + u * stride < D ? Xt[static_cast<int64_t>(j) * D + i + u * stride] : 0.0f;
#pragma unroll
    for (int u = 0; u < KU; ++u) {
      float s = 0.0f;
#pragma unroll
      for (int j = 0; j < kMaxHc; ++j)
        if (j < n) s = __fmaf_rn(w[j], v[u][j], s);
      if (i + u * stride < D) out[i + u * stride] = s;
    }
  }
}

// Row t's M mix values into mix[]: from the slices' partials, or (partial null: hc_split off) one
// warp per value over all nD inputs. hc_pre and hc_comb get them the same way, hence the same bits.
__device__ void row_mix(const HcPreArgs& a, const float* partial, int S, int t, float* mix, float* scratch) {
  const int nD = a.n * a.D, M = (2 + a.n) * a.n;
  if (partial) {
    gather_mix(partial, t, M, S, mix);
  } else {
    const float* Xt = a.X + static_cast<int64_t>(t) * nD;
    stream_mix(Xt, nD, stream_rms(Xt, nD, a.norm_eps, scratch), a.fn, M, mix);
  }
}

// The Sinkhorn of row t's mixing logits mix[2n … 2n + n²) into comb[t]: on one warp (n·n ≤ 32, me =
// the lane; the caller's other warps do not call it or run other rows) or on the whole block
// (n > 5: shared memory, barriers; me = threadIdx.x).
// Every row or column sum is taken by each of its elements' threads in the CPU's order (k or j
// ascending, from +0), so each element sees the same operations in the same order as the one
// thread that once ran the whole chain; that thread's dependent divisions took ~60 µs per call on
// an H200 (timeline of a decode step, bench/results/h200-20261201-11).
__device__ void sinkhorn_row(const HcPreArgs& a, const float* mix, int t, int me = threadIdx.x) {
  __shared__ float mat[kMaxHc * kMaxHc];
  const int n = a.n;
  const float eps = a.hc_eps;
  // Element (j, k)'s pass: v /= (its row's or column's sum, in order) + eps. `element` reads the
  // matrix as it stood before the pass (a warp's lanes through shuffles for n ≤ 5, else shared
  // memory between two block barriers).
  const bool in_warp = n * n <= kWarp;
  const bool mine = me < n * n;
  const int j = mine ? me / n : 0, k = mine ? me % n : 0;
  float v = 0.0f;
  auto element = [&](int jj, int kk) {
    return in_warp ? __shfl_sync(0xffffffffu, v, (jj * n + kk) % kWarp) : mat[jj * n + kk];
  };
  auto publish = [&] {  // the shared-memory form: every thread's v visible to the block
    if (in_warp) return;
    __syncthreads();
    if (mine) mat[me] = v;
    __syncthreads();
  };
  // A row's (or column's) kMaxHc elements read all at once (matrix indices stay below kMaxHc²
  // for any n ≤ kMaxHc), then the first n added k (or j) ascending from +0: the n shuffles of a sum
  // are issued back to back instead of one per loop trip. The 40 passes of a 20-iteration Sinkhorn
  // are a dependent chain, which the row's collapse runs beside.
  auto row_sum = [&] {
    float e[kMaxHc];
#pragma unroll
    for (int kk = 0; kk < kMaxHc; ++kk) e[kk] = element(j, kk);
    float s = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kMaxHc; ++kk)
      if (kk < n) s += e[kk];
    return s;
  };
  auto col_sum = [&] {
    float e[kMaxHc];
#pragma unroll
    for (int jj = 0; jj < kMaxHc; ++jj) e[jj] = element(jj, k);
    float s = 0.0f;
#pragma unroll
    for (int jj = 0; jj < kMaxHc; ++jj)
      if (jj < n) s += e[jj];
    return s;
  };
  if (mine) v = mix[2 * n + j * n + k] * a.scale[2] + a.base[2 * n + j * n + k];
  publish();
  float mx = -INFINITY;  // row softmax of the mixing logits, then + eps
  for (int kk = 0; kk < n; ++kk) mx = fmaxf(mx, element(j, kk));
  v = expf(v - mx);
  publish();
  v = v / row_sum() + eps;
  for (int it = 0; it < a.iters; ++it) {  // column norm; then (rows, columns) iters-1 times
    if (it > 0) {
      publish();
      const float s = row_sum();
      v /= s + eps;
    }
    publish();
    const float s = col_sum();
    v /= s + eps;
  }
  if (mine) a.comb[static_cast<int64_t>(t) * n * n + me] = v;
}

// Row t's pre weights into pre[] and its post weights into a.post (the Sinkhorn's comb:
// sinkhorn_row), threads 0 … n−1; the caller's barrier before pre[] is read.
__device__ __forceinline__ void pre_post_weights(const HcPreArgs& a, const float* mix, int t, float* pre) {
  const int n = a.n;
  if (threadIdx.x < n) {
    const int j = threadIdx.x;
    pre[j] = sigmoid_f(mix[j] * a.scale[0] + a.base[j]) + a.hc_eps;
    a.post[static_cast<int64_t>(t) * n + j] = 2.0f * sigmoid_f(mix[n + j] * a.scale[1] + a.base[n + j]);
  }
}

// hc_pre of row blockIdx.x on the whole block: the mix (from the slices' partials, or computed here
// when partial is null), the Sinkhorn and the collapse into x. Every thread returns (no early exit).
__device__ void hc_pre_row(const HcPreArgs& a, const float* partial, int S) {
  __shared__ float scratch[kWarps];
  __shared__ float mix[kMaxMix];
  __shared__ float pre[kMaxHc];
  const int t = blockIdx.x, n = a.n, D = a.D;
  const float* Xt = a.X + static_cast<int64_t>(t) * n * D;
  row_mix(a, partial, S, t, mix, scratch);
  __syncthreads();
  pre_post_weights(a, mix, t, pre);
  __syncthreads();  // pre[] for the collapse
  // The collapse x[i] = Σ_j pre[j]·X[j, i] (j ascending): with the Sinkhorn in one warp (n·n ≤ 32)
  // the other warps take it meanwhile; each element's chain is the same whichever thread runs it.
  // comb_apart: hc_comb_kernel runs the Sinkhorn on another stream and every thread collapses.
  float* xt = a.x + static_cast<int64_t>(t) * D;
  const bool in_warp = n * n <= kWarp;
  if (a.comb_apart || (in_warp && threadIdx.x >= kWarp)) {
    const int first = a.comb_apart ? 0 : kWarp;
    collapse_streams<8>(Xt, n, D, pre, xt, threadIdx.x - first, kBlock - first);
    return;  // no barrier follows inside the warp form
  }
  sinkhorn_row(a, mix, t);
  if (!in_warp) collapse_streams<8>(Xt, n, D, pre, xt, threadIdx.x, kBlock);
}

// hc_pre of row blockIdx.x, then (norm_weight given) the sublayer's norm of x in the same block:
// norm_rope's body (norm_row.cuh), one dependent launch fewer per sublayer, the same bits.
__global__ void __launch_bounds__(kBlock) hc_pre_kernel(HcPreArgs a, const float* partial, int S) {
  pdl_begin();
  hc_pre_row(a, partial, S);
  if (!a.norm_weight) return;
  __syncthreads();  // x[t] as the block's threads collapsed it
  __shared__ float scratch[kWarps];
  norm_row(a.x + static_cast<int64_t>(blockIdx.x) * a.D, a.D, a.norm_weight, a.norm_eps, scratch);
}

constexpr int kFusedHc = 4;  // streams hc_pre_norm_kernel holds in registers (V4-Flash: hc_mult 4)

// hc_pre_kernel's work for comb_apart with the sublayer's norm (n ≤ kFusedHc, D ≤ kNormBlock ·
// kNormCache): the row's stream values for the collapse and the norm's weights are loaded while the
// mix is gathered (neither depends on it: with the Sinkhorn apart, the collapse waited a round trip
// after the mix and the norm another after the collapse's store), and the collapsed values stay in
// registers for the norm. Thread t takes elements t + 256·u, norm_row's; each element's chain is
// collapse_streams' and the norm is norm_row's own (norm_cached): the same bits as hc_pre_kernel
// (ops mhc compares both with hc_pre then norm_rope).
template <bool kScaleMix>
__global__ void __launch_bounds__(kBlock) hc_pre_norm_kernel(HcPreArgs a, float* partial, int S) {
  static_assert(kBlock == kNormBlock, "norm_row's thread layout");
  const int t = blockIdx.x, n = a.n, D = a.D;
  float wv[kNormCache];  // a weight: read before pdl_begin
#pragma unroll
  for (int u = 0; u < kNormCache; ++u) {
    const int i = threadIdx.x + u * kBlock;
    wv[u] = i < D ? a.norm_weight[i] : 0.0f;
  }
  pdl_begin();
  __shared__ float scratch[kWarps];
  __shared__ float mix[kMaxMix];
  __shared__ float pre[kMaxHc];
  const float* Xt = a.X + static_cast<int64_t>(t) * n * D;
  float xv[kNormCache][kFusedHc];
#pragma unroll
  for (int u = 0; u < kNormCache; ++u)
#pragma unroll
    for (int j = 0; j < kFusedHc; ++j) {
      const int i = threadIdx.x + u * kBlock;
      xv[u][j] = j < n && i < D ? Xt[static_cast<int64_t>(j) * D + i] : 0.0f;
    }
  row_mix(a, partial, S, t, mix, scratch);
  if constexpr (kScaleMix) {
    // The row's rms from the stream values already in registers (a thread's fma chain u, j
    // ascending, block_sum), the given mix times it, written back for the Sinkhorn kernel.
    float ss = 0.0f;
#pragma unroll
    for (int u = 0; u < kNormCache; ++u)
#pragma unroll
      for (int j = 0; j < kFusedHc; ++j) ss = __fmaf_rn(xv[u][j], xv[u][j], ss);
    const float r = rms_inverse(block_sum<kBlock>(ss, scratch), n * D, a.norm_eps);  // its barriers publish mix
    const int M = (2 + n) * n;
    if (threadIdx.x < M) partial[static_cast<int64_t>(t) * M + threadIdx.x] = mix[threadIdx.x] = mix[threadIdx.x] * r;
  }
  __syncthreads();
  pre_post_weights(a, mix, t, pre);
  __syncthreads();
  float v[kNormCache];
#pragma unroll
  for (int u = 0; u < kNormCache; ++u) {
    float c = 0.0f;
#pragma unroll
    for (int j = 0; j < kFusedHc; ++j)
      if (j < n) c = __fmaf_rn(pre[j], xv[u][j], c);
    v[u] = c;
  }
  norm_cached(v, wv, true, a.x + static_cast<int64_t>(t) * D, D, a.norm_eps, scratch);
}

// comb of row blockIdx.x alone (HcPreArgs::comb_apart): row_mix then sinkhorn_row, hc_pre's bits.
__global__ void __launch_bounds__(kBlock) hc_comb_kernel(HcPreArgs a, const float* partial, int S) {
  pdl_begin();
  __shared__ float scratch[kWarps];
  __shared__ float mix[kMaxMix];
  row_mix(a, partial, S, blockIdx.x, mix, scratch);
  __syncthreads();
  if (a.n * a.n <= kWarp && threadIdx.x >= kWarp) return;  // the warp form: warp 0
  sinkhorn_row(a, mix, blockIdx.x);
}

// hc_comb_kernel for many-row rounds (n·n ≤ 32): a warp per row (lanes gather the mix's values from
// the partials, then run the Sinkhorn's elements), 8 rows a block where one block a row left 7
// warps idle behind the 40 dependent passes. The same functions: the same bits.
__global__ void __launch_bounds__(kBlock) hc_comb_rows_kernel(HcPreArgs a, const float* partial, int S) {
  pdl_begin();
  __shared__ float mix[kWarps][kMaxMix];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int t = blockIdx.x * kWarps + warp;
  if (t >= a.rows) return;  // the whole warp; no block barrier follows
  gather_mix(partial, t, (2 + a.n) * a.n, S, mix[warp], lane, kWarp);
  __syncwarp();
  sinkhorn_row(a, mix[warp], t, lane);
}

__global__ void hc_post_kernel(float* X, const float* y, const float* post, const float* comb, int rows, int n, int D) {
  pdl_begin();
  const int64_t total = static_cast<int64_t>(rows) * D;
  for (int64_t id = global_thread(); id < total; id += global_stride()) {
    const int64_t t = id / D;
    const int i = static_cast<int>(id % D);
    hc_post_element(X, y[t * D + i], post, comb, t, i, n, D);
  }
}

// hc_post with y[t, i] = moe_combine's value (moe_combine.cuh, the chain combine_kernel runs),
// computed in place of its load, then + shared.
__global__ void hc_post_moe_kernel(float* X, const float* eo, const float* ew, const float* shared, int k,
                                   const float* post, const float* comb, int rows, int n, int D, const int32_t* eo_rows) {
  pdl_begin();
  const int64_t total = static_cast<int64_t>(rows) * D;
  for (int64_t id = global_thread(); id < total; id += global_stride()) {
    const int64_t t = id / D;
    const int i = static_cast<int>(id % D);
    hc_post_element(X, moe_routed(eo, ew, k, D, t, i, eo_rows) + shared[id], post, comb, t, i, n, D);
  }
}

// hc_post / hc_post_moe for many-row rounds (a prefill) with n = N streams: thread (row blockIdx.y,
// elements i … i + 3) loads the row's comb and post once for four elements and moves X, y, eo and
// shared by float4. Each element's chain is hc_post_element's (and moe_routed's, slot-ascending
// mul-then-add, then + shared): the same bits. The element-wise kernels above reloaded the row's
// n² + n weights per element and divided a 64-bit index by D (run 121: hc_post 128 us at 70% of
// the SMs' issue, 45% of DRAM's rate).
constexpr int kPostRowsN = 4;  // V4-Flash's hc_mult
constexpr int kPostVec = 4;

__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }
// Four bf16 / f16 values as one 8-byte load, widened exactly to f32 (the batched experts' 16-bit outputs).
__device__ __forceinline__ float4 load4(const __nv_bfloat16* p) {
  const uint2 v = *reinterpret_cast<const uint2*>(p);
  float4 r;
  bf16x2_f32(v.x, r.x, r.y), bf16x2_f32(v.y, r.z, r.w);
  return r;
}
__device__ __forceinline__ float4 load4(const __half* p) {
  const uint2 v = *reinterpret_cast<const uint2*>(p);
  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&v.x)), b = __half22float2(*reinterpret_cast<const __half2*>(&v.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ float lane_of(const float4& v, int e) { return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w; }

template <bool kMoe, typename EoT = float>
__global__ void __launch_bounds__(kBlock) hc_post_rows_kernel(float* X, const float* y, const EoT* eo, const float* ew,
                                                              const float* shared, int k, const float* post,
                                                              const float* comb, int D, const int32_t* eo_rows) {
  constexpr int N = kPostRowsN;
  pdl_begin();
  const int64_t t = blockIdx.y;
  const int i = (blockIdx.x * kBlock + threadIdx.x) * kPostVec;
  if (i >= D) return;
  float C[N * N], P[N];
#pragma unroll
  for (int q = 0; q < N * N; ++q) C[q] = comb[t * N * N + q];
#pragma unroll
  for (int q = 0; q < N; ++q) P[q] = post[t * N + q];
  float* Xt = X + t * N * D;
  float4 xs[N];
#pragma unroll
  for (int j = 0; j < N; ++j) xs[j] = load4(Xt + static_cast<int64_t>(j) * D + i);
  float yv[kPostVec];
  if constexpr (kMoe) {
    float routed[kPostVec] = {0.0f, 0.0f, 0.0f, 0.0f};
    constexpr int kSlotBatch = 6;  // V4-Flash's top-6: every slot's loads in flight at once
    for (int s0 = 0; s0 < k; s0 += kSlotBatch) {
      float4 ev[kSlotBatch];
      float wv[kSlotBatch];
#pragma unroll
      for (int u = 0; u < kSlotBatch; ++u) {
        const int sl = s0 + u;
        const int64_t er = eo_rows && sl < k ? static_cast<int64_t>(eo_rows[t * k + sl]) : t * k + sl;
        ev[u] = sl < k ? load4(eo + er * D + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        wv[u] = sl < k ? ew[t * k + sl] : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kSlotBatch; ++u)
        if (s0 + u < k)
#pragma unroll
          for (int e = 0; e < kPostVec; ++e) routed[e] = routed[e] + lane_of(ev[u], e) * wv[u];
    }
    const float4 sh = load4(shared + t * D + i);
#pragma unroll
    for (int e = 0; e < kPostVec; ++e) yv[e] = routed[e] + lane_of(sh, e);
  } else {
    const float4 y4 = load4(y + t * D + i);
#pragma unroll
    for (int e = 0; e < kPostVec; ++e) yv[e] = lane_of(y4, e);
  }
#pragma unroll
  for (int kk = 0; kk < N; ++kk) {
    float out[kPostVec];
#pragma unroll
    for (int e = 0; e < kPostVec; ++e) {
      float acc = 0.0f;
#pragma unroll
      for (int j = 0; j < N; ++j) acc = __fmaf_rn(C[j * N + kk], lane_of(xs[j], e), acc);
      out[e] = P[kk] * yv[e] + acc;
    }
    *reinterpret_cast<float4*>(Xt + static_cast<int64_t>(kk) * D + i) = make_float4(out[0], out[1], out[2], out[3]);
  }
}

__global__ void __launch_bounds__(kBlock) hc_head_kernel(const float* X, const int32_t* rows_idx, int n, int D,
                                                         const float* fn, const float* base, const float* scale,
                                                         float norm_eps, float hc_eps, float* h, const float* partial,
                                                         int S) {
  pdl_begin();
  __shared__ float scratch[kWarps];
  __shared__ float mix[kMaxHc];
  const int out_row = blockIdx.x, nD = n * D;
  const float* Xt = X + static_cast<int64_t>(rows_idx[out_row]) * nD;
  if (partial) {
    gather_mix(partial, out_row, n, S, mix);
  } else {
    const float r = stream_rms(Xt, nD, norm_eps, scratch);
    stream_mix(Xt, nD, r, fn, n, mix);
  }
  __syncthreads();
  if (threadIdx.x < n) mix[threadIdx.x] = sigmoid_f(mix[threadIdx.x] * scale[0] + base[threadIdx.x]) + hc_eps;
  __syncthreads();
  // 16 elements per thread at a time: a loop of one element at a time waited a round trip per
  // element (V4-Flash: 16 of them).
  collapse_streams<16>(Xt, n, D, mix, h + static_cast<int64_t>(out_row) * D, threadIdx.x, kBlock);
}

int elementwise_blocks(int64_t total) {
  const int64_t b = (total + kBlock - 1) / kBlock;
  return static_cast<int>(b < 65535 * 8 ? b : 65535 * 8);
}

}  // namespace

size_t hc_mix_scratch(int rows, int n, int D) {
  return static_cast<size_t>(rows) * (2 + n) * n * slices_of(n * D) + static_cast<size_t>(rows);  // partials, rms
}

// Rows from which the Sinkhorn goes a warp a row (comb_rows) and a prefill's hc_pre takes it after
// its own launch.
constexpr int kCombRowsFrom = 64;

// Rows from which hc_pre computes each row's rms once (hc_rms_kernel) instead of in every slice block
// (each of a row's 32 slice blocks re-reading its 64 KB of V4-Flash streams), and the mix runs
// kMixRows rows a block (hc_mix_rows_kernel). From 64 before run 213 (H100): from 16, each of the
// four sites −11 us at 32 rows, −1 to −2 at 16; from 2, +1 to +3 at 6-8 rows (one launch more).
// MEMRA_CUDA_HC_MIX_FROM=n (A/B timing; the same bits): from n rows.
constexpr int kMixRowsFrom = 16;

int mix_rows_from_setting() {
  static const int from = switch_count("MEMRA_CUDA_HC_MIX_FROM", kMixRowsFrom);
  return from;
}

// MEMRA_CUDA_HC_MIX_ROWS=0 (A/B timing; the same bits): many-row mixes one row a block as before run 118.
bool mix_rows_on() {
  static const bool on = switch_on("MEMRA_CUDA_HC_MIX_ROWS");
  return on;
}

// MEMRA_CUDA_HC_MIX_ROWS4=0 (A/B timing; the same bits): hc_mix_rows_kernel where hc_mix_rows4_kernel
// would run (M = 8 or 24).
bool mix_rows4_on() {
  static const bool on = switch_on("MEMRA_CUDA_HC_MIX_ROWS4");
  return on;
}

// MEMRA_CUDA_HC_PRE_FUSED=0 (A/B timing; the same bits): hc_pre_kernel where hc_pre_norm_kernel would run.
bool pre_norm_fused_on() {
  static const bool on = switch_on("MEMRA_CUDA_HC_PRE_FUSED");
  return on;
}

// MEMRA_CUDA_HC_MIX_FUSED=0 (A/B timing; other bits: the Σx² order): an unscaled given mix scaled by
// hc_mix_finish before hc_pre_norm_kernel instead of inside it.
bool mix_scale_fused_on() {
  static const bool on = switch_on("MEMRA_CUDA_HC_MIX_FUSED");
  return on;
}

// What hc_pre and hc_comb both read and write.
bool hc_args_ok(const HcPreArgs& a) {
  return a.X && a.fn && a.base && a.scale && a.comb && a.rows >= 0 && a.n >= 1 && a.n <= kMaxHc && a.D > 0 &&
         a.iters >= 1 && a.rows <= 65535 * 1024;
}

// MEMRA_CUDA_HC_PRE_ROWS=0 (A/B timing; the same bits): many-row hc_pre with the Sinkhorn inside
// hc_pre_kernel (one block a row) and hc_comb one block a row, as before run 151.
bool pre_rows_on() {
  static const bool on = switch_on("MEMRA_CUDA_HC_PRE_ROWS");
  return on;
}

// Many-row rounds whose Sinkhorn goes a warp a row (hc_comb_rows_kernel): partials made, n·n ≤ 32.
bool comb_rows(const HcPreArgs& a) {
  return a.rows >= kCombRowsFrom && a.partial && a.n * a.n <= kWarp && pre_rows_on();
}

cudaError_t hc_mix_finish(const float* X, int rows, int nD, float eps, float* mix, int M, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!X || !mix || rows < 0 || nD <= 0 || M <= 0 || rows > 65535 * 1024) return cudaErrorInvalidValue;
  return launch(hc_mix_finish_kernel, rows, kBlock, 0, stream, X, nD, eps, mix, M);
}

cudaError_t hc_pre(const HcPreArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return cudaSuccess;
  if (!hc_args_ok(a) || !a.x || !a.post || (a.mix_given && !a.partial) || (a.mix_unscaled && !a.mix_given))
    return cudaErrorInvalidValue;
  const int nD = a.n * a.D, M = (2 + a.n) * a.n, S = a.mix_given ? 1 : slices_of(nD);
  if (a.partial && !a.mix_given) {
    float* rms = nullptr;
    if (a.rows >= (a.mix_rows_from > 0 ? a.mix_rows_from : mix_rows_from_setting())) {
      rms = a.partial + static_cast<int64_t>(a.rows) * M * S;  // hc_mix_scratch's tail
      const cudaError_t err = launch(hc_rms_kernel, a.rows, kBlock, 0, stream, a.X, nD, a.norm_eps, rms);
      if (err != cudaSuccess) return err;
    }
    const dim3 rows_grid((a.rows + kMixRows - 1) / kMixRows, S);
    void (*rows4)(const float*, int, int, const float*, int, float*, const float*) =
        !mix_rows4_on()            ? nullptr
        : M == kWarps              ? hc_mix_rows4_kernel<1>
        : M == 3 * kWarps          ? hc_mix_rows4_kernel<3>
                                   : nullptr;
    const cudaError_t err =
        rms && mix_rows_on()
            ? launch(rows4 ? rows4 : hc_mix_rows_kernel, rows_grid, kBlock, 0, stream, a.X, a.rows, nD, a.fn, M, a.partial, rms)
            : launch(hc_mix_kernel, dim3(a.rows, S), kBlock, 0, stream, a.X, nullptr, nD, a.norm_eps, a.fn, M, a.partial, rms);
    if (err != cudaSuccess) return err;
  }
  // A many-row round (a prefill) takes the comb_apart form with the Sinkhorn after it, a warp a row:
  // inside hc_pre_kernel its 40 dependent passes were each block's critical path (run 150: 93 us
  // for 2048 rows at two blocks an SM).
  const bool sinkhorn_after = !a.comb_apart && comb_rows(a);
  const bool fused = (a.comb_apart || sinkhorn_after) && a.norm_weight && a.n <= kFusedHc && a.D <= kNormBlock * kNormCache &&
                     pre_norm_fused_on();
  // An unscaled mix is scaled inside hc_pre_norm_kernel where that runs, else by hc_mix_finish first.
  const bool scale_inside = a.mix_unscaled && fused && mix_scale_fused_on();
  if (a.mix_unscaled && !scale_inside) {
    const cudaError_t err = hc_mix_finish(a.X, a.rows, nD, a.norm_eps, a.partial, M, stream);
    if (err != cudaSuccess) return err;
  }
  if (fused) {
    const cudaError_t err = scale_inside ? launch(hc_pre_norm_kernel<true>, a.rows, kBlock, 0, stream, a, a.partial, S)
                                         : launch(hc_pre_norm_kernel<false>, a.rows, kBlock, 0, stream, a, a.partial, S);
    if (err != cudaSuccess || !sinkhorn_after) return err;
    return launch(hc_comb_rows_kernel, (a.rows + kWarps - 1) / kWarps, kBlock, 0, stream, a, a.partial, S);
  }
  return launch(hc_pre_kernel, a.rows, kBlock, 0, stream, a, a.partial, S);
}

cudaError_t hc_comb(const HcPreArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return cudaSuccess;
  if (!hc_args_ok(a) || (a.mix_given && !a.partial)) return cudaErrorInvalidValue;
  const int S = a.mix_given ? 1 : slices_of(a.n * a.D);
  if (comb_rows(a)) return launch(hc_comb_rows_kernel, (a.rows + kWarps - 1) / kWarps, kBlock, 0, stream, a, a.partial, S);
  return launch(hc_comb_kernel, a.rows, kBlock, 0, stream, a, a.partial, S);
}

// Rounds of at least this many rows take hc_post_rows_kernel where it applies (a decode row's 16
// blocks of 256 elements would become 4 blocks of 1024).
constexpr int kPostRowsFrom = 64;

// MEMRA_CUDA_HC_POST_ROWS=0 (A/B timing; the same bits): the element-wise kernels at every row count.
bool post_rows_on() {
  static const bool on = switch_on("MEMRA_CUDA_HC_POST_ROWS");
  return on;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Form 0: the library's choice; 1: the element-wise kernel; 2: hc_post_rows_kernel, where it
// applies (n = 4, D a multiple of 4, 16-byte aligned rows; else form 1).
bool post_rows_form(int form, int rows, int n, int D, std::initializer_list<const void*> ptrs) {
  if (form == 1 || (form == 0 && (rows < kPostRowsFrom || !post_rows_on()))) return false;
  if (n != kPostRowsN || D % kPostVec != 0 || rows > 65535) return false;
  for (const void* p : ptrs)
    if (p && !aligned16(p)) return false;
  return true;
}

dim3 post_rows_grid(int rows, int D) { return dim3((D / kPostVec + kBlock - 1) / kBlock, rows); }

cudaError_t hc_post(float* X, const float* y, const float* post, const float* comb, int rows, int n, int D,
                    cudaStream_t stream, int form) {
  if (rows == 0) return cudaSuccess;
  if (!X || !y || !post || !comb || rows < 0 || n < 1 || n > kMaxHc || D <= 0 || form < 0 || form > 2)
    return cudaErrorInvalidValue;
  if (post_rows_form(form, rows, n, D, {X, y}))
    return launch(hc_post_rows_kernel<false>, post_rows_grid(rows, D), kBlock, 0, stream, X, y, nullptr, nullptr, nullptr, 0, post,
                  comb, D, nullptr);
  return launch(hc_post_kernel, elementwise_blocks(static_cast<int64_t>(rows) * D), kBlock, 0, stream, X, y, post, comb, rows, n, D);
}

cudaError_t hc_post_moe(float* X, const float* eo, const float* ew, const float* shared, int k, const float* post,
                        const float* comb, int rows, int n, int D, cudaStream_t stream, int form, const int32_t* eo_rows) {
  if (rows == 0) return cudaSuccess;
  if (!X || !eo || !ew || !shared || !post || !comb || rows < 0 || k < 1 || n < 1 || n > kMaxHc || D <= 0 || form < 0 ||
      form > 2)
    return cudaErrorInvalidValue;
  if (post_rows_form(form, rows, n, D, {X, eo, shared}))
    return launch(hc_post_rows_kernel<true>, post_rows_grid(rows, D), kBlock, 0, stream, X, nullptr, eo, ew, shared, k, post, comb, D,
                  eo_rows);
  return launch(hc_post_moe_kernel, elementwise_blocks(static_cast<int64_t>(rows) * D), kBlock, 0, stream, X, eo, ew, shared, k, post,
                comb, rows, n, D, eo_rows);
}

bool hc_post_moe16_ok(int n, int D) { return n == kPostRowsN && D % kPostVec == 0; }

cudaError_t hc_post_moe16(float* X, const void* eo, WType eo_type, const float* ew, const float* shared, int k, const float* post,
                          const float* comb, int rows, int n, int D, cudaStream_t stream, const int32_t* eo_rows) {
  if (rows == 0) return cudaSuccess;
  if (!X || !eo || !ew || !shared || !post || !comb || rows < 0 || rows > 65535 || k < 1 || !hc_post_moe16_ok(n, D) ||
      !aligned16(X) || !aligned16(shared) || reinterpret_cast<uintptr_t>(eo) % 8 != 0)
    return cudaErrorInvalidValue;
  if (eo_type == WType::kBF16)
    return launch(hc_post_rows_kernel<true, __nv_bfloat16>, post_rows_grid(rows, D), kBlock, 0, stream, X, nullptr,
                  static_cast<const __nv_bfloat16*>(eo), ew, shared, k, post, comb, D, eo_rows);
  if (eo_type == WType::kF16)
    return launch(hc_post_rows_kernel<true, __half>, post_rows_grid(rows, D), kBlock, 0, stream, X, nullptr,
                  static_cast<const __half*>(eo), ew, shared, k, post, comb, D, eo_rows);
  return cudaErrorInvalidValue;
}

cudaError_t hc_head(const float* X, const int32_t* rows_idx, int out_rows, int n, int D, const float* fn,
                    const float* base, const float* scale, float norm_eps, float hc_eps, float* h, float* partial,
                    cudaStream_t stream) {
  if (out_rows == 0) return cudaSuccess;
  if (!X || !rows_idx || !fn || !base || !scale || !h || out_rows < 0 || n < 1 || n > kMaxHc || D <= 0)
    return cudaErrorInvalidValue;
  const int S = slices_of(n * D);
  if (partial) {
    const cudaError_t err = launch(hc_mix_kernel, dim3(out_rows, S), kBlock, 0, stream, X, rows_idx, n * D, norm_eps, fn, n, partial, nullptr);
    if (err != cudaSuccess) return err;
  }
  return launch(hc_head_kernel, out_rows, kBlock, 0, stream, X, rows_idx, n, D, fn, base, scale, norm_eps, hc_eps, h, partial, S);
}

}  // namespace memra::cuda
