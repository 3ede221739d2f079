// Core attention for decode-sized rounds on thread-block clusters (sm_90): attention_kernel's
// operations (attention.cu) shared out over a cluster of 8 blocks per (row, group of HB heads), so
// that each key is read once for HB heads and a row's logits and outputs run on 8 SMs at once
// instead of one. The one-head kernel re-read all keys per head through one SM and was bound by
// issuing its dependent chains (bench/NOTES.md, run 44d).
//
//   grid (8·⌈H/HB⌉, rows)   cluster 8 blocks = one (row, head group)   block 256
//   1. logits: block r of the cluster takes keys [r·ch, (r+1)·ch), ch = ⌈n/8⌉ rounded up to a
//      multiple of 4 (key_table order; the exchange then moves float4s);
//      one warp per key, HB heads' lane-strided fma chains side by side from +0, warp_sum, · scale
//   2. every block gathers the cluster's HB·n logits through distributed shared memory and runs
//      each head's softmax as attention_kernel does: mx = fmaxf thread-strided from the sink +
//      block_max<256>; p = exp(logit − mx), Σp thread-strided (j ascending per thread) +
//      block_sum<256>; denom = exp(sink − mx) + Σp; p / denom
//   3. block r: o[h][i] for the dims i of its slice [r·d/8, (r+1)·d/8): the j-ascending fma chain
//      over all n keys from +0, two heads' chains a thread (one key value read for both); the key
//      slices copied by cp.async into a ring of 4 chunks of 64 keys, the first three asked for
//      after the exchange (they fly through the softmax); inverse RoPE on the slice's pairs
// Every value is made by attention_kernel's operations in its order, so the bits equal the other
// exact kernels' for any HB, row count or round (test_attention_cluster compares them by bits).
//
//   dynamic smem (cluster_layout): max_keys·8 (key pointers) + HB·stride·4 (logits; stride =
//   max_keys rounded up to 4, + 4) + d·HB·4 (q) + 4·64·(d/8)·4 (key slices) + HB·(d/8)·4 (o):
//   89 KB at d = 512, 640 keys, HB = 4, 107 KB at HB = 8 (two blocks per SM)
// Run 131 (ncu's stall samples of the one-row launch, 640 keys): the outputs phase was bound by
// shared-memory reads (each key value read by the four warps of its dim, one head each) and by the
// per-thread loads of the two-chunk register ring; the exchange by a division per logit. Not kept:
// the key slices by bulk copies, one a key (27 → 42 us, branch bulk-copies-run134); the logits from
// cp.async row buffers with q in registers (no better than the register passes, run 133); clusters
// of 16 blocks with 8 heads (27 → 30 us, verify 6 79 → 99 us, branch cluster16-run135).
#include <cooperative_groups.h>

#include "ab_switch.h"
#include "attention_keys.cuh"
#include "common.cuh"
#include "device_caps.h"
#include "launch.cuh"
#include "ops.h"
#include "rope.cuh"

namespace memra::cuda {

namespace {

namespace cg = cooperative_groups;

constexpr int kC = 8;         // blocks per cluster: the portable maximum
constexpr int kBlock = 256;   // the softmax's block_max/block_sum<256> are attention_kernel's
constexpr int kWarps = kBlock / kWarp;
constexpr int kChunk = 64;    // keys per staged chunk of key slices (phase 3)
constexpr int kRing = 4;      // chunk buffers of phase 3's ring: three chunks in flight while one runs

struct ClusterLayout {
  int stride;                          // floats per head's logit row: a multiple of 4 (float4 reads)
  size_t logit, q, stage, o, bytes;    // byte offsets of the parts; the key pointers sit at 0
};

__host__ __device__ inline ClusterLayout cluster_layout(int max_keys, int d, int hb) {
  ClusterLayout l;
  l.stride = (max_keys + 3) / 4 * 4 + 4;
  l.logit = (static_cast<size_t>(max_keys) * sizeof(float*) + 15) / 16 * 16;
  l.q = l.logit + static_cast<size_t>(hb) * l.stride * sizeof(float);
  l.stage = l.q + static_cast<size_t>(d) * hb * sizeof(float);
  l.o = l.stage + static_cast<size_t>(kRing) * kChunk * (d / kC) * sizeof(float);
  l.bytes = l.o + static_cast<size_t>(hb) * (d / kC) * sizeof(float);
  return l;
}

// block_max<256> / block_sum<256> of HB heads at once: per head the same butterflies and the same
// warp-0 butterfly over the 8 warp results (lanes ≥ 8 with −inf / +0), one pair of barriers.
template <int HB>
__device__ __forceinline__ void block_max_heads(float (&v)[HB], float* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
#pragma unroll
  for (int u = 0; u < HB; ++u) v[u] = warp_max(v[u]);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0)
#pragma unroll
    for (int u = 0; u < HB; ++u) scratch[u * kWarps + warp] = v[u];
  __syncthreads();
#pragma unroll
  for (int u = 0; u < HB; ++u) v[u] = warp_max(lane < kWarps ? scratch[u * kWarps + lane] : -INFINITY);
}

template <int HB>
__device__ __forceinline__ void block_sum_heads(float (&v)[HB], float* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
#pragma unroll
  for (int u = 0; u < HB; ++u) v[u] = warp_sum(v[u]);
  __syncthreads();
  if (lane == 0)
#pragma unroll
    for (int u = 0; u < HB; ++u) scratch[u * kWarps + warp] = v[u];
  __syncthreads();
#pragma unroll
  for (int u = 0; u < HB; ++u) v[u] = warp_sum(lane < kWarps ? scratch[u * kWarps + lane] : 0.0f);
}

// Phase 1's keys per warp and pass: their KP·d/32 key values per lane are loaded before the chains
// run (≤ 80 registers: d = 512 at 4 heads takes 5 keys, two passes over a block's 80 keys at 640
// instead of three; run 137), with KP·HB accumulators (≤ 32).
__host__ __device__ constexpr int keys_per_pass(int per_lane, int hb) {
  int k = 80 / per_lane;
  if (32 / hb < k) k = 32 / hb;
  return k < 8 ? k : 8;
}

// D = head dim (a.d), HB = heads per cluster (a multiple of 4: q is read as float4 per dim).
template <int D, int HB>
__global__ void __launch_bounds__(kBlock, 2) attention_cluster_kernel(AttentionArgs a) {
  pdl_begin();
  constexpr int S = D / kC;                  // phase 3: dims per block
  constexpr int kPL = D / kWarp;             // phase 1: q·key terms per lane
  constexpr int KP = keys_per_pass(kPL, HB);
  constexpr int kTPH = kBlock / HB;          // exchange: threads per head
  static_assert(D % (kC * 4) == 0 && S % 2 == 0 && S * HB / 2 <= kBlock, "head dim");
  static_assert(HB % 4 == 0 && KP >= 1, "heads per cluster");

  MEMRA_DYNAMIC_SMEM(unsigned char, smem, 16);
  const ClusterLayout L = cluster_layout(a.max_keys, D, HB);
  const int stride = L.stride;
  const float** keys = reinterpret_cast<const float**>(smem);      // [max_keys]
  float* lg = reinterpret_cast<float*>(smem + L.logit);            // [HB][stride]
  float* q_s = reinterpret_cast<float*>(smem + L.q);               // [D][HB]
  float* stage = reinterpret_cast<float*>(smem + L.stage);         // [kRing][kChunk][S]
  float* o_s = reinterpret_cast<float*>(smem + L.o);               // [HB][S]
  __shared__ float scratch[HB * kWarps];
  __shared__ int s_ncmp;

  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int row = blockIdx.y, h0 = static_cast<int>(blockIdx.x / kC) * HB;
  const int nh = min(HB, a.H - h0);  // a partial last group: heads ≥ nh run on q = 0, never written
  const int t = threadIdx.x, warp = t / kWarp, lane = t % kWarp;
  const int64_t pos = a.row_pos[row];
  const float* q = a.q + (static_cast<int64_t>(row) * a.H + h0) * D;
  for (int e = t; e < HB * D; e += kBlock) {
    const int u = e / D, i = e % D;
    q_s[i * HB + u] = u < nh ? q[e] : 0.0f;
  }
  const int n = key_table(a, row, keys, &s_ncmp);  // its barriers also publish q_s

  // Phase 3's key slices: chunk c (keys [64c, 64c + 64)) into ring buffer c % kRing as one
  // cp.async group (an empty group past the last chunk, so the group count stays uniform); thread t
  // copies the 16 bytes at column 4·(t % (S/4)) of keys t / (S/4) + i·kBlock/(S/4). Every copy is
  // 16 bytes at a 16-byte offset into a key row (a slice starts at rank·S floats, S a multiple of
  // 4), so one test of the rows' starts picks cp.async for all, or plain loads for all (a row off
  // 16 bytes: never from the backend's buffers; the ops check makes one). The first kRing − 1
  // chunks are asked for after the exchange's second cluster barrier: asked for before the logits
  // they slowed the logits' loads (run 132), before that barrier they were waited for in it (its
  // memory barrier: run 133).
  int misaligned = 0;
  for (int j = t; j < n; j += kBlock) misaligned |= static_cast<int>(reinterpret_cast<uintptr_t>(keys[j]) & 15);
  const bool aligned = __syncthreads_or(misaligned) == 0;
  const int slice = rank * S;
  const int n_chunks = (n + kChunk - 1) / kChunk;
  constexpr int kF4 = kChunk * S / 4;                   // 16-byte copies a chunk
  constexpr int NLD = (kF4 + kBlock - 1) / kBlock;     // … a thread (d = 64: half the threads one)
  const int col = (t % (S / 4)) * 4, jt = t / (S / 4);
  auto ring_chunk = [&](int c) {
    if (c < n_chunks) {
      const int j0 = c * kChunk, kc = min(kChunk, n - j0);
      float* dst = stage + (c % kRing) * kChunk * S + col;
#pragma unroll
      for (int l = 0; l < NLD; ++l) {
        const int jj = jt + l * (kBlock / (S / 4));
        if (t + l * kBlock < kF4 && jj < kc) {
          const float* src = keys[j0 + jj] + slice + col;
          if (aligned) {
            cp_async16(dst + jj * S, src, true);
          } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) dst[jj * S + e] = __ldg(src + e);
          }
        }
      }
    }
    cp_async_commit();
  };

  // 1. Logits of this block's keys. A warp takes KP keys at once (their loads in flight together);
  // each (head, key) is attention_kernel's chain: i = lane, lane + 32, … from +0, warp_sum, · scale.
  const int ch = (n + 4 * kC - 1) / (4 * kC) * 4, lo = min(n, rank * ch), hi = min(n, lo + ch);
  for (int j0 = lo + warp; j0 < hi; j0 += KP * kWarps) {
    const float* k[KP];
    float acc[KP][HB];
#pragma unroll
    for (int p = 0; p < KP; ++p) {
      const int j = j0 + p * kWarps;
      k[p] = keys[j < hi ? j : j0];  // a dead slot reads a live key and is dropped
#pragma unroll
      for (int u = 0; u < HB; ++u) acc[p][u] = 0.0f;
    }
#pragma unroll
    for (int c = 0; c < kPL; ++c) {
      const int i = lane + c * kWarp;
      float kv[KP], qv[HB];
#pragma unroll
      for (int p = 0; p < KP; ++p) kv[p] = __ldg(k[p] + i);  // keys are read-only in this kernel
#pragma unroll
      for (int v = 0; v < HB; v += 4) {
        const float4 q4 = *reinterpret_cast<const float4*>(q_s + i * HB + v);
        qv[v] = q4.x, qv[v + 1] = q4.y, qv[v + 2] = q4.z, qv[v + 3] = q4.w;
      }
#pragma unroll
      for (int p = 0; p < KP; ++p)
#pragma unroll
        for (int u = 0; u < HB; ++u) acc[p][u] = __fmaf_rn(qv[u], kv[p], acc[p][u]);
    }
#pragma unroll
    for (int p = 0; p < KP; ++p) {
      const int j = j0 + p * kWarps;
      if (j < hi)  // warp-uniform
#pragma unroll
        for (int u = 0; u < HB; ++u) {
          const float sum = warp_sum(acc[p][u]);
          if (lane == 0) lg[u * stride + j] = sum * a.scale;
        }
    }
  }

  // 2. Every block collects the cluster's logits, then runs the softmax of its HB heads (the same
  // in every block). The second cluster barrier keeps each block's logits unchanged (and the block
  // alive) until every peer has copied them.
  // Thread (u, x) copies head u's float4s at offsets 4x, 4x + 4·kTPH, … of every peer's range:
  // the ranges start at multiples of 4 (ch is one), so no float4 straddles two owners; one past
  // n within the row's padding is copied too and never read.
  cluster.sync();
  {
    const int u = t / kTPH, x = t % kTPH;
    for (int base = 4 * x; base < ch; base += 4 * kTPH)
#pragma unroll
      for (int r0 = 0; r0 < kC; r0 += kC / 2) {  // half the peers' loads in flight at once
        float4 v[kC / 2];
#pragma unroll
        for (int r = r0; r < r0 + kC / 2; ++r) {
          const int j = r * ch + base;
          if (r != rank && j < n) v[r - r0] = *reinterpret_cast<const float4*>(cluster.map_shared_rank(lg, r) + u * stride + j);
        }
#pragma unroll
        for (int r = r0; r < r0 + kC / 2; ++r) {
          const int j = r * ch + base;
          if (r != rank && j < n) *reinterpret_cast<float4*>(lg + u * stride + j) = v[r - r0];
        }
      }
  }
  cluster.sync();
  for (int c = 0; c + 1 < kRing; ++c) ring_chunk(c);

  float sink[HB], mx[HB], part[HB], denom[HB];
#pragma unroll
  for (int u = 0; u < HB; ++u) sink[u] = u < nh ? a.sink[h0 + u] : 0.0f, mx[u] = sink[u], part[u] = 0.0f;
  for (int j = t; j < n; j += kBlock)
#pragma unroll
    for (int u = 0; u < HB; ++u) mx[u] = fmaxf(mx[u], lg[u * stride + j]);
  block_max_heads<HB>(mx, scratch);
  for (int j = t; j < n; j += kBlock)
#pragma unroll
    for (int u = 0; u < HB; ++u) {
      const float p = expf(lg[u * stride + j] - mx[u]);
      lg[u * stride + j] = p;
      part[u] += p;
    }
  block_sum_heads<HB>(part, scratch);
#pragma unroll
  for (int u = 0; u < HB; ++u) denom[u] = expf(sink[u] - mx[u]) + part[u];
  for (int j = t; j < n; j += kBlock)
#pragma unroll
    for (int u = 0; u < HB; ++u) lg[u * stride + j] = lg[u * stride + j] / denom[u];

  // 3. o[u][slice + s] = Σ_j fma(p_uj, key_j[slice + s]), j ascending from +0. Thread (s, g) runs
  // the chains of heads 2g and 2g + 1 (one key value read for both; p as float4 over 4 keys): a
  // key value read by HB / 2 threads instead of HB halves the shared-memory reads that bound it.
  // Chunk c: its group done (kRing − 2 later groups may fly), the barrier publishes every thread's
  // copies (and, at c = 0, the softmax's p) and frees the buffer chunk c − 1 ran from, which chunk
  // c + kRing − 1 then fills.
  const int s = t % S, g = t / S;
  const bool chains = g < HB / 2;
  const float* p0 = lg + 2 * g * stride;
  const float* p1 = p0 + stride;
  float acc0 = 0.0f, acc1 = 0.0f;
  for (int c = 0; c < n_chunks; ++c) {
    cp_async_wait<kRing - 2>();
    __syncthreads();
    ring_chunk(c + kRing - 1);
    const float* buf = stage + (c % kRing) * kChunk * S;
    const int jb = c * kChunk, kc = min(kChunk, n - jb);
    if (chains) {
      int jj = 0;
#pragma unroll 4
      for (; jj + 4 <= kc; jj += 4) {
        const float k0 = buf[jj * S + s], k1 = buf[(jj + 1) * S + s], k2 = buf[(jj + 2) * S + s], k3 = buf[(jj + 3) * S + s];
        const float4 a0 = *reinterpret_cast<const float4*>(p0 + jb + jj);
        const float4 a1 = *reinterpret_cast<const float4*>(p1 + jb + jj);
        acc0 = __fmaf_rn(a0.x, k0, acc0);
        acc1 = __fmaf_rn(a1.x, k0, acc1);
        acc0 = __fmaf_rn(a0.y, k1, acc0);
        acc1 = __fmaf_rn(a1.y, k1, acc1);
        acc0 = __fmaf_rn(a0.z, k2, acc0);
        acc1 = __fmaf_rn(a1.z, k2, acc1);
        acc0 = __fmaf_rn(a0.w, k3, acc0);
        acc1 = __fmaf_rn(a1.w, k3, acc1);
      }
      for (; jj < kc; ++jj) {
        const float kv = buf[jj * S + s];
        acc0 = __fmaf_rn(p0[jb + jj], kv, acc0);
        acc1 = __fmaf_rn(p1[jb + jj], kv, acc1);
      }
    }
  }
  cp_async_wait<0>();  // no copy outlives the block (the empty tail groups)
  if (chains) o_s[2 * g * S + s] = acc0, o_s[(2 * g + 1) * S + s] = acc1;
  __syncthreads();
  // Inverse RoPE of the pairs (tail + 2p, tail + 2p + 1) in this slice: tail and the slice bounds
  // are even, so no pair straddles two blocks.
  const int tail = D - 2 * a.half;
  for (int e = t; e < HB * (S / 2); e += kBlock) {
    const int u = e / (S / 2), i = slice + 2 * (e % (S / 2));
    if (i >= tail) rope_pair(o_s + u * S + (i - slice), a.inv_freq[(i - tail) / 2], static_cast<int32_t>(pos), -1.0f);
  }
  __syncthreads();
  float* o = a.o + (static_cast<int64_t>(row) * a.H + h0) * D + slice;
  for (int e = t; e < nh * S; e += kBlock) o[(e / S) * D + e % S] = o_s[e];
}

using ClusterKernel = void (*)(AttentionArgs);

template <int HB>
ClusterKernel cluster_kernel_for(int d) {
  switch (d) {
    case 64: return attention_cluster_kernel<64, HB>;
    case 128: return attention_cluster_kernel<128, HB>;
    case 256: return attention_cluster_kernel<256, HB>;
    case 512: return attention_cluster_kernel<512, HB>;
    default: return nullptr;
  }
}

ClusterKernel cluster_kernel(int d, int heads) {
  return heads == 4 ? cluster_kernel_for<4>(d) : heads == 8 ? cluster_kernel_for<8>(d) : nullptr;
}

// MEMRA_CUDA_ATTN_CLUSTER: 0 = the cluster kernel off (A/B), 4 or 8 = that many heads per cluster,
// else by rows (cluster_heads).
int heads_setting() {
  static const int heads = switch_choice("MEMRA_CUDA_ATTN_CLUSTER", {0, 4, 8}, -1);
  return heads;
}

bool fits(const AttentionArgs& a, int heads) {
  if (!cluster_kernel(a.d, heads) || a.rows > 65535 || a.H < 1 || a.max_keys < 1 || a.half < 0 || 2 * a.half > a.d)
    return false;
  DeviceCaps caps;
  if (current_device_caps(caps) != cudaSuccess) return false;
  return caps.clusters && cluster_layout(a.max_keys, a.d, heads).bytes + 1024 <= static_cast<size_t>(caps.smem_optin);
}

// Heads per cluster when the caller leaves it open: 4 for one or two rows (a decode step: 128
// clusters' blocks fit the SMs in one wave, and 8 measured the same, run 47), 8 for more rows, where
// 4 took a wave per two rows or so (verify 6: 768 blocks at two per SM) and 8 halves the blocks.
int cluster_heads(const AttentionArgs& a) {
  const int set = heads_setting();
  if (set >= 0) return set;
  return a.rows >= 3 && fits(a, 8) ? 8 : 4;
}

}  // namespace

int attention_cluster_rows() {
  static const int rows = switch_count("MEMRA_CUDA_ATTN_CLUSTER_ROWS", kAttentionClusterRows);
  return rows;
}

bool attention_cluster_ok(const AttentionArgs& a, int heads) {
  if (heads == 0) heads = cluster_heads(a);
  return heads != 0 && fits(a, heads);
}

cudaError_t attention_cluster(const AttentionArgs& a, cudaStream_t stream, int heads) {
  if (a.rows == 0) return cudaSuccess;
  if (heads == 0) heads = cluster_heads(a);
  if (heads == 0 || !fits(a, heads) || !a.seqs || !a.row_seq || !a.row_pos || !a.q || !a.kv || !a.sink || !a.o ||
      a.o16 || a.q_raw || a.rows < 0 || a.W < 1 || (a.half > 0 && !a.inv_freq) || (a.kind == AttnKind::kCSA && (!a.selected || a.K < 1)) ||
      (a.kind != AttnKind::kSliding && a.m < 1))
    return cudaErrorInvalidValue;
  const ClusterKernel kernel = cluster_kernel(a.d, heads);
  const size_t smem = cluster_layout(a.max_keys, a.d, heads).bytes;
  const cudaError_t err = allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
  if (err != cudaSuccess) return err;
  const cudaLaunchAttribute cluster = cluster_of(kC);
  return launch_with(&cluster, 1, kernel, dim3(kC * ((a.H + heads - 1) / heads), a.rows), kBlock, smem, stream, a);
}

}  // namespace memra::cuda
