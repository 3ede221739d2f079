// Top-k per row with ties to the lower index (docs/architecture.md §5), for the lightning indexer.
// Exact by construction, no floating-point arithmetic: scores map to order-preserving u32 keys
// (−0 folded onto +0); a 4-pass radix select (8 bits a pass, integer histograms whose counts do
// not depend on the order of their atomics) finds the k-th largest key τ and how many of the keys
// equal to τ belong to the set (`want`); a block scan then emits, in ascending index order, every
// index with key > τ and the first `want` indices with key == τ. That is exactly the set a stable
// descending sort would keep, whatever the row count or launch.
// Each pass: one histogram per warp, the lanes that share a bin adding once (__match_any_sync:
// relu'd indexer scores share their top bytes, and same-address atomics serialise), then the
// 256 bins summed over the warps and the crossing bin found by a block scan over the bins in
// descending order (one thread walking 256 bins was a chain of 256 dependent loads per pass: the
// 32k decode step's topk took 30 us, run 43).
//
//   grid rows   block 512   (N ≤ k: all N indices; slots past the set are −1)
#include "common.cuh"
#include "launch.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 512;
constexpr int kWarps = kBlock / kWarp;

__device__ __forceinline__ uint32_t order_key(float v) {
  if (v == 0.0f) v = 0.0f;  // −0 and +0 tie, as they compare equal on the CPU
  const uint32_t b = __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// Exclusive prefix counts of two flags over the block (thread order), with one pair of barriers;
// *_total get the block's counts. warp_counts: 2·kWarps ints.
__device__ void block_exclusive_count2(bool fa, bool fb, int* warp_counts, int& a_before, int& b_before, int& a_total,
                                       int& b_total) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const unsigned ba = __ballot_sync(kFullMask, fa), bb = __ballot_sync(kFullMask, fb);
  const unsigned below = (1u << lane) - 1u;
  __syncthreads();  // warp_counts may still be read by the previous call
  if (lane == 0) warp_counts[warp] = __popc(ba), warp_counts[kWarps + warp] = __popc(bb);
  __syncthreads();
  a_before = __popc(ba & below), b_before = __popc(bb & below), a_total = 0, b_total = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) a_before += warp_counts[w], b_before += warp_counts[kWarps + w];
    a_total += warp_counts[w], b_total += warp_counts[kWarps + w];
  }
}

// Inclusive prefix sum of v over the block's first 256 threads (thread order); the others
// return 0. scratch: 8 ints.
__device__ int prefix256(int v, int* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
#pragma unroll
  for (int d = 1; d < kWarp; d <<= 1) {
    const int u = __shfl_up_sync(kFullMask, v, d);
    if (lane >= d) v += u;
  }
  __syncthreads();  // scratch may still be read by the previous call
  if (lane == kWarp - 1 && warp < 8) scratch[warp] = v;
  __syncthreads();
  if (threadIdx.x >= 256) return 0;
  for (int w = 0; w < warp; ++w) v += scratch[w];
  return v;
}

// KPT > 0: the row's keys (N ≤ KPT·kBlock) are loaded once, all at once, into registers, and the
// four passes and the emission read them there; KPT = 0: every pass reads the row from memory
// (rows past 16384 entries). Run 48: with the loads in the passes' loops (one dependent round trip
// per 512 keys, 4 passes + the emission) a 32k decode step's top-k took 31-35 us.
template <int KPT>
__global__ void __launch_bounds__(kBlock) topk_kernel(const float* scores, int64_t stride, int n_fixed,
                                                      const int32_t* row_pos, int m, int k, int32_t* out) {
  pdl_begin();
  __shared__ unsigned hist[kWarps][256];
  __shared__ int scan_scratch[8];
  __shared__ uint32_t s_prefix;
  __shared__ int s_want;
  __shared__ int warp_counts[2 * kWarps];
  const int row = blockIdx.x, lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const float* sc = scores + static_cast<int64_t>(row) * stride;
  int32_t* o = out + static_cast<int64_t>(row) * k;
  const int64_t N = row_pos ? (static_cast<int64_t>(row_pos[row]) + 1) / m : n_fixed;
  if (N <= k) {
    for (int i = threadIdx.x; i < k; i += kBlock) o[i] = i < N ? i : -1;
    return;
  }
  uint32_t cache[KPT > 0 ? KPT : 1];
  if constexpr (KPT > 0) {
    if (N > static_cast<int64_t>(KPT) * kBlock) __trap();  // the host picked KPT from the stride: N ≤ stride broken
#pragma unroll
    for (int j = 0; j < KPT; ++j) {
      const int64_t s = static_cast<int64_t>(j) * kBlock + threadIdx.x;
      cache[j] = s < N ? order_key(sc[s]) : 0u;
    }
  }
  // f(s, key) for s = base + threadIdx.x, base = 0, kBlock, … < N: the whole block steps together
  // (base is uniform), so warp-wide and block-wide operations inside f are safe; key is 0 past N.
  auto for_each_chunk = [&](auto&& f) {
    if constexpr (KPT > 0) {
#pragma unroll
      for (int j = 0; j < KPT; ++j)
        if (static_cast<int64_t>(j) * kBlock < N) f(static_cast<int64_t>(j) * kBlock + threadIdx.x, cache[j]);
    } else {
      for (int64_t base = 0; base < N; base += kBlock) {
        const int64_t s = base + threadIdx.x;
        f(s, s < N ? order_key(sc[s]) : 0u);
      }
    }
  };
  uint32_t prefix = 0, mask = 0;
  int want = k;  // keys still to take among those matching prefix under mask
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < kWarps * 256; b += kBlock) (&hist[0][0])[b] = 0;
    __syncthreads();
    for_each_chunk([&](int64_t s, uint32_t key) {
      const bool in = s < N && (key & mask) == prefix;
      const unsigned bin = in ? (key >> shift) & 255u : 256u;  // 256: not counted
      const unsigned peers = __match_any_sync(kFullMask, bin);
      if (in && lane == __ffs(peers) - 1) atomicAdd(&hist[warp][bin], static_cast<unsigned>(__popc(peers)));
    });
    __syncthreads();
    // Thread t < 256 holds bin 255 − t (descending): cum = the keys in bins ≥ that bin.
    int c = 0;
    if (threadIdx.x < 256)
      for (int w = 0; w < kWarps; ++w) c += static_cast<int>(hist[w][255 - threadIdx.x]);
    const int cum = prefix256(c, scan_scratch);
    // The one bin where the count from the top first reaches `want` (cum is non-decreasing).
    if (threadIdx.x < 256 && cum >= want && cum - c < want) {
      s_prefix = prefix | (static_cast<uint32_t>(255 - threadIdx.x) << shift);
      s_want = want - (cum - c);
    }
    __syncthreads();
    prefix = s_prefix;
    want = s_want;
    mask |= 255u << shift;
  }
  // prefix = τ; take every key > τ and the first `want` keys == τ, in index order. Before index s
  // the set holds (keys > τ before s) + min(keys == τ before s, want).
  int gt_seen = 0, eq_seen = 0;
  for_each_chunk([&](int64_t s, uint32_t key) {
    const bool gt = s < N && key > prefix, eq = s < N && key == prefix;
    int gt_before, eq_before, gt_total, eq_total;
    block_exclusive_count2(gt, eq, warp_counts, gt_before, eq_before, gt_total, eq_total);
    const int eq_rank = eq_seen + eq_before;
    const int slot = gt_seen + gt_before + min(eq_rank, want);
    if ((gt || (eq && eq_rank < want)) && slot < k) o[slot] = static_cast<int32_t>(s);
    gt_seen += gt_total;
    eq_seen += eq_total;
  });
  const int taken = gt_seen + min(eq_seen, want);
  for (int i = taken + threadIdx.x; i < k; i += kBlock) o[i] = -1;
}

// Keys per thread held in registers for a launch's longest row (0: read from memory each pass).
int keys_per_thread(int64_t max_n) {
  return max_n <= 4 * kBlock ? 4 : max_n <= 16 * kBlock ? 16 : max_n <= 32 * kBlock ? 32 : 0;
}

}  // namespace

cudaError_t topk_rows(const float* scores, int64_t stride, int rows, int n_fixed, const int32_t* row_pos, int m,
                      int k, int32_t* out, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!scores || !out || rows < 0 || k < 1 || (row_pos && m < 1) || (!row_pos && n_fixed < 0))
    return cudaErrorInvalidValue;
  // The longest row: N ≤ stride (a row's scores fit its stride), and n_fixed when no positions are given.
  switch (keys_per_thread(row_pos ? stride : n_fixed)) {
    case 4: return launch(topk_kernel<4>, rows, kBlock, 0, stream, scores, stride, n_fixed, row_pos, m, k, out);
    case 16: return launch(topk_kernel<16>, rows, kBlock, 0, stream, scores, stride, n_fixed, row_pos, m, k, out);
    case 32: return launch(topk_kernel<32>, rows, kBlock, 0, stream, scores, stride, n_fixed, row_pos, m, k, out);
    default: return launch(topk_kernel<0>, rows, kBlock, 0, stream, scores, stride, n_fixed, row_pos, m, k, out);
  }
}

}  // namespace memra::cuda
