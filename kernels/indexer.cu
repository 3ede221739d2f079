// The lightning indexer's scores (docs/architecture.md §3.6) for CSA layers:
//   score[t, s] = Σ_h relu(qi[t,h]·IDXK[s]) · softmax_scale · (wi[t,h] · weight_scale),  s < (pos_t+1)/m
// One warp per (row, entry) or (row, 4 entries): each head's dot is a lane-strided fma chain + a
// butterfly with warp_sum's bits (indexer_scores_wide_kernel: warp_sum_many for 8 heads × 4 entries
// at once), the heads are summed h-ascending in one fma chain. A row's scores depend only on its own q, weights and the
// keys, never on the launch's row count. Entries past a row's causal limit are not written.
// Each block first copies its row's query and head weights into shared memory (stage_query): every
// warp reads the query di/32 times per head group, and from L2 each group waited a round trip.
//
//   grid (rows, ceil(max_visible / (8·EPW)))   block 256 (8 warps, EPW = 1 or 4 entries each)
#include "common.cuh"
#include "device_caps.h"
#include "launch.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / kWarp;
constexpr int kHeadsAtOnce = 8;
constexpr int kManyRows = 16;       // rounds of at least this many rows take 4 entries per warp,
constexpr int kManyEntries = 4096;  // and so do rounds whose rows see at least this many entries

// The row's head weights times weight_scale (the product each head's term is multiplied by, the same
// rounding as computing it at use) into ws [Hi], and, when stage_q, its query into qs [Hi·di]
// (shared memory, 16-byte aligned for the float4 copy); returns where the query is read from.
// Block-wide: every thread calls it.
__device__ const float* stage_query(const IndexerArgs& a, int row, bool stage_q, float* qs, float* ws) {
  const float* q = a.qi + static_cast<int64_t>(row) * a.Hi * a.di;
  const float* wr = a.wi + static_cast<int64_t>(row) * a.Hi;
  for (int h = threadIdx.x; h < a.Hi; h += kBlock) ws[h] = wr[h] * a.weight_scale;
  if (stage_q) {
    const int n = a.Hi * a.di;
    if (n % 4 == 0 && reinterpret_cast<uintptr_t>(q) % 16 == 0) {
      const float4* q4 = reinterpret_cast<const float4*>(q);
      float4* s4 = reinterpret_cast<float4*>(qs);
      for (int i = threadIdx.x; i < n / 4; i += kBlock) s4[i] = q4[i];
    } else {
      for (int i = threadIdx.x; i < n; i += kBlock) qs[i] = q[i];
    }
  }
  __syncthreads();
  return stage_q ? qs : q;
}

// EPW entries per warp; launched with EPW = 1 (few rows of few entries: as many warps as entries).
// The 4-entry form (a prefill's warps each re-read the row's whole query, 32 KB at V4-Flash
// geometry, once per entry; with 4 entries a query load serves 4 dot products) is
// indexer_scores_wide_kernel below. Each entry's operations are the one-entry loop's, so EPW changes
// no bit.
template <int EPW>
__global__ void __launch_bounds__(kBlock) indexer_scores_kernel(IndexerArgs a, bool stage_q) {
  pdl_begin();
  extern __shared__ float4 staged4[];  // qs [Hi·di] when stage_q, then ws [Hi]
  float* staged = reinterpret_cast<float*>(staged4);
  const int row = blockIdx.x;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t visible = (static_cast<int64_t>(a.row_pos[row]) + 1) / a.m;
  if (static_cast<int64_t>(blockIdx.y) * kWarps * EPW >= visible) return;  // the whole block
  float* ws = staged + (stage_q ? a.Hi * a.di : 0);
  const float* q = stage_query(a, row, stage_q, staged, ws);
  const int64_t s0 = (static_cast<int64_t>(blockIdx.y) * kWarps + warp) * EPW;
  if (s0 >= visible) return;
  const float* entries = a.seqs[a.row_seq[row]].layers[a.layer].idx.entries;
  const float* key[EPW];
#pragma unroll
  for (int e = 0; e < EPW; ++e) key[e] = entries + (s0 + e < visible ? s0 + e : s0) * a.di;
  // kHeadsAtOnce heads' dot products side by side (their loads and butterflies overlap), then
  // added into acc in h order: each value's operations are the one-head loop's.
  float acc[EPW];
#pragma unroll
  for (int e = 0; e < EPW; ++e) acc[e] = 0.0f;
  int h0 = 0;
  for (; h0 + kHeadsAtOnce <= a.Hi; h0 += kHeadsAtOnce) {
    float d[EPW][kHeadsAtOnce];
#pragma unroll
    for (int e = 0; e < EPW; ++e)
#pragma unroll
      for (int u = 0; u < kHeadsAtOnce; ++u) d[e][u] = 0.0f;
    // unrolled by 4 (V4-Flash: di = 128, all of a lane's steps): every q and key load in flight at
    // once. Without it, pdl_begin()'s barrier at the kernel's start left ptxas a schedule at 48
    // registers that took a 2k decode step's scores 12.9 -> 31 us (runs 49, 51).
#pragma unroll 4
    for (int i = lane; i < a.di; i += kWarp) {
      float k[EPW];
#pragma unroll
      for (int e = 0; e < EPW; ++e) k[e] = key[e][i];
#pragma unroll
      for (int u = 0; u < kHeadsAtOnce; ++u) {
        const float qv = q[static_cast<int64_t>(h0 + u) * a.di + i];
#pragma unroll
        for (int e = 0; e < EPW; ++e) d[e][u] = __fmaf_rn(qv, k[e], d[e][u]);
      }
    }
#pragma unroll
    for (int e = 0; e < EPW; ++e)
#pragma unroll
      for (int u = 0; u < kHeadsAtOnce; ++u) {
        const float term = fmaxf(warp_sum(d[e][u]), 0.0f) * a.softmax_scale;
        acc[e] = __fmaf_rn(term, ws[h0 + u], acc[e]);
      }
  }
  for (int h = h0; h < a.Hi; ++h) {
    const float* qh = q + static_cast<int64_t>(h) * a.di;
#pragma unroll
    for (int e = 0; e < EPW; ++e) {
      float d = 0.0f;
      for (int i = lane; i < a.di; i += kWarp) d = __fmaf_rn(qh[i], key[e][i], d);
      d = warp_sum(d);
      const float term = fmaxf(d, 0.0f) * a.softmax_scale;
      acc[e] = __fmaf_rn(term, ws[h], acc[e]);
    }
  }
  if (lane == 0)
#pragma unroll
    for (int e = 0; e < EPW; ++e)
      if (s0 + e < visible) a.scores[static_cast<int64_t>(row) * a.score_stride + s0 + e] = acc[e];
}

// Its prologue repeats indexer_scores_kernel's on purpose: with a shared inline helper ptxas gave the
// one-entry kernel 48 registers instead of 64, the schedule that ran 12.9 -> 31 us (run 55).
// Four entries per warp (rounds of many rows, rows of many entries): indexer_scores_kernel<4>'s
// values, their 32 butterflies per head group as one warp_sum_many (warp_sum's bits in a fifth of
// the shuffles; run 50: 32.6 -> 25.9 us for a 32k decode step). For one entry per warp the 8
// butterflies stay side by side (indexer_scores_kernel<1>: runs 50-51 measured this kernel's form
// 12.9 -> 22-31 us there).
__global__ void __launch_bounds__(kBlock) indexer_scores_wide_kernel(IndexerArgs a, bool stage_q) {
  constexpr int EPW = 4;
  pdl_begin();
  extern __shared__ float4 staged4[];  // qs [Hi·di] when stage_q, then ws [Hi]
  float* staged = reinterpret_cast<float*>(staged4);
  const int row = blockIdx.x;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t visible = (static_cast<int64_t>(a.row_pos[row]) + 1) / a.m;
  if (static_cast<int64_t>(blockIdx.y) * kWarps * EPW >= visible) return;  // the whole block
  float* ws = staged + (stage_q ? a.Hi * a.di : 0);
  const float* q = stage_query(a, row, stage_q, staged, ws);
  const int64_t s0 = (static_cast<int64_t>(blockIdx.y) * kWarps + warp) * EPW;
  if (s0 >= visible) return;
  const float* entries = a.seqs[a.row_seq[row]].layers[a.layer].idx.entries;
  const float* key[EPW];
#pragma unroll
  for (int e = 0; e < EPW; ++e) key[e] = entries + (s0 + e < visible ? s0 + e : s0) * a.di;
  // Lane l accumulates entry me = l % EPW's score (lanes < EPW write them).
  const int me = lane % EPW;
  float acc = 0.0f;
  int h0 = 0;
  // kHeadsAtOnce heads × EPW entries: their dot products side by side (loads and FMAs overlap),
  // reduced together, then added into each entry's chain in h order: each value's operations are
  // the one-head loop's.
  constexpr int kVals = kHeadsAtOnce * EPW;  // value j = e·kHeadsAtOnce + u, its sum held by lane j
  for (; h0 + kHeadsAtOnce <= a.Hi; h0 += kHeadsAtOnce) {
    float d[kVals];
#pragma unroll
    for (int j = 0; j < kVals; ++j) d[j] = 0.0f;
    for (int i = lane; i < a.di; i += kWarp) {
      float k[EPW];
#pragma unroll
      for (int e = 0; e < EPW; ++e) k[e] = key[e][i];
#pragma unroll
      for (int u = 0; u < kHeadsAtOnce; ++u) {
        const float qv = q[static_cast<int64_t>(h0 + u) * a.di + i];
#pragma unroll
        for (int e = 0; e < EPW; ++e) d[e * kHeadsAtOnce + u] = __fmaf_rn(qv, k[e], d[e * kHeadsAtOnce + u]);
      }
    }
    const float term = fmaxf(warp_sum_many<kVals>(d), 0.0f) * a.softmax_scale;  // value j = lane
#pragma unroll
    for (int u = 0; u < kHeadsAtOnce; ++u) {
      const float t = __shfl_sync(kFullMask, term, me * kHeadsAtOnce + u);
      acc = __fmaf_rn(t, ws[h0 + u], acc);
    }
  }
  for (int h = h0; h < a.Hi; ++h) {
    const float* qh = q + static_cast<int64_t>(h) * a.di;
#pragma unroll
    for (int e = 0; e < EPW; ++e) {
      float d = 0.0f;
      for (int i = lane; i < a.di; i += kWarp) d = __fmaf_rn(qh[i], key[e][i], d);
      d = warp_sum(d);
      const float term = fmaxf(d, 0.0f) * a.softmax_scale;
      if (e == me) acc = __fmaf_rn(term, ws[h], acc);
    }
  }
  if (lane < EPW && s0 + lane < visible) a.scores[static_cast<int64_t>(row) * a.score_stride + s0 + lane] = acc;
}

}  // namespace

cudaError_t indexer_scores(const IndexerArgs& a, cudaStream_t stream, bool allow_stage) {
  if (a.rows == 0 || a.max_visible == 0) return cudaSuccess;
  if (!a.seqs || !a.row_seq || !a.row_pos || !a.qi || !a.wi || !a.scores || a.rows < 0 || a.Hi <= 0 || a.di <= 0 ||
      a.m <= 0 || a.max_visible < 0 || a.score_stride < a.max_visible)
    return cudaErrorInvalidValue;
  // Few rows with few entries (a decode step at short context) keep one entry per warp: as many
  // warps as entries. Past kManyEntries (16k tokens of context for m = 4) a decode row's warps are
  // bound by re-reading its query (32 KB per entry: 256 MB at 32k), as a prefill's are: 4 per warp.
  const int epw = a.rows >= kManyRows || a.max_visible >= kManyEntries ? 4 : 1;
  const int64_t gy = (static_cast<int64_t>(a.max_visible) + kWarps * epw - 1) / (kWarps * epw);
  if (gy > 65535) return cudaErrorInvalidValue;
  // The query is staged when it fits the shared memory a block may opt in to; else read from L2.
  DeviceCaps caps;
  cudaError_t err = current_device_caps(caps);
  if (err != cudaSuccess) return err;
  const size_t w_bytes = static_cast<size_t>(a.Hi) * sizeof(float);
  const size_t q_bytes = static_cast<size_t>(a.Hi) * a.di * sizeof(float);
  const bool stage_q = allow_stage && w_bytes + q_bytes <= static_cast<size_t>(caps.smem_optin);
  const size_t smem = w_bytes + (stage_q ? q_bytes : 0);
  if (smem > static_cast<size_t>(caps.smem_optin)) return cudaErrorInvalidValue;
  void (*kernel)(IndexerArgs, bool) = epw == 4 ? indexer_scores_wide_kernel : indexer_scores_kernel<1>;
  if (smem > 48 * 1024 && (err = allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem)) != cudaSuccess) return err;
  return launch(kernel, dim3(a.rows, static_cast<unsigned>(gy)), kBlock, smem, stream, a, stage_q);
}

}  // namespace memra::cuda
