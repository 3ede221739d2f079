// The lightning indexer's scores (docs/architecture.md §3.6) for CSA layers:
//   score[t, s] = Σ_h relu(qi[t,h]·IDXK[s]) · softmax_scale · (wi[t,h] · weight_scale),  s < (pos_t+1)/m
// One warp per (row, entry): each head's dot is a lane-strided fma chain + warp_sum, the heads are
// summed h-ascending in one fma chain. A row's scores depend only on its own q, weights and the
// keys, never on the launch's row count. Entries past a row's causal limit are not written.
//
//   grid (rows, ceil(max_visible / 8))   block 256 (8 warps, one entry each)
#include "common.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / kWarp;
constexpr int kHeadsAtOnce = 8;

__global__ void __launch_bounds__(kBlock) indexer_scores_kernel(IndexerArgs a) {
  const int row = blockIdx.x;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t s = static_cast<int64_t>(blockIdx.y) * kWarps + warp;
  const int64_t visible = (static_cast<int64_t>(a.row_pos[row]) + 1) / a.m;
  if (s >= visible) return;
  const float* key = a.seqs[a.row_seq[row]].layers[a.layer].idx.entries + s * a.di;
  const float* q = a.qi + static_cast<int64_t>(row) * a.Hi * a.di;
  const float* wr = a.wi + static_cast<int64_t>(row) * a.Hi;
  // kHeadsAtOnce heads' dot products side by side (their loads and butterflies overlap), then
  // added into acc in h order: each value's operations are the one-head loop's.
  float acc = 0.0f;
  int h0 = 0;
  for (; h0 + kHeadsAtOnce <= a.Hi; h0 += kHeadsAtOnce) {
    float d[kHeadsAtOnce];
#pragma unroll
    for (int u = 0; u < kHeadsAtOnce; ++u) d[u] = 0.0f;
    for (int i = lane; i < a.di; i += kWarp) {
      const float k = key[i];
#pragma unroll
      for (int u = 0; u < kHeadsAtOnce; ++u) d[u] = __fmaf_rn(q[static_cast<int64_t>(h0 + u) * a.di + i], k, d[u]);
    }
#pragma unroll
    for (int u = 0; u < kHeadsAtOnce; ++u) d[u] = warp_sum(d[u]);
#pragma unroll
    for (int u = 0; u < kHeadsAtOnce; ++u) {
      const float term = fmaxf(d[u], 0.0f) * a.softmax_scale;
      acc = __fmaf_rn(term, wr[h0 + u] * a.weight_scale, acc);
    }
  }
  for (int h = h0; h < a.Hi; ++h) {
    const float* qh = q + static_cast<int64_t>(h) * a.di;
    float d = 0.0f;
    for (int i = lane; i < a.di; i += kWarp) d = __fmaf_rn(qh[i], key[i], d);
    d = warp_sum(d);
    const float term = fmaxf(d, 0.0f) * a.softmax_scale;
    acc = __fmaf_rn(term, wr[h] * a.weight_scale, acc);
  }
  if (lane == 0) a.scores[static_cast<int64_t>(row) * a.score_stride + s] = acc;
}

}  // namespace

cudaError_t indexer_scores(const IndexerArgs& a, cudaStream_t stream) {
  if (a.rows == 0 || a.max_visible == 0) return cudaSuccess;
  if (!a.seqs || !a.row_seq || !a.row_pos || !a.qi || !a.wi || !a.scores || a.rows < 0 || a.Hi <= 0 || a.di <= 0 ||
      a.m <= 0 || a.max_visible < 0 || a.score_stride < a.max_visible)
    return cudaErrorInvalidValue;
  const int64_t gy = (static_cast<int64_t>(a.max_visible) + kWarps - 1) / kWarps;
  if (gy > 65535) return cudaErrorInvalidValue;
  indexer_scores_kernel<<<dim3(a.rows, static_cast<unsigned>(gy)), kBlock, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace memra::cuda
