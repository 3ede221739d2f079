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
// Rows longer than 4·512 entries (a decode row past 8k tokens of context) run on a cluster of 8
// blocks instead (topk_cluster_kernel): the same passes and emission, the row's keys spread over
// 8 SMs, each pass's histogram summed over the cluster through distributed shared memory. One block
// holding 16 keys per thread was issue-bound on its SM (ncu, run 53: 0.35 instructions per scheduler
// cycle, 27-28 us for a 32k decode row).
//
//   grid rows                block 512   (N ≤ k: all N indices; slots past the set are −1)
//   grid (8, rows) cluster 8  block 512   (clusters supported, 2048 < stride ≤ 8·512·8)
#include <cooperative_groups.h>

#include "ab_switch.h"
#include "common.cuh"
#include "device_caps.h"
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

// One radix pass's decision, given thread t < 256 holding c = the count of bin 255 − t (bins
// descending): the bin where the count from the top first reaches `want` (the prefix sums are
// non-decreasing, so exactly one thread finds it) extends prefix and mask by its 8 bits, and want
// becomes what is still to take inside it. Every thread of the block gets the new values.
__device__ __forceinline__ void take_crossing_bin(int c, int shift, uint32_t& prefix, int& want, uint32_t& mask, int* scan_scratch,
                                  uint32_t* s_prefix, int* s_want) {
  const int cum = prefix256(c, scan_scratch);  // the keys in bins ≥ this thread's
  if (threadIdx.x < 256 && cum >= want && cum - c < want) {
    *s_prefix = prefix | (static_cast<uint32_t>(255 - threadIdx.x) << shift);
    *s_want = want - (cum - c);
  }
  __syncthreads();
  prefix = *s_prefix;
  want = *s_want;
  mask |= 255u << shift;
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
    // Thread t < 256 holds bin 255 − t (descending).
    int c = 0;
    if (threadIdx.x < 256)
      for (int w = 0; w < kWarps; ++w) c += static_cast<int>(hist[w][255 - threadIdx.x]);
    take_crossing_bin(c, shift, prefix, want, mask, scan_scratch, &s_prefix, &s_want);
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

constexpr int kCluster = 8;  // blocks per cluster: the portable maximum

// Exclusive prefix sums of two counts over the block (thread order); *_total get the block's sums.
// warp_sums: 2·kWarps ints.
__device__ void block_exclusive_sum2(int a, int b, int* warp_sums, int& a_before, int& b_before, int& a_total, int& b_total) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  int ai = a, bi = b;  // inclusive within the warp
#pragma unroll
  for (int d = 1; d < kWarp; d <<= 1) {
    const int ua = __shfl_up_sync(kFullMask, ai, d), ub = __shfl_up_sync(kFullMask, bi, d);
    if (lane >= d) ai += ua, bi += ub;
  }
  if (lane == kWarp - 1) warp_sums[warp] = ai, warp_sums[kWarps + warp] = bi;
  __syncthreads();
  a_before = ai - a, b_before = bi - b, a_total = 0, b_total = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) a_before += warp_sums[w], b_before += warp_sums[kWarps + w];
    a_total += warp_sums[w], b_total += warp_sums[kWarps + w];
  }
}

// One row per cluster of kCluster blocks; thread g = rank·kBlock + threadIdx.x holds keys
// [g·KPT, (g+1)·KPT) of the row (contiguous, so the emission needs one block scan, not one per
// chunk). Each pass: the block's histogram in block_hist[pass parity] (one per block, not per warp:
// with 2-8 keys a thread, clearing and summing 16 warps' bins cost more than the counting), the
// lanes that share a bin adding once, one cluster barrier, then every block sums the cluster's
// histograms (integers) and finds the same crossing bin. Parity double-buffering: a block rewrites
// a buffer two passes later, after a barrier every reader of it has passed.
template <int KPT>
__global__ void __launch_bounds__(kBlock) topk_cluster_kernel(const float* scores, int64_t stride, int n_fixed,
                                                              const int32_t* row_pos, int m, int k, int32_t* out) {
  namespace cg = cooperative_groups;
  pdl_begin();
  __shared__ unsigned block_hist[2][256];
  __shared__ int scan_scratch[8];
  __shared__ uint32_t s_prefix;
  __shared__ int s_want;
  __shared__ int warp_sums[2 * kWarps];
  __shared__ int block_counts[2];  // this block's keys > τ and == τ, read by the blocks after it
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int row = blockIdx.y, lane = threadIdx.x % kWarp;
  const float* sc = scores + static_cast<int64_t>(row) * stride;
  int32_t* o = out + static_cast<int64_t>(row) * k;
  const int64_t N = row_pos ? (static_cast<int64_t>(row_pos[row]) + 1) / m : n_fixed;
  if (N <= k) {  // the whole cluster returns here (one row): no barrier is left waiting
    if (rank == 0)
      for (int i = threadIdx.x; i < k; i += kBlock) o[i] = i < N ? i : -1;
    return;
  }
  if (N > static_cast<int64_t>(KPT) * kBlock * kCluster) __trap();  // the host picked KPT from the stride
  const int64_t first = (static_cast<int64_t>(rank) * kBlock + threadIdx.x) * KPT;
  uint32_t key[KPT];
#pragma unroll
  for (int j = 0; j < KPT; ++j) key[j] = first + j < N ? order_key(sc[first + j]) : 0u;
  uint32_t prefix = 0, mask = 0;
  int want = k;
  int parity = 0;
  for (int shift = 24; shift >= 0; shift -= 8, parity ^= 1) {
    unsigned* hist = block_hist[parity];
    if (threadIdx.x < 256) hist[threadIdx.x] = 0;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < KPT; ++j) {
      const bool in = first + j < N && (key[j] & mask) == prefix;
      const unsigned bin = in ? (key[j] >> shift) & 255u : 256u;  // 256: not counted
      const unsigned peers = __match_any_sync(kFullMask, bin);
      if (in && lane == __ffs(peers) - 1) atomicAdd(&hist[bin], static_cast<unsigned>(__popc(peers)));
    }
    cluster.sync();  // every block's histogram of this pass complete and published
    // Thread t < 256 holds bin 255 − t (descending), summed over the cluster's blocks.
    int c = 0;
    if (threadIdx.x < 256)
      for (int r = 0; r < kCluster; ++r) c += static_cast<int>(cluster.map_shared_rank(&block_hist[parity][0], r)[255 - threadIdx.x]);
    take_crossing_bin(c, shift, prefix, want, mask, scan_scratch, &s_prefix, &s_want);
  }
  // prefix = τ. Every key > τ and the first `want` keys == τ, in index order: an index's slot is
  // (keys > τ before it) + min(keys == τ before it, want), before it = earlier blocks, then earlier
  // threads of this block, then this thread's earlier keys.
  int gt = 0, eq = 0;
#pragma unroll
  for (int j = 0; j < KPT; ++j) {
    gt += first + j < N && key[j] > prefix;
    eq += first + j < N && key[j] == prefix;
  }
  int gt_seen, eq_seen, gt_block, eq_block;
  block_exclusive_sum2(gt, eq, warp_sums, gt_seen, eq_seen, gt_block, eq_block);
  if (threadIdx.x == 0) block_counts[0] = gt_block, block_counts[1] = eq_block;
  cluster.sync();  // block counts published
  int gt_all = 0, eq_all = 0;
  for (int r = 0; r < kCluster; ++r) {
    const int* bc = cluster.map_shared_rank(block_counts, r);
    const int g = bc[0], e = bc[1];
    if (r < rank) gt_seen += g, eq_seen += e;
    gt_all += g, eq_all += e;
  }
  cluster.sync();  // no block leaves while another still reads its shared memory
#pragma unroll
  for (int j = 0; j < KPT; ++j) {
    const int64_t s = first + j;
    if (s >= N) continue;
    if (key[j] > prefix) {
      const int slot = gt_seen + min(eq_seen, want);
      if (slot < k) o[slot] = static_cast<int32_t>(s);
      ++gt_seen;
    } else if (key[j] == prefix) {
      if (eq_seen < want && gt_seen + eq_seen < k) o[gt_seen + eq_seen] = static_cast<int32_t>(s);
      ++eq_seen;
    }
  }
  if (rank == 0)
    for (int i = gt_all + min(eq_all, want) + threadIdx.x; i < k; i += kBlock) o[i] = -1;
}

// Keys per thread of the cluster form for a launch's longest row (0: not the cluster form).
int cluster_keys_per_thread(int64_t max_n) {
  if (max_n <= 4 * kBlock) return 0;  // one block holds such rows at 4 keys per thread
  const int64_t threads = static_cast<int64_t>(kCluster) * kBlock;
  return max_n <= 2 * threads ? 2 : max_n <= 4 * threads ? 4 : max_n <= 8 * threads ? 8 : 0;
}

// MEMRA_CUDA_TOPK_CLUSTER=0: never the cluster form (bench A/B).
bool cluster_form_allowed() {
  static const bool on = switch_on("MEMRA_CUDA_TOPK_CLUSTER");
  DeviceCaps caps;
  return on && current_device_caps(caps) == cudaSuccess && caps.clusters;
}

// Keys per thread held in registers for a launch's longest row (0: read from memory each pass).
int keys_per_thread(int64_t max_n) {
  return max_n <= 4 * kBlock ? 4 : max_n <= 16 * kBlock ? 16 : max_n <= 32 * kBlock ? 32 : 0;
}

}  // namespace

cudaError_t topk_rows(const float* scores, int64_t stride, int rows, int n_fixed, const int32_t* row_pos, int m,
                      int k, int32_t* out, cudaStream_t stream, bool allow_cluster) {
  if (rows == 0) return cudaSuccess;
  if (!scores || !out || rows < 0 || k < 1 || (row_pos && m < 1) || (!row_pos && n_fixed < 0))
    return cudaErrorInvalidValue;
  // The longest row: N ≤ stride (a row's scores fit its stride), and n_fixed when no positions are given.
  const int64_t max_n = row_pos ? stride : n_fixed;
  const int cluster_kpt = allow_cluster && cluster_form_allowed() && rows <= 65535 ? cluster_keys_per_thread(max_n) : 0;
  using Kernel = void (*)(const float*, int64_t, int, const int32_t*, int, int, int32_t*);
  if (cluster_kpt > 0) {
    const cudaLaunchAttribute cluster = cluster_of(kCluster);
    const Kernel kernel = cluster_kpt == 2 ? topk_cluster_kernel<2> : cluster_kpt == 4 ? topk_cluster_kernel<4> : topk_cluster_kernel<8>;
    return launch_with(&cluster, 1, kernel, dim3(kCluster, rows), kBlock, 0, stream, scores, stride, n_fixed, row_pos, m, k, out);
  }
  const int kpt = keys_per_thread(max_n);
  const Kernel kernel = kpt == 4 ? topk_kernel<4> : kpt == 16 ? topk_kernel<16> : kpt == 32 ? topk_kernel<32> : topk_kernel<0>;
  return launch(kernel, rows, kBlock, 0, stream, scores, stride, n_fixed, row_pos, m, k, out);
}

}  // namespace memra::cuda
