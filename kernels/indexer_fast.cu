// cuda-fast lightning-indexer scores on tensor cores (TF32 mma.sync m16n8k8), for rounds of many rows
// (a prefill). The exact kernels (indexer.cu) spend 8.6 G f32 FMAs on a 2048-token V4-Flash prefill's
// CSA layer in a fixed lane order (0.63 ms, latency-bound at one block an SM, run 152); here each
// row's scores are a matrix product S = Q·Kᵀ [Hi × entries] over di, then
//   score[t, s] = Σ_h relu(S[h, s]) · softmax_scale · (wi[t, h] · weight_scale)
// summed in the fragments' order (a lane's heads, then a butterfly over the lanes of an entry).
//
//   block   one row, up to 64 heads (MT m-tiles of 16; heads past Hi are zeros) staged TF32-rounded
//           in shared memory in fragment order (rows g, g + 8 side by side) with the head weights;
//           then chunks of 128 entries (blockIdx.y, + gridDim.y, …), each warp 16 of them: two
//           n-tiles × MT m-tiles of accumulators
//   k-steps a lane's float4 of dims 16j + 4t … + 3 of entry g of each n-tile fills its b-slots of
//           k-steps 2j (dims + 0, + 1) and 2j + 1 (+ 2, + 3); the same float4 of q's rows g and
//           g + 8 fill the a-slots (the reduction index in any order both operands agree on)
//   scores  relu · scale · weight a lane's heads, added over the m-tiles, then over the 8 lanes of
//           each entry pair (xor 4, 8, 16); lanes 0-3 write entries past no row's limit
//
// Not exact: TF32 rounds q and the keys (|δ| ≤ 2⁻¹¹ each), the tensor cores add in their own order,
// the heads in the butterfly's. A flipped top-k choice between near-tied entries is the cuda-fast
// realization's decision band (docs/bands.md); the ops test bounds each score by the rounding.
//
//   grid (rows, min(⌈max_visible / 128⌉, 8))   block 256   dynamic smem 8·MT·(2·di + 4)·4 + 16·MT·4 + 8·q_half
#include "common.cuh"
#include "device_caps.h"
#include "launch.cuh"
#include "mma_tf32.cuh"
#include "ops.h"
#include "rope.cuh"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / kWarp;
constexpr int kWarpEntries = 16;                          // two 8-entry n-tiles a warp
constexpr int kChunkEntries = kWarps * kWarpEntries;      // 128 entries a block's chunk
constexpr int kMaxChunkBlocks = 8;                        // blocks a row at most (each stages its query once)
constexpr int kMaxMTiles = 4;                             // heads ≤ 64
constexpr int kStage = 4;                                 // staging items a thread at once (two float4 loads each)

// Q in fragment order: rows g and g + 8 of an m-tile side by side, so a lane's A fragment of a k-step
// is one float4 (loading rows g and g + 8 as float4s apart took three register moves an mma to
// assemble the fragments, ~100 of the loop's 165 instructions at 64 heads: SASS, session 41). Head
// h = 16·mt + 8·hi + g, dim d = 16j + 4t + e sits at pair (mt, g) · pair_ld + 32j + 8t + 2e + hi; the
// pair stride ≡ 4 mod 32 puts pairs g, g + 1 of a float4 phase on disjoint banks.
int pair_ld(int di) { return 2 * di + 4; }
// Shared memory: Q, the head weights, then the RoPE turns (one cos / sin a pair, taken once a block).
size_t fast_smem(int Hi, int di, int q_half) {
  const int mt = (Hi + 15) / 16;
  return (static_cast<size_t>(8 * mt) * pair_ld(di) + 16 * mt) * sizeof(float) + static_cast<size_t>(q_half) * sizeof(RopeTurn);
}

template <int MT>
__global__ void __launch_bounds__(kBlock, 2) indexer_fast_kernel(IndexerArgs a, int pl) {
  pdl_begin();
  MEMRA_DYNAMIC_SMEM(float4, smem4, 16);
  float* Qs = reinterpret_cast<float*>(smem4);  // [8·MT][pl]: TF32-rounded q in fragment order (heads ≥ Hi: 0)
  float* ws = Qs + 8 * MT * pl;                 // [16·MT]: wi · weight_scale (heads ≥ Hi: 0)
  const int row = blockIdx.x, warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, g = lane / 4, t = lane % 4;
  const int64_t visible = (static_cast<int64_t>(a.row_pos[row]) + 1) / a.m;
  if (static_cast<int64_t>(blockIdx.y) * kChunkEntries >= visible) return;  // the whole block, before any barrier
  const int Hi = a.Hi, di = a.di, d4 = di / 4, items = 8 * MT * d4;
  const float4* q4 = reinterpret_cast<const float4*>(a.qi + static_cast<int64_t>(row) * Hi * di);
  const int rope4 = a.q_inv_freq ? (di - 2 * a.q_half) / 4 : d4;  // the first float4 of the RoPE dims
  RopeTurn* turns = reinterpret_cast<RopeTurn*>(ws + 16 * MT);     // [q_half]: rope_only's cos / sin, a row's angles
  // An item is float4 c of heads 16·mt + g and 16·mt + 8 + g (g = i % 8, the fastest: a float4 phase's
  // eight lanes then store to pairs g = 0…7, disjoint banks), so a thread writes the pair's two rows
  // interleaved as two float4s. kStage items a thread, all their loads in flight before any store.
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float4 v[kStage][2];
  auto load = [&](int i0) {
#pragma unroll
    for (int u = 0; u < kStage; ++u) {
      const int i = i0 + u * kBlock, c = i / 8 % d4, h = i / (8 * d4) * 16 + i % 8;
#pragma unroll
      for (int hi = 0; hi < 2; ++hi)
        v[u][hi] = i < items && h + 8 * hi < Hi ? q4[static_cast<int64_t>(h + 8 * hi) * d4 + c] : zero;
    }
  };
  load(threadIdx.x);  // the first items' loads in flight while the turns are taken (V4-Flash: all of them)
  const int wh = threadIdx.x;  // the head weight this thread stores (16·MT ≤ 64 < kBlock), loaded beside them
  const float wv = wh < 16 * MT && wh < Hi ? a.wi[static_cast<int64_t>(row) * Hi + wh] * a.weight_scale : 0.0f;
  if (a.q_inv_freq) {
    for (int p = threadIdx.x; p < a.q_half; p += kBlock) turns[p] = rope_turn(a.q_inv_freq[p], a.row_pos[row], 1.0f);
    __syncthreads();
  }
  for (int i0 = threadIdx.x; i0 < items; i0 += kStage * kBlock) {
    if (i0 != static_cast<int>(threadIdx.x)) load(i0);
#pragma unroll
    for (int u = 0; u < kStage; ++u) {
      const int i = i0 + u * kBlock, c = i / 8 % d4, pair = i / (8 * d4) * 8 + i % 8;
      if (i >= items) break;
      if (c >= rope4) {  // two RoPE pairs of each row, rotated in f32 as rope_only does, then rounded
        const int p = 2 * (c - rope4);
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          float pair0[2] = {v[u][hi].x, v[u][hi].y}, pair1[2] = {v[u][hi].z, v[u][hi].w};
          rope_apply(pair0, turns[p]);
          rope_apply(pair1, turns[p + 1]);
          v[u][hi] = make_float4(pair0[0], pair0[1], pair1[0], pair1[1]);
        }
      }
      float4* dst = reinterpret_cast<float4*>(Qs + pair * pl + 32 * (c / 4) + 8 * (c % 4));  // dims e 0, 1; then 2, 3
      dst[0] = make_float4(tf32f(v[u][0].x), tf32f(v[u][1].x), tf32f(v[u][0].y), tf32f(v[u][1].y));
      dst[1] = make_float4(tf32f(v[u][0].z), tf32f(v[u][1].z), tf32f(v[u][0].w), tf32f(v[u][1].w));
    }
  }
  if (wh < 16 * MT) ws[wh] = wv;
  __syncthreads();
  const float* entries = a.seqs[a.row_seq[row]].layers[a.layer].idx.entries;
  const float scale = a.softmax_scale;
  for (int64_t cy = blockIdx.y; cy * kChunkEntries < visible; cy += gridDim.y) {
    const int64_t s0 = cy * kChunkEntries + warp * kWarpEntries;
    if (s0 >= visible) continue;  // warp-uniform; no barrier follows
    // Entry g of n-tile n; one past the row's limit reads s0's key (finite) and is not written.
    const float* key[2];
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      const int64_t e = s0 + 8 * n + g;
      key[n] = entries + (e < visible ? e : s0) * di + 4 * t;
    }
    float acc[MT][2][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[mt][n][c] = 0.0f;
#pragma unroll 2
    for (int j = 0; j < di / 16; ++j) {
      float4 kv[2];
#pragma unroll
      for (int n = 0; n < 2; ++n) kv[n] = __ldg(reinterpret_cast<const float4*>(key[n] + 16 * j));
      uint32_t b[2][4];
#pragma unroll
      for (int n = 0; n < 2; ++n) b[n][0] = tf32(kv[n].x), b[n][1] = tf32(kv[n].y), b[n][2] = tf32(kv[n].z), b[n][3] = tf32(kv[n].w);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        // k-step 2j's fragment (rows g, g + 8 × dims 16j + 4t, + 1), then 2j + 1's (+ 2, + 3)
        const float* qf = Qs + (8 * mt + g) * pl + 32 * j + 8 * t;
        const float4 f0 = *reinterpret_cast<const float4*>(qf);
        const float4 f1 = *reinterpret_cast<const float4*>(qf + 4);
#pragma unroll
        for (int n = 0; n < 2; ++n) {
          mma_tf32(acc[mt][n], __float_as_uint(f0.x), __float_as_uint(f0.y), __float_as_uint(f0.z), __float_as_uint(f0.w),
                   b[n][0], b[n][1]);
          mma_tf32(acc[mt][n], __float_as_uint(f1.x), __float_as_uint(f1.y), __float_as_uint(f1.z), __float_as_uint(f1.w),
                   b[n][2], b[n][3]);
        }
      }
    }
    // acc[mt][n]: heads 16mt + g (c 0, 1) and + 8 (c 2, 3) × entries s0 + 8n + 2t (c 0, 2) and + 1 (c 1, 3).
    float part[2][2];
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        float s = 0.0f;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          s = __fmaf_rn(fmaxf(acc[mt][n][p], 0.0f) * scale, ws[16 * mt + g], s);
          s = __fmaf_rn(fmaxf(acc[mt][n][2 + p], 0.0f) * scale, ws[16 * mt + g + 8], s);
        }
#pragma unroll
        for (int off = 4; off < kWarp; off *= 2) s += __shfl_xor_sync(kFullMask, s, off);
        part[n][p] = s;
      }
    if (g == 0) {
      float* out = a.scores + static_cast<int64_t>(row) * a.score_stride;
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int p = 0; p < 2; ++p) {
          const int64_t e = s0 + 8 * n + 2 * t + p;
          if (e < visible) out[e] = part[n][p];
        }
    }
  }
}

using FastKernel = void (*)(IndexerArgs, int);
FastKernel fast_kernel(int Hi) {
  switch ((Hi + 15) / 16) {
    case 1: return indexer_fast_kernel<1>;
    case 2: return indexer_fast_kernel<2>;
    case 3: return indexer_fast_kernel<3>;
    case 4: return indexer_fast_kernel<4>;
    default: return nullptr;
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool indexer_fast_ok(const IndexerArgs& a) {
  DeviceCaps caps;
  if (current_device_caps(caps) != cudaSuccess) return false;
  const bool rope_ok = !a.q_inv_freq || (a.q_half >= 1 && 2 * a.q_half <= a.di && (a.di - 2 * a.q_half) % 4 == 0);
  return a.Hi >= 1 && a.Hi <= 16 * kMaxMTiles && a.di >= 16 && a.di % 16 == 0 && a.m >= 1 && aligned16(a.qi) && rope_ok &&
         fast_smem(a.Hi, a.di, a.q_inv_freq ? a.q_half : 0) <= static_cast<size_t>(caps.smem_optin);
}

cudaError_t indexer_scores_fast(const IndexerArgs& a, cudaStream_t stream) {
  if (a.rows == 0 || a.max_visible == 0) return cudaSuccess;
  if (!a.seqs || !a.row_seq || !a.row_pos || !a.qi || !a.wi || !a.scores || a.rows < 0 || a.max_visible < 0 || a.score_stride < a.max_visible || !indexer_fast_ok(a))
    return cudaErrorInvalidValue;
  const FastKernel kernel = fast_kernel(a.Hi);
  const size_t smem = fast_smem(a.Hi, a.di, a.q_inv_freq ? a.q_half : 0);
  cudaError_t err = allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
  if (err != cudaSuccess) return err;
  const int64_t chunks = (static_cast<int64_t>(a.max_visible) + kChunkEntries - 1) / kChunkEntries;
  const unsigned gy = static_cast<unsigned>(chunks < kMaxChunkBlocks ? chunks : kMaxChunkBlocks);
  return launch(kernel, dim3(static_cast<unsigned>(a.rows), gy), kBlock, smem, stream, a, pair_ld(a.di));
}

}  // namespace memra::cuda
