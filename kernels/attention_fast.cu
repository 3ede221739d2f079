// cuda-fast core attention on tensor cores (TF32 mma.sync m16n8k8): the exact kernels
// (attention.cu) compute a 2048-row prefill's CSA attention as 2048 × 64 heads × 640 keys × 512 dims
// of f32 FMAs, twice (logits, outputs), bound by the f32 FMA rate (bench/NOTES.md, round 4). Here a
// block takes one row and 32 heads (MQA: the heads share the keys), so both products are matrix
// products: S = Q·Kᵀ [32 × keys] and O = P·K [32 × d].
//
//   pass 1  each warp takes 32-key tiles (tile = warp, warp + 8, …): its 32 heads × 32 keys over
//           all d dims, q's fragments by ldmatrix from shared memory (staged once, TF32-rounded,
//           in k-step order), the keys straight from global memory into the b-slots (each key row
//           read by one warp of the block; a ring of four 16-dim groups, three ahead), S into
//           shared memory
//   softmax one pass over S (a warp's four head rows side by side): mx = max(sink, pass 1's row
//           maxima), p = exp(l − mx) TF32-rounded (0 past the keys), 1 / (exp(sink − mx) + Σ p)
//           kept for the outputs
//   pass 2  each warp takes 32-dim output slices for all keys (each key's slice read by one warp),
//           p's fragments by ldmatrix, the keys from global memory through a ring of six 8-key
//           steps whose first five are asked for before the softmax
//   output  the accumulators times the row's 1 / denominator to global memory (heads ≥ H not
//           written), then the inverse RoPE of the last 2·half dims over the block's rows; with
//           o16 the outputs go out rounded to bf16 / f16 (the output projection's GEMM input), the
//           last 2·half dims through Q's free table so they are rotated in f32 before rounding
// The reduction index of either product may be visited in any order as long as both operands agree,
// and pass 2's output columns may map to dims in any order the stores follow: a lane's float4 of a
// key row fills its b-slots of two k-steps (pass 1) or of four n-tiles (pass 2) (comments below).
//
// Measured (runs 140-143, a 2048-token V4-Flash prefill): CSA 3.45 → 1.47 ms, HCA 1.59 → 0.80 ms
// against the WMMA kernel this replaced (16 × 16 tiles a warp with every key staged through shared
// memory: bound by shared-memory reads). What holds it now: one block of 8 warps an SM (207
// registers, 156 KB of shared memory), latency more than bandwidth (L2 at 40%).
//
// Not exact: TF32 rounds q, k and p to 10 mantissa bits (round to nearest, |δ| ≤ 2⁻¹¹), the sums are
// f32 in the tensor cores' order. The ops test derives the band from that (check_attention_fast).
// The exact kernels keep the rows this one does not take (attention_fast_ok).
//
// With q_raw the query heads' norm_rope happens in the staging (above: its bits, one pass over q less).
//
//   grid (rows, ceil(H / 32))   block 256   dynamic smem (fast_smem): S, Q, the softmax's row tables, the key table
#include "ab_switch.h"
#include "attention_keys.cuh"
#include "common.cuh"
#include "device_caps.h"
#include "half_store.cuh"
#include "launch.cuh"
#include "mma_tf32.cuh"
#include "norm_row.cuh"
#include "ops.h"
#include "rope.cuh"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / kWarp;
constexpr int kHeads = 32;    // heads per block: two 16-row m-tiles
constexpr int kKeyTile = 32;  // pass 1: keys per warp tile (four 8-key n-tiles); the key table's padding
constexpr int kSlice = 32;    // pass 2: output dims per n-tile group (four 8-column n-tiles)

// Row strides (floats) ≡ 4 mod 32: the eight 16-byte rows of each ldmatrix phase on distinct banks.
__host__ __device__ constexpr int q_stride(int d) { return d + 4; }
int round_up(int v, int m) { return (v + m - 1) / m * m; }
int s_stride(int max_keys) { return round_up(max_keys, kKeyTile) + 4; }
// The softmax's small tables: each warp's row maxima from pass 1, then 1 / denominator a row.
constexpr int kRowTables = kWarps * kHeads + kHeads;
size_t fast_smem(int max_keys, int d) {
  return (static_cast<size_t>(kHeads) * s_stride(max_keys) + static_cast<size_t>(kHeads) * q_stride(d) + kRowTables) *
             sizeof(float) +
         static_cast<size_t>(round_up(max_keys, kKeyTile)) * sizeof(float*);
}

// An m16n8k8 A fragment (rows r0 … r0 + 15, cols c0 … c0 + 7 of a row-major f32 array in shared
// memory, stride ld floats) by one ldmatrix.x4: each 32-bit element is two b16 halves, so the four
// 8 × 8 b16 matrices (rows 0-7 / 8-15 × cols 0-3 / 4-7) land as a0 … a3 in order, with no register
// moves (building the fragment from float2 / float4 loads cost ~2 moves an mma, run 141).
__device__ __forceinline__ void load_a(uint32_t (&r)[4], const float* base, int ld, int lane) {
  const float* p = base + ((lane % 8) + 8 * ((lane / 8) % 2)) * ld + 4 * (lane / 16);
#if defined(MEMRA_CUDA_EMU)
  emu::ldmatrix_x4(r, p);
#else
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}

__device__ __forceinline__ float comp(const float4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }
__device__ __forceinline__ float4 load_key(const float* k) { return __ldg(reinterpret_cast<const float4*>(k)); }

// Pass 2's split of the 2 m-tiles × d / 32 dim slices over the 8 warps: MW m-tiles and SW slices
// a warp (d = 512: 2 × 2, all warps; 256: 2 × 1; 128: 1 × 1; 64: 1 × 1 on four warps).
template <int D>
struct Pass2Split {
  static constexpr int kSlices = D / kSlice;
  static constexpr int MW = D >= 256 ? 2 : 1;
  static constexpr int SW = D >= 512 ? D / 256 : 1;
  static constexpr int kGroups = kSlices / SW;  // slice groups; warp w: group w % kGroups, m-tiles from w / kGroups
  static constexpr int kActive = kGroups * (2 / MW);
  static_assert(kActive <= kWarps, "pass 2 needs more warps than the block has");
};

// kMinBlocks 2: two blocks an SM where their shared memory fits (a few hundred keys: HCA at 2k), so
// one block's staging, barriers and softmax overlap the other's passes; the same arithmetic in the
// same order (only the key rings are shallower, to fit 128 registers), so the same bits.
// flags: kRowsDown: block x takes row rows − 1 − x. A prefill's later rows attend to more keys (CSA:
// up to 128 + 512 at 2k, against 1 for row 0) and blocks start in x order, so the heaviest go first
// and the launch's last wave is its lightest (longest first: a shorter tail); the same bits.
// kExp2: the softmax's exponentials as one ex2.approx of an FMA (below); other bits.
constexpr unsigned kRowsDown = 1, kExp2 = 2;

__device__ __forceinline__ float ex2_approx(float x) {
#if defined(MEMRA_CUDA_EMU)
  return emu::ex2_approx_ftz(x);
#else
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#endif
}

template <int D, int kMinBlocks>
__global__ void __launch_bounds__(kBlock, kMinBlocks) attention_fast_kernel(AttentionArgs a, int s_ld, unsigned flags) {
  pdl_begin();
  constexpr int QS = q_stride(D), MT = kHeads / 16;  // two m-tiles of heads
  MEMRA_DYNAMIC_SMEM(unsigned char, smem, 128);
  float* S = reinterpret_cast<float*>(smem);  // [kHeads][s_ld]: logits, then p (TF32-rounded, 0 past the keys)
  float* Qs = S + kHeads * s_ld;              // [kHeads][QS]: TF32-rounded q (heads past H: 0)
  float* rowmax = Qs + kHeads * QS;           // [kWarps][kHeads]: pass 1's largest logit a warp and head row (−inf: none)
  float* inv_den = rowmax + kWarps * kHeads;  // [kHeads]: the softmax's 1 / denominator, applied to the outputs
  const float** keys = reinterpret_cast<const float**>(inv_den + kHeads);  // [round_up(keys, 32)]
  __shared__ int s_ncmp;

  const int row = flags & kRowsDown ? a.rows - 1 - static_cast<int>(blockIdx.x) : static_cast<int>(blockIdx.x);
  const int h0 = blockIdx.y * kHeads;
  const int nh = min(kHeads, a.H - h0);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, g = lane / 4, t = lane % 4;
  const int64_t pos = a.row_pos[row];
  const float* q = a.q + (static_cast<int64_t>(row) * a.H + h0) * D;
  // Q in k-step order: a lane's float4 of keys holds dims 16u + 4t … + 3, which pass 1 feeds to k-steps
  // 2u (slots t, t + 4: dims + 0, + 1) and 2u + 1 (+ 2, + 3), so q's dim 16u + 4t + 2s + w sits at
  // column 16u + 8s + 4w + t, where ldmatrix's natural order finds it.
  if (!a.q_raw) {
#pragma unroll  // all of a thread's q loads in flight at once
    for (int i = threadIdx.x; i < kHeads * D / 4; i += kBlock) {
      const int hh = i / (D / 4), c = (i % (D / 4)) * 4, u = c / 16, tq = (c % 16) / 4;
      const float4 v = hh < nh ? *reinterpret_cast<const float4*>(q + static_cast<int64_t>(hh) * D + c) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      float* dst = Qs + hh * QS + 16 * u + tq;
      dst[0] = tf32f(v.x), dst[4] = tf32f(v.y), dst[8] = tf32f(v.z), dst[12] = tf32f(v.w);
    }
  } else {
    // The query heads' norm_rope here: warp w takes heads w, w + 8, w + 16, w + 24, a head as
    // norm_rope_warp_kernel takes a segment (lane l plays norm_row's threads l, l + 32, …: its bits),
    // v·r into Q's columns (TF32-rounded, except the RoPE dims: rotated in f32 first, as norm_rope
    // does after its norm). All four heads' loads in flight at once (one round trip, not four), and
    // one cosf / sinf a dim pair for the four heads.
    constexpr int kPer = D > kNormBlock ? D / kNormBlock : 1;
    constexpr int kPlayed = kNormBlock / kWarp, kMine = kHeads / kWarps;
    const int rope0 = D - 2 * a.half;
    auto col = [](int i) { return 16 * (i / 16) + (i % 16) / 4 + 4 * (i % 4); };
    float v[kMine][kPlayed][kPer];
#pragma unroll
    for (int j = 0; j < kMine; ++j)
#pragma unroll
      for (int k = 0; k < kPlayed; ++k)
#pragma unroll
        for (int u = 0; u < kPer; ++u) {
          const int hh = warp + kWarps * j, i = lane + k * kWarp + u * kNormBlock;
          v[j][k][u] = hh < nh && i < D ? q[static_cast<int64_t>(hh) * D + i] : 0.0f;
        }
#pragma unroll
    for (int j = 0; j < kMine; ++j) {
      const int hh = warp + kWarps * j;
      const float r = hh < nh ? played_rms_inverse(v[j], D, a.q_eps) : 0.0f;  // (warp-uniform) heads ≥ H: zeros
#pragma unroll
      for (int k = 0; k < kPlayed; ++k)
#pragma unroll
        for (int u = 0; u < kPer; ++u) {
          const int i = lane + k * kWarp + u * kNormBlock;
          if (i < D) Qs[hh * QS + col(i)] = i < rope0 ? tf32f(v[j][k][u] * r) : v[j][k][u] * r;
        }
    }
    __syncwarp();  // the rotation reads values other lanes normalised
    for (int p = lane; p < a.half; p += kWarp) {
      const RopeTurn turn = rope_turn(a.inv_freq[p], static_cast<int32_t>(pos), 1.0f);
      const int c0 = col(rope0 + 2 * p), c1 = col(rope0 + 2 * p + 1);
#pragma unroll
      for (int j = 0; j < kMine; ++j) {
        float* qrow = Qs + (warp + kWarps * j) * QS;
        float pair[2] = {qrow[c0], qrow[c1]};
        rope_apply(pair, turn);
        qrow[c0] = tf32f(pair[0]), qrow[c1] = tf32f(pair[1]);
      }
    }
  }
  const int n_keys = key_table(a, row, keys, &s_ncmp);  // its barriers also publish Qs
  const int n_pad = (n_keys + kKeyTile - 1) / kKeyTile * kKeyTile;
  // Padding keys read a real row (finite); their logits are never used and their p is 0.
  for (int j = n_keys + threadIdx.x; j < n_pad; j += kBlock) keys[j] = keys[0];
  __syncthreads();

  // Pass 1: a lane's float4 of dims 16u + 4t … + 3 of key g of each n-tile gives its b-slots of k-steps
  // 2u and 2u + 1 (Q's columns above); the keys' loads a ring of four 16-dim groups, three ahead.
  {
    constexpr int G = D / 16, kRing = kMinBlocks == 1 ? 4 : 2;  // a divisor of G
    float rmax[MT][2];  // rows g, g + 8 of each m-tile, over this lane's keys below n_keys
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) rmax[mt][0] = rmax[mt][1] = -INFINITY;
    for (int tile = warp; tile * kKeyTile < n_keys; tile += kWarps) {
      const int k0 = tile * kKeyTile;
      const float* kp[4];
#pragma unroll
      for (int n = 0; n < 4; ++n) kp[n] = keys[k0 + 8 * n + g] + 4 * t;
      float acc[MT][4][4] = {};
      float4 kb[kRing][4];
#pragma unroll
      for (int r = 0; r < kRing - 1; ++r)
#pragma unroll
        for (int n = 0; n < 4; ++n) kb[r][n] = load_key(kp[n] + 16 * r);
#pragma unroll 1
      for (int u0 = 0; u0 < G; u0 += kRing) {
#pragma unroll
        for (int r = 0; r < kRing; ++r) {
          const int u = u0 + r;
          if (u + kRing - 1 < G)
#pragma unroll
            for (int n = 0; n < 4; ++n) kb[(r + kRing - 1) % kRing][n] = load_key(kp[n] + 16 * (u + kRing - 1));
#pragma unroll
          for (int s = 0; s < 2; ++s) {
            uint32_t fa[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) load_a(fa[mt], Qs + 16 * mt * QS + 16 * u + 8 * s, QS, lane);
#pragma unroll
            for (int n = 0; n < 4; ++n) {
              const uint32_t b0 = tf32(comp(kb[r][n], 2 * s)), b1 = tf32(comp(kb[r][n], 2 * s + 1));
#pragma unroll
              for (int mt = 0; mt < MT; ++mt) mma_tf32(acc[mt][n], fa[mt][0], fa[mt][1], fa[mt][2], fa[mt][3], b0, b1);
            }
          }
        }
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int n = 0; n < 4; ++n) {
          const int key = k0 + 8 * n + 2 * t;
          float* s0 = S + (16 * mt + g) * s_ld + key;
          *reinterpret_cast<float2*>(s0) = make_float2(acc[mt][n][0], acc[mt][n][1]);
          *reinterpret_cast<float2*>(s0 + 8 * s_ld) = make_float2(acc[mt][n][2], acc[mt][n][3]);
#pragma unroll
          for (int c = 0; c < 2; ++c)
            if (key + c < n_keys)
              rmax[mt][0] = fmaxf(rmax[mt][0], acc[mt][n][c]), rmax[mt][1] = fmaxf(rmax[mt][1], acc[mt][n][2 + c]);
        }
    }
    // The warp's row maxima over its four lanes of a row, for the softmax's one pass.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h8 = 0; h8 < 2; ++h8) {
        float v = rmax[mt][h8];
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
        if (t == 0) rowmax[warp * kHeads + 16 * mt + 8 * h8 + g] = v;
      }
  }
  __syncthreads();

  // Pass 2, set up here (its first loads go out before the softmax). k-step j covers keys 8j … 8j + 7
  // in order (slots t, t + 4: keys 8j + t, 8j + t + 4; p's fragment by ldmatrix). Within a 32-dim
  // slice at b, n-tile v's column c is dim b + 4·(c / 2) + 16·(c % 2) + v: a lane's float4 of a key
  // at b + 4·(g / 2) + 16·(g % 2) gives the four n-tiles' b-slot, and its accumulators c0 / c1
  // (columns 2t, 2t + 1) hold dims b + 4t + v and b + 16 + 4t + v: one float4 store a lane, the four
  // lanes of a head row 64 contiguous bytes.
  using Split = Pass2Split<D>;
  constexpr int MW = Split::MW, SW = Split::SW;
  const int64_t out0 = (static_cast<int64_t>(row) * a.H + h0) * D;  // the block's first output element
  float* orow = a.o ? a.o + out0 : nullptr;
  const bool bf16_out = a.o16_type == WType::kBF16;
  __nv_bfloat16* o16bf = a.o16 ? static_cast<__nv_bfloat16*>(a.o16) + out0 : nullptr;
  __half* o16h = a.o16 ? static_cast<__half*>(a.o16) + out0 : nullptr;
  const int rope0 = D - 2 * a.half;  // the dims the inverse RoPE rotates, to D
  const bool active = warp < Split::kActive;
  const int m0 = (warp / Split::kGroups) * MW, dim0 = (warp % Split::kGroups) * SW * kSlice;
  const int boff = dim0 + 4 * (g / 2) + 16 * (g % 2);
  // The keys' loads a ring of kRing k-steps, kRing − 1 ahead of the tensor cores; the first ones
  // asked for before the softmax, which hides their round trip.
  constexpr int kRing = kMinBlocks == 1 ? 6 : D >= 512 ? 2 : 3;
  float4 kb[kRing][SW][2];
  auto fetch = [&](float4 (&dst)[SW][2], int j) {
    const float* k_lo = keys[8 * j + t];
    const float* k_hi = keys[8 * j + t + 4];
#pragma unroll
    for (int sw = 0; sw < SW; ++sw) {
      dst[sw][0] = load_key(k_lo + boff + sw * kSlice);
      dst[sw][1] = load_key(k_hi + boff + sw * kSlice);
    }
  };
  const int n_steps = n_pad / 8;  // a multiple of 4 (n_pad: of 32), at least 4
  if (active)
#pragma unroll
    for (int r = 0; r < kRing - 1; ++r)
      if (r < n_steps) fetch(kb[r], r);

  // Softmax with the sink in one pass over S, a warp's four head rows side by side: mx from pass 1's
  // row maxima (max(l)·scale = max(l·scale): scale > 0 and rounding is monotone), p = exp(l·scale −
  // mx) stored TF32-rounded without the 1 / (exp(sink − mx) + Σ p), which pass 2 applies to its
  // outputs instead (two of the three passes over S gone: the softmax was 21% of the stall samples,
  // run 143); keys past n_keys (to n_pad) get p = 0. With kExp2, p = 2^(l·(scale·log₂e) − mx·log₂e)
  // by one FMA and one ex2.approx (relative error ≲ 2⁻²² plus the argument's rounding, |arg|·2⁻²³:
  // far inside the TF32 rounding of p, 2⁻¹¹, that the band is built on) where expf took ~8
  // instructions and the key test a branch (~22 instructions an element, SASS, session 41); the
  // padding keys' logits are keys[0]'s (≤ the row maximum: finite), so they are computed and dropped.
  {
    constexpr int kRows = kHeads / kWarps;
    float* lg[kRows];
    float sink[kRows], mx[kRows], sum[kRows];
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int hh = warp + kWarps * i;
      lg[i] = S + hh * s_ld;
      sink[i] = hh < nh ? a.sink[h0 + hh] : 0.0f;
      float m = -INFINITY;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) m = fmaxf(m, rowmax[w * kHeads + hh]);
      mx[i] = fmaxf(sink[i], m * a.scale), sum[i] = 0.0f;
    }
    if (flags & kExp2) {
      constexpr float kLog2e = 1.44269504088896341f;
      const float sl = a.scale * kLog2e;
      float ml[kRows];
#pragma unroll
      for (int i = 0; i < kRows; ++i) ml[i] = mx[i] * kLog2e;
      for (int j = lane; j < n_pad; j += kWarp)
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
          const float v = ex2_approx(__fmaf_rn(lg[i][j], sl, -ml[i]));
          const float p = j < n_keys ? v : 0.0f;
          lg[i][j] = tf32f(p);
          sum[i] += p;
        }
    } else {
      for (int j = lane; j < n_pad; j += kWarp)
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
          const float p = j < n_keys ? expf(lg[i][j] * a.scale - mx[i]) : 0.0f;
          lg[i][j] = tf32f(p);
          sum[i] += p;
        }
    }
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const float inv = 1.0f / (expf(sink[i] - mx[i]) + warp_sum(sum[i]));
      if (lane == 0) inv_den[warp + kWarps * i] = inv;
    }
  }
  __syncthreads();

  float acc[MW][SW][4][4] = {};
  if (active) {
#pragma unroll 1
    for (int j0 = 0; j0 < n_steps; j0 += kRing) {
#pragma unroll
      for (int r = 0; r < kRing; ++r) {
        const int j = j0 + r;
        if (j >= n_steps) break;
        if (j + kRing - 1 < n_steps) fetch(kb[(r + kRing - 1) % kRing], j + kRing - 1);
        uint32_t fa[MW][4];
#pragma unroll
        for (int mt = 0; mt < MW; ++mt) load_a(fa[mt], S + 16 * (m0 + mt) * s_ld + 8 * j, s_ld, lane);
#pragma unroll
        for (int sw = 0; sw < SW; ++sw)
#pragma unroll
          for (int v = 0; v < 4; ++v) {
            const uint32_t b0 = tf32(comp(kb[r][sw][0], v)), b1 = tf32(comp(kb[r][sw][1], v));
#pragma unroll
            for (int mt = 0; mt < MW; ++mt) mma_tf32(acc[mt][sw][v], fa[mt][0], fa[mt][1], fa[mt][2], fa[mt][3], b0, b1);
          }
      }
    }

    // Output: head 16·m + g (+ 8), dims b + 4t … + 3 and b + 16 + 4t … + 3. 16-bit outputs: the RoPE
    // dims (a float4 lies wholly inside or outside them: rope0 % 4 == 0) into Q's table, which pass 1
    // left free, the others rounded to global memory.
#pragma unroll
    for (int mt = 0; mt < MW; ++mt)
#pragma unroll
      for (int h8 = 0; h8 < 2; ++h8) {
        const int hh = 16 * (m0 + mt) + 8 * h8 + g;
        if (hh >= nh) continue;
        const float inv = inv_den[hh];
#pragma unroll
        for (int sw = 0; sw < SW; ++sw)
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            const int dim = dim0 + sw * kSlice + 16 * c + 4 * t;
            const float4 v = make_float4(acc[mt][sw][0][2 * h8 + c] * inv, acc[mt][sw][1][2 * h8 + c] * inv,
                                         acc[mt][sw][2][2 * h8 + c] * inv, acc[mt][sw][3][2 * h8 + c] * inv);
            const int64_t at = static_cast<int64_t>(hh) * D + dim;
            if (!a.o16)
              *reinterpret_cast<float4*>(orow + at) = v;
            else if (dim >= rope0)
              *reinterpret_cast<float4*>(Qs + hh * QS + (dim - rope0)) = v;
            else if (bf16_out)
              store_four(o16bf + at, 0, v.x, v.y, v.z, v.w);
            else
              store_four(o16h + at, 0, v.x, v.y, v.z, v.w);
          }
      }
  }
  // The inverse RoPE of the last 2·half dims, over the block's written rows (one call site: rotated in
  // the accumulators, cosf / sinf's range reduction inlined at every pair made ~6 k instructions, run 142).
  __syncthreads();  // the block's outputs are written (global writes are visible to the block after it)
  for (int i = threadIdx.x; i < nh * a.half; i += kBlock) {
    const int u = i / a.half, k = i % a.half;
    float* pair = a.o16 ? Qs + u * QS + 2 * k : orow + static_cast<int64_t>(u) * D + rope0 + 2 * k;
    rope_pair(pair, a.inv_freq[k], static_cast<int32_t>(pos), -1.0f);
    const int64_t at = static_cast<int64_t>(u) * D + rope0 + 2 * k;
    if (a.o16 && bf16_out)
      store_two(o16bf + at, pair[0], pair[1]);
    else if (a.o16)
      store_two(o16h + at, pair[0], pair[1]);
  }
}

}  // namespace

bool attention_fast_ok(const AttentionArgs& a) {
  if (!(a.d == 64 || a.d == 128 || a.d == 256 || a.d == 512)) return false;
  DeviceCaps caps;
  if (current_device_caps(caps) != cudaSuccess) return false;
  // fast_smem holds every table but the key count (s_ncmp: the kernel's only static shared memory).
  return fast_smem(a.max_keys, a.d) + 1024 <= static_cast<size_t>(caps.smem_optin);
}

cudaError_t attention_fast(const AttentionArgs& a, cudaStream_t stream, int form) {
  if (a.rows == 0) return cudaSuccess;
  if (form < 0 || form > 2) return cudaErrorInvalidValue;
  if (!attention_fast_ok(a)) return attention(a, stream);  // (which refuses o16 and q_raw: no silent fallback)
  if (a.q_raw && (a.half > 0 && !a.inv_freq)) return cudaErrorInvalidValue;
  if (a.o16 && (!(a.o16_type == WType::kBF16 || a.o16_type == WType::kF16) || (2 * a.half) % 4 != 0 ||
                reinterpret_cast<uintptr_t>(a.o16) % 8 != 0))
    return cudaErrorInvalidValue;
  if (!a.seqs || !a.row_seq || !a.row_pos || !a.q || !a.kv || !a.sink || !(a.o || a.o16) || a.rows < 0 || a.H < 1 ||
      a.H > 65535 * 16 || a.W < 1 || a.max_keys < 1 || a.half < 0 || 2 * a.half > a.d ||
      (a.half > 0 && !a.inv_freq) || (a.kind == AttnKind::kCSA && (!a.selected || a.K < 1)) ||
      (a.kind != AttnKind::kSliding && a.m < 1))
    return cudaErrorInvalidValue;
  const int s_ld = s_stride(a.max_keys);
  // Two blocks an SM where they fit (their shared memory twice; the kernel's 128 registers): HCA's
  // few hundred keys, not CSA's 640 (blocks of 16 heads fit there but read each key twice as often:
  // 4.9% slower prefill, run 169). MEMRA_CUDA_ATTN_TWO_BLOCKS=0 (A/B timing): one block an SM always.
  // The same bits.
  static const bool two_on = switch_on("MEMRA_CUDA_ATTN_TWO_BLOCKS");
  // MEMRA_CUDA_ATTN_ROWS_DOWN=0 (A/B timing; the same bits): blocks in row order.
  // MEMRA_CUDA_ATTN_EXP2=0 (A/B timing; other bits): the softmax through expf.
  static const unsigned flags = (switch_on("MEMRA_CUDA_ATTN_ROWS_DOWN") ? kRowsDown : 0u) |
                                (switch_on("MEMRA_CUDA_ATTN_EXP2") ? kExp2 : 0u);
  auto run = [&](auto kernel, bool need_two) -> cudaError_t {
    const void* k = reinterpret_cast<const void*>(kernel);
    const size_t smem = fast_smem(a.max_keys, a.d);
    cudaError_t e = allow_dynamic_smem(k, smem);
    if (e != cudaSuccess) return e;
    if (need_two) {
      int per_sm = 0;
      if ((e = resident_blocks(k, kBlock, smem, per_sm)) != cudaSuccess) return e;
      if (per_sm < 2) return cudaErrorNotSupported;  // (not launched: the caller takes another form)
    }
    return launch(kernel, dim3(a.rows, (a.H + kHeads - 1) / kHeads), kBlock, smem, stream, a, s_ld, flags);
  };
  auto launch_d = [&](auto one, auto two) -> cudaError_t {
    if (form == 1) return run(one, false);
    if (form == 2) return run(two, true);
    if (two_on) {
      const cudaError_t e = run(two, true);
      if (e != cudaErrorNotSupported) return e;
    }
    return run(one, false);
  };
#define MEMRA_ATTN_FORMS(D) attention_fast_kernel<D, 1>, attention_fast_kernel<D, 2>
  switch (a.d) {
    case 64: return launch_d(MEMRA_ATTN_FORMS(64));
    case 128: return launch_d(MEMRA_ATTN_FORMS(128));
    case 256: return launch_d(MEMRA_ATTN_FORMS(256));
    default: return launch_d(MEMRA_ATTN_FORMS(512));
  }
#undef MEMRA_ATTN_FORMS
}

}  // namespace memra::cuda
