// Core attention (docs/architecture.md §3.7) for one (row, head) per block: the keys are the row's
// window (positions max(0, pos−W+1) … pos, oldest first: this round's kv rows for positions ≥ the
// sequence's pos0, the state's ring for older ones) followed by its compressed entries (HCA: every
// visible entry, ascending; CSA: the indexer's selection, ascending). K = V (MQA, one kv head).
//
//   logit_j = (q·key_j) · scale          one warp per key, lane-strided fma chain + warp_sum
//   mx      = max(sink, logit_j)         exact
//   p_j     = exp(logit_j − mx)
//   denom   = exp(sink − mx) + Σ_j p_j   thread-strided chain + block_sum<256>
//   o[i]    = Σ_j fma(p_j / denom, key_j[i])   j ascending, one thread per i
//   o       ← inverse RoPE at pos on the last 2·half dims
// Every step's order depends on the row's own key count only: the row's output is the same in any
// round, chunk or batch.
//
//   grid (rows, H)   block 256   dynamic smem: max_keys·(4 + 8) + 16 + d·4 bytes (key pointers, logits, o)
// window_update: grid rows, block 256: the last min(T, W) rows of each sequence into its ring (and
//   every row of a journaled sequence into its journal).
#include "ab_switch.h"
#include "attention_keys.cuh"
#include "common.cuh"
#include "device_caps.h"
#include "launch.cuh"
#include "ops.h"
#include "rope.cuh"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / kWarp;
constexpr int kWideBlock = 1024;  // attention_kernel for one or two rows
constexpr int kKeysAtOnce = 8;  // keys whose loads are in flight together (logits per warp; o per thread)

// The logits get kLogitPad floats of slack before o: the compiler's remainder loop of the output
// sum loads logit[j], logit[j + 1] as one 64-bit access when one key is left, so logit[max_keys]
// is read (and dropped); without the slack that word is o[0], which thread 0 writes meanwhile
// (a harmless read, but a WAR hazard for racecheck; seen on an H200, 2026-11-30).
constexpr int kLogitPad = 4;  // floats; keeps o 16-byte aligned

size_t attention_smem(int max_keys, int d) {
  return static_cast<size_t>(max_keys) * (sizeof(float) + sizeof(float*)) + kLogitPad * sizeof(float) +
         static_cast<size_t>(d) * sizeof(float);
}

// attention_heads_kernel's shared memory: the key table, then each head's logits at a stride of a
// multiple of 4 floats from a 16-byte boundary (the outputs read 4 keys' weights in one load), then
// o and q for each head.
__host__ __device__ inline size_t heads_keys_bytes(int max_keys) { return (static_cast<size_t>(max_keys) * sizeof(float*) + 15) / 16 * 16; }
__host__ __device__ inline int heads_logit_stride(int max_keys) { return (max_keys + kLogitPad + 3) / 4 * 4; }

size_t attention_heads_smem(int max_keys, int d, int heads) {
  return heads_keys_bytes(max_keys) +
         static_cast<size_t>(heads) * (static_cast<size_t>(heads_logit_stride(max_keys)) + 2 * static_cast<size_t>(d)) * sizeof(float);
}

// BLOCK = 256, or 1024 for one or two rows (a decode step): 64 blocks of 8 warps left the SMs at
// 12.5% occupancy, stalled on L1 scoreboards (ncu, bench/results/h200-20261201-25). The softmax's
// thread-strided loops and reductions stay on the first 256 threads (the other warps add +0 / the
// sink, which feeds block_sum<1024>'s butterfly exactly what block_sum<256>'s gets), the logits are
// per key and the outputs per dim: the bits do not depend on BLOCK.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) attention_kernel(AttentionArgs a) {
  constexpr int kW = BLOCK / kWarp;  // warps
  MEMRA_DYNAMIC_SMEM(unsigned char, smem, 16);
  const float** keys = reinterpret_cast<const float**>(smem);                     // [max_keys]
  float* logit = reinterpret_cast<float*>(smem + sizeof(float*) * a.max_keys);    // [max_keys]
  float* o_s = logit + a.max_keys + kLogitPad;                                    // [d]
  __shared__ float scratch[kW];
  __shared__ int s_ncmp;
  pdl_begin();

  const int row = blockIdx.x, h = blockIdx.y;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int d = a.d;
  const int64_t pos = a.row_pos[row];
  const int n_keys = key_table(a, row, keys, &s_ncmp);
  // Logits: a warp takes kKeysAtOnce of its keys together (independent sums, each the lane-strided
  // chain below), so that many loads are in flight per lane: one (row, head) block is bound by load
  // latency. Each key's sequence is the one-key loop's.
  const float* q = a.q + static_cast<int64_t>(row) * a.H * d + static_cast<int64_t>(h) * d;
  int j0 = warp;
  for (; j0 + (kKeysAtOnce - 1) * kW < n_keys; j0 += kKeysAtOnce * kW) {
    const float* k[kKeysAtOnce];
    float acc[kKeysAtOnce];
#pragma unroll
    for (int u = 0; u < kKeysAtOnce; ++u) k[u] = keys[j0 + u * kW], acc[u] = 0.0f;
    for (int i = lane; i < d; i += kWarp) {
      const float qi = q[i];
      float kv[kKeysAtOnce];
#pragma unroll
      for (int u = 0; u < kKeysAtOnce; ++u) kv[u] = k[u][i];
#pragma unroll
      for (int u = 0; u < kKeysAtOnce; ++u) acc[u] = __fmaf_rn(qi, kv[u], acc[u]);
    }
#pragma unroll
    for (int u = 0; u < kKeysAtOnce; ++u) {
      const float sum = warp_sum(acc[u]);
      if (lane == 0) logit[j0 + u * kW] = sum * a.scale;
    }
  }
  for (int j = j0; j < n_keys; j += kW) {
    const float* k = keys[j];
    float acc = 0.0f;
    for (int i = lane; i < d; i += kWarp) acc = __fmaf_rn(q[i], k[i], acc);
    acc = warp_sum(acc);
    if (lane == 0) logit[j] = acc * a.scale;
  }
  __syncthreads();

  const float sink = a.sink[h];
  const bool reducer = threadIdx.x < kBlock;  // the softmax's 256 threads
  float mx = sink;
  if (reducer)
    for (int j = threadIdx.x; j < n_keys; j += kBlock) mx = fmaxf(mx, logit[j]);
  mx = block_max<BLOCK>(mx, scratch);
  float part = 0.0f;
  if (reducer)
    for (int j = threadIdx.x; j < n_keys; j += kBlock) {
      const float p = expf(logit[j] - mx);
      logit[j] = p;
      part += p;
    }
  const float denom = expf(sink - mx) + block_sum<BLOCK>(part, scratch);
  if (reducer)
    for (int j = threadIdx.x; j < n_keys; j += kBlock) logit[j] = logit[j] / denom;
  __syncthreads();

  // o[i]: the j-ascending chain; a thread runs its two outputs i and i + kBlock side by side and
  // issues their key loads kKeysAtOnce keys at a time (latency, as above).
  for (int i0 = threadIdx.x; i0 < d; i0 += 2 * BLOCK) {
    const int i1 = i0 + BLOCK;
    const bool two = i1 < d;
    const int i1r = two ? i1 : i0;  // a valid address when there is no second output
    float acc0 = 0.0f, acc1 = 0.0f;
    int j = 0;
    for (; j + kKeysAtOnce <= n_keys; j += kKeysAtOnce) {
      float k0[kKeysAtOnce], k1[kKeysAtOnce];
#pragma unroll
      for (int u = 0; u < kKeysAtOnce; ++u) k0[u] = keys[j + u][i0], k1[u] = keys[j + u][i1r];
#pragma unroll
      for (int u = 0; u < kKeysAtOnce; ++u) {
        acc0 = __fmaf_rn(logit[j + u], k0[u], acc0);
        acc1 = __fmaf_rn(logit[j + u], k1[u], acc1);
      }
    }
    for (; j < n_keys; ++j) {
      acc0 = __fmaf_rn(logit[j], keys[j][i0], acc0);
      acc1 = __fmaf_rn(logit[j], keys[j][i1r], acc1);
    }
    o_s[i0] = acc0;
    if (two) o_s[i1] = acc1;
  }
  __syncthreads();
  float* tail = o_s + (d - 2 * a.half);
  for (int i = threadIdx.x; i < a.half; i += BLOCK) rope_pair(tail + 2 * i, a.inv_freq[i], static_cast<int32_t>(pos), -1.0f);
  __syncthreads();
  float* o = a.o + static_cast<int64_t>(row) * a.H * d + static_cast<int64_t>(h) * d;
  for (int i = threadIdx.x; i < d; i += BLOCK) o[i] = o_s[i];
}

// HB heads of one row per block (rounds of many rows: a prefill, a large batch). The keys are
// shared by all heads (MQA), so each key is read once for HB heads instead of once per head: a
// 2048-row prefill's attention was bound by the L2 → SM traffic of re-reading them per head. Every
// (head, key) logit, each head's softmax (one after the other, each with the block reductions of
// attention_kernel) and every (head, i) output chain perform attention_kernel's operations in its
// order, so the bits do not depend on HB (the launcher picks HB from the row count).
//
// The FMAs fed by few shared-memory loads (batch 64's C attention ran at ~10% of the FMA rate with
// one q_s or logit load a FMA, a key a warp and an output a thread: 0.70 → 0.43 ms on an H200 in
// run 178): a warp runs kLogitKeys consecutive keys' logit chains side by side (one q_s load for
// kLogitKeys FMAs), a thread two outputs i, i + kBlock with a head's 4 key weights in one 16-byte
// load. Each chain is the one-key form's, in its order: the same bits.
constexpr int kLogitKeys = 4;
constexpr int kOutDims = 2;   // output dims a thread
constexpr int kOutKeys = 8;   // keys a step of the output chains: a head's weights in two 16-byte loads

template <int HB>
__global__ void __launch_bounds__(kBlock) attention_heads_kernel(AttentionArgs a) {
  MEMRA_DYNAMIC_SMEM(unsigned char, smem, 16);
  const int d = a.d, stride = heads_logit_stride(a.max_keys);
  const float** keys = reinterpret_cast<const float**>(smem);                         // [max_keys]
  float* logit = reinterpret_cast<float*>(smem + heads_keys_bytes(a.max_keys));      // [HB][stride], 16-byte rows
  float* o_s = logit + HB * stride;                                                   // [HB][d]
  float* q_s = o_s + HB * d;                                                          // [HB][d]
  __shared__ float scratch[kWarps];
  __shared__ int s_ncmp;
  pdl_begin();

  const int row = blockIdx.x, h0 = blockIdx.y * HB;
  const int nh = min(HB, a.H - h0);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t pos = a.row_pos[row];
  const float* q = a.q + static_cast<int64_t>(row) * a.H * d + static_cast<int64_t>(h0) * d;
  for (int i = threadIdx.x; i < HB * d; i += kBlock) q_s[i] = i < nh * d ? q[i] : 0.0f;
  const int n_keys = key_table(a, row, keys, &s_ncmp);  // its barriers also publish q_s

  // Logits: each key's HB chains lane-strided over one warp, kLogitKeys consecutive keys a warp;
  // past the last key a lane re-reads the last one and drops the sums.
  constexpr int KB = kLogitKeys;  // keys a warp
  for (int j0 = warp * KB; j0 < n_keys; j0 += kWarps * KB) {
    const float* k[KB];
    float acc[KB][HB];
#pragma unroll
    for (int t = 0; t < KB; ++t) {
      k[t] = keys[min(j0 + t, n_keys - 1)];
#pragma unroll
      for (int u = 0; u < HB; ++u) acc[t][u] = 0.0f;
    }
    for (int i = lane; i < d; i += kWarp) {
      float kv[KB];
#pragma unroll
      for (int t = 0; t < KB; ++t) kv[t] = k[t][i];
#pragma unroll
      for (int u = 0; u < HB; ++u) {
        const float qv = q_s[u * d + i];
#pragma unroll
        for (int t = 0; t < KB; ++t) acc[t][u] = __fmaf_rn(qv, kv[t], acc[t][u]);
      }
    }
#pragma unroll
    for (int t = 0; t < KB; ++t)
#pragma unroll
      for (int u = 0; u < HB; ++u) {
        const float sum = warp_sum(acc[t][u]);
        if (lane == 0 && j0 + t < n_keys) logit[u * stride + j0 + t] = sum * a.scale;
      }
  }
  __syncthreads();

  for (int u = 0; u < nh; ++u) {  // each head's softmax, as attention_kernel's
    float* lg = logit + u * stride;
    const float sink = a.sink[h0 + u];
    float mx = sink;
    for (int j = threadIdx.x; j < n_keys; j += kBlock) mx = fmaxf(mx, lg[j]);
    mx = block_max<kBlock>(mx, scratch);
    float part = 0.0f;
    for (int j = threadIdx.x; j < n_keys; j += kBlock) {
      const float p = expf(lg[j] - mx);
      lg[j] = p;
      part += p;
    }
    const float denom = expf(sink - mx) + block_sum<kBlock>(part, scratch);
    for (int j = threadIdx.x; j < n_keys; j += kBlock) lg[j] = lg[j] / denom;
    __syncthreads();
  }

  // o[u][i]: the j-ascending chains of HB heads side by side, each key value loaded once: kOutDims
  // dims a thread, kOutKeys keys a step, each head's 8 weights in two 16-byte loads (j a multiple
  // of 8, stride of 4).
  constexpr int NI = kOutDims, KS = kOutKeys;
  static_assert(KS == 8, "the weights' two float4 loads below");
  for (int i0 = threadIdx.x; i0 < d; i0 += NI * kBlock) {
    // output c's dim, or i0 (a valid address) where the thread has no such output
    auto idx = [&](int c) { return i0 + c * kBlock < d ? i0 + c * kBlock : i0; };
    float acc[NI][HB];
#pragma unroll
    for (int c = 0; c < NI; ++c)
#pragma unroll
      for (int u = 0; u < HB; ++u) acc[c][u] = 0.0f;
    int j = 0;
    for (; j + KS <= n_keys; j += KS) {
      float kv[NI][KS];
#pragma unroll
      for (int t = 0; t < KS; ++t) {
        const float* kp = keys[j + t];
#pragma unroll
        for (int c = 0; c < NI; ++c) kv[c][t] = kp[idx(c)];
      }
#pragma unroll
      for (int u = 0; u < HB; ++u) {
        const float4 pa = *reinterpret_cast<const float4*>(logit + u * stride + j);
        const float4 pb = *reinterpret_cast<const float4*>(logit + u * stride + j + 4);
        const float p[KS] = {pa.x, pa.y, pa.z, pa.w, pb.x, pb.y, pb.z, pb.w};
#pragma unroll
        for (int t = 0; t < KS; ++t)
#pragma unroll
          for (int c = 0; c < NI; ++c) acc[c][u] = __fmaf_rn(p[t], kv[c][t], acc[c][u]);
      }
    }
    for (; j < n_keys; ++j) {
      float kv[NI];
#pragma unroll
      for (int c = 0; c < NI; ++c) kv[c] = keys[j][idx(c)];
#pragma unroll
      for (int u = 0; u < HB; ++u) {
        const float p = logit[u * stride + j];
#pragma unroll
        for (int c = 0; c < NI; ++c) acc[c][u] = __fmaf_rn(p, kv[c], acc[c][u]);
      }
    }
#pragma unroll
    for (int c = 0; c < NI; ++c)
#pragma unroll
      for (int u = 0; u < HB; ++u)
        if (i0 + c * kBlock < d) o_s[u * d + i0 + c * kBlock] = acc[c][u];
  }
  __syncthreads();
  for (int t = threadIdx.x; t < nh * a.half; t += kBlock) {
    const int u = t / a.half, i = t % a.half;
    rope_pair(o_s + u * d + (d - 2 * a.half) + 2 * i, a.inv_freq[i], static_cast<int32_t>(pos), -1.0f);
  }
  __syncthreads();
  float* o = a.o + static_cast<int64_t>(row) * a.H * d + static_cast<int64_t>(h0) * d;
  for (int i = threadIdx.x; i < nh * d; i += kBlock) o[i] = o_s[i];
}

__global__ void __launch_bounds__(kBlock) window_update_kernel(const SeqDesc* seqs, const int32_t* row_seq,
                                                               const int32_t* row_pos, int layer, const float* kv,
                                                               int d, int W) {
  pdl_begin();
  const int row = blockIdx.x;
  const SeqDesc& s = seqs[row_seq[row]];
  const int64_t pos = row_pos[row];
  const float* src = kv + static_cast<int64_t>(row) * d;
  if (s.journal_row >= 0) {  // every row to the journal (State::rewind keeping rows: keep_rows.cu)
    float* j = s.layers[layer].journal_window + (s.journal_row + (pos - s.pos0)) * d;
    for (int i = threadIdx.x; i < d; i += kBlock) j[i] = src[i];
  }
  if (pos - s.pos0 < static_cast<int64_t>(s.T) - W) return;  // overwritten later in this round
  float* dst = s.layers[layer].window + (pos % W) * d;
  for (int i = threadIdx.x; i < d; i += kBlock) dst[i] = src[i];
}

// The heads-a-block counts attention() can be asked for: its `heads`, and from 2 MEMRA_CUDA_ATTN_HEADS.
constexpr bool heads_form(int n) { return n == 1 || n == 2 || n == 4 || n == 8 || n == 16; }

}  // namespace

int attention_max_keys(int d, int device) {
  int optin = 0;
  if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) return 0;
  const int64_t room = static_cast<int64_t>(optin) - static_cast<int64_t>(d) * 4 - 1024;  // static smem margin
  return room > 0 ? static_cast<int>(room / static_cast<int64_t>(sizeof(float) + sizeof(float*))) : 0;
}

cudaError_t attention(const AttentionArgs& a, cudaStream_t stream, int heads) {
  if (a.rows == 0) return cudaSuccess;
  if (!a.seqs || !a.row_seq || !a.row_pos || !a.q || !a.kv || !a.sink || !a.o || a.o16 || a.q_raw || a.rows < 0 || a.H < 1 ||
      a.H > 65535 || a.d <= 0 || a.W < 1 || a.max_keys < 1 || a.half < 0 || 2 * a.half > a.d ||
      (a.half > 0 && !a.inv_freq) || (a.kind == AttnKind::kCSA && (!a.selected || a.K < 1)) ||
      (a.kind != AttnKind::kSliding && a.m < 1) || (heads != 0 && !heads_form(heads)))
    return cudaErrorInvalidValue;
  // Up to 10 rows (kAttentionClusterRows): the cluster kernel (attention_cluster.cu) reads each key
  // once per 4-8 heads and spreads a (row, head group) over 8 SMs, where the heads kernel's rows × H / HB
  // blocks leave SMs idle. Bits do not depend on this choice.
  if (heads == 0 && a.rows <= attention_cluster_rows() && attention_cluster_ok(a)) return attention_cluster(a, stream);
  // Heads per block: 1 for few rows (where the cluster kernel cannot run: as many blocks as possible),
  // more for many rows (each key read once for HB heads), as far as shared memory allows. Bits do not
  // depend on it.
  DeviceCaps caps;
  if (const cudaError_t err = current_device_caps(caps); err != cudaSuccess) return err;
  static const int env_heads = switch_count("MEMRA_CUDA_ATTN_HEADS", 0);
  // Past the cluster kernel's rows, 4 heads a block (measured against it: kAttentionClusterRows).
  // From 64 rows, 16 heads a block where that still makes 256 blocks (64 rows × 64 heads: each key
  // read from L2 by half as many blocks; batch 64's C attention 0.43 → 0.36 ms, run 179), else 8
  // (32 rows × 16 heads, 128 blocks, ran 3.5% slower at batch 32).
  const int by_rows = a.rows >= 64 ? (static_cast<int64_t>(a.rows) * ((a.H + 15) / 16) >= 256 ? 16 : 8)
                      : a.rows > kAttentionClusterRows ? 4 : 1;
  const int want = heads ? heads : env_heads > 1 && heads_form(env_heads) ? env_heads : by_rows;
  int hb = want;
  while (hb > 1 && attention_heads_smem(a.max_keys, a.d, hb) + 1024 > static_cast<size_t>(caps.smem_optin)) hb /= 2;
  if (heads && hb != heads) return cudaErrorNotSupported;
  if (hb == 1) {
    const size_t smem = attention_smem(a.max_keys, a.d);
    auto launch1 = [&](auto kernel, int threads) {
      cudaError_t e = allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
      if (e != cudaSuccess) return e;
      return launch(kernel, dim3(a.rows, a.H), threads, smem, stream, a);
    };
    if (a.rows <= 2) return launch1(attention_kernel<kWideBlock>, kWideBlock);
    return launch1(attention_kernel<kBlock>, kBlock);
  }
  auto launch_heads = [&](auto kernel, int n) {
    const size_t smem = attention_heads_smem(a.max_keys, a.d, n);
    cudaError_t e = allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
    if (e != cudaSuccess) return e;
    return launch(kernel, dim3(a.rows, (a.H + n - 1) / n), kBlock, smem, stream, a);
  };
  if (hb == 16) return launch_heads(attention_heads_kernel<16>, 16);
  if (hb == 8) return launch_heads(attention_heads_kernel<8>, 8);
  if (hb == 4) return launch_heads(attention_heads_kernel<4>, 4);
  return launch_heads(attention_heads_kernel<2>, 2);
}

cudaError_t window_update(const SeqDesc* seqs, const int32_t* row_seq, const int32_t* row_pos, int layer, int rows,
                          const float* kv, int d, int W, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!seqs || !row_seq || !row_pos || !kv || rows < 0 || d <= 0 || W < 1) return cudaErrorInvalidValue;
  return launch(window_update_kernel, rows, kBlock, 0, stream, seqs, row_seq, row_pos, layer, kv, d, W);
}

}  // namespace memra::cuda
