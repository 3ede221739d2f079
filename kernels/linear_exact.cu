// The exact linear y = x·Wᵀ (grouped when groups > 1). One warp owns one output feature o and up to
// kRows rows; the 8 warps of a block own 8 consecutive outputs. The weight row is loaded once per
// row group and reused for its rows; each (row, o) element is the fixed-order dot of
// dot_exact.cuh, so the result is independent of the row count, the row's place in the group and
// the grid: no split-K, no shape-dependent kernel choice that changes a reduction. Packed weights
// (FP8/FP4 with e8m0 block scales) are decoded in registers as they are loaded (dot_exact.cuh).
//
// Six kernels, one (row, o) order, so the same bits from any of them:
//   linear_one_row_kernel      one row of a plain matrix (decode GEMV), one output per warp, its
//                              first weights loaded before pdl_begin(); also a few rows of a
//                              matrix with few outputs, one GEMV per row (per_row_fits)
//                                                        grid (ceil(out / 8), rows, groups)
//   linear_exact_kernel        one output per warp; RB = 1 for a single row of packed weights,
//                              else 8 (packed weights, unaligned rows)
//                                                        grid (ceil(out / 8), ceil(rows / 8), groups)
//   linear_exact_tiled_kernel  rows > 1, plain weights, aligned: KO = 1, 2 or 4 outputs per warp
//                              (the largest whose grid has a block per SM), the 8 rows' activations
//                              staged in shared memory, row groups on grid x
//                                                        grid (ceil(rows / 8), ceil(out / (8·KO)), groups)
//   linear_exact_rows_kernel   rows > 1 of a bf16/f16 matrix where the tiled kernel would run: its
//                              places, RB = 4, 6 or 8 rows a block fixed at compile time (zero rows
//                              staged), weights 4 / KO lane steps ahead, fewer instructions a weight
//                                                        grid (ceil(rows / RB), ceil(out / (8·KO)), groups)
//   linear_exact_gemm_raw_kernel  rows ≥ kGemmFromRows (33), bf16/f16 weights, aligned, a grid of
//                              two blocks per SM: the register-tiled form; a thread holds one lane's
//                              partials of NJ rows × 4 outputs, the lanes' butterfly replayed in
//                              shared memory; raw weights staged by cp.async, decoded in the loop;
//                              NJ = 8 (16-row blocks), 4 and 16 for the forms
//                                                        grid (ceil(rows / 2·NJ), ceil(out / 16), groups)
//   linear_exact_gemm_kernel   the same for f32 weights: decoded to f32 on the way into shared memory
//   block 256 (8 warps); rows beyond `rows` masked.
// Every kernel ends in store_output: y, or with LinearArgs::hc the attention's hc_post applied to the
// value as it is made (the decode path's wo_b), one dependent launch fewer per layer.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "ab_switch.h"
#include "common.cuh"
#include "device_caps.h"
#include "dot_exact.cuh"
#include "launch.cuh"
#include "mhc_post.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kOutsPerBlock = kBlock / kWarp;

// Where every kernel's finished (row, o) value goes: y of group g, or with the hc_post epilogue
// (LinearArgs::hc, one group) into the mHC streams, column o of row `row` only.
__device__ __forceinline__ void store_output(const LinearArgs& a, int g, int64_t row, int o, float v) {
  if (a.hc.X) hc_post_element(a.hc.X, v, a.hc.post, a.hc.comb, row, o, a.hc.n, a.out);
  else a.y[g * a.y_gstride + row * a.y_stride + o] = v;
}

template <typename Row, int RB>
__global__ void __launch_bounds__(kBlock) linear_exact_kernel(LinearArgs a) {
  pdl_begin();
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int o = blockIdx.x * kOutsPerBlock + warp;
  const int r0 = blockIdx.y * RB;
  const int g = blockIdx.z;
  if (o >= a.out) return;  // whole warp; no block barrier follows
  const int nr = min(RB, a.rows - r0);
  const float* xg = a.x + g * a.x_gstride;
  const float* xr[RB];
#pragma unroll
  for (int r = 0; r < RB; ++r) xr[r] = xg + static_cast<int64_t>(r0 + (r < nr ? r : 0)) * a.x_stride;
  // Group g's rows start at row g·w_gstride/in of the one matrix (its scale grid spans the groups).
  const Row w = Row::at(a.w, a.ws, g * a.w_gstride / a.in + o, a.in);
  float acc[RB];
  dot_rows<Row, RB>(xr, nr, w, a.in, acc);
  // Every lane holds every row's sum (warp_sum's butterfly): lane r stores row r, so the stores (and
  // the hc_post epilogue's loads) go side by side instead of one after another on lane 0.
  float mine = 0.0f;
#pragma unroll
  for (int r = 0; r < RB; ++r)
    if (lane == r) mine = acc[r];
  if (lane < nr) store_output(a, g, r0 + lane, o, mine);
}

// One row of a plain matrix (a decode step's GEMV): dot_rows<Row, 1>'s sequence, with the warp's
// first kPreSteps lane steps of weights loaded before pdl_begin(). Launched with PDL, the kernel's
// first blocks are resident while the kernel before it finishes, and those weight bytes (wq_b's
// 2 KB rows: all of them) are read meanwhile instead of after a full drain and launch. Row
// blockIdx.y: a few rows of a matrix with few outputs (the router at 8 rows) run as that many GEMVs
// side by side, the weights read once from HBM and again from L2 per row (kPerRowMaxWarps).
constexpr int kPreSteps = 4;

template <typename Row>
__global__ void __launch_bounds__(kBlock) linear_one_row_kernel(LinearArgs a) {
  constexpr int V = Row::kV, kStep = kWarp * V;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int o = blockIdx.x * kOutsPerBlock + warp;
  const int g = blockIdx.z;
  const bool mine = o < a.out;
  const Row w = Row::at(a.w, a.ws, g * a.w_gstride / a.in + (mine ? o : 0), a.in);
  const int row = blockIdx.y;
  const float* x = a.x + g * a.x_gstride + static_cast<int64_t>(row) * a.x_stride;
  const bool vec = w.vec_ok(a.in) && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  uint4 pre[kPreSteps];
  if (mine && vec) {
#pragma unroll
    for (int j = 0; j < kPreSteps; ++j)
      if (lane * V + j * kStep < a.in) pre[j] = w.load_raw(lane * V + j * kStep);
  }
  pdl_begin();
  if (!mine) return;  // whole warp; no block barrier follows
  float acc = 0.0f;
  if (vec) {
    int base = lane * V;
#pragma unroll
    for (int j = 0; j < kPreSteps; ++j, base += kStep) {
      if (base < a.in) {
        float wf[V], xf[V];
        Row::decode(pre[j], wf);
        load_x<V>(x + base, xf);
#pragma unroll
        for (int v = 0; v < V; ++v) acc = __fmaf_rn(xf[v], wf[v], acc);
      }
    }
#pragma unroll 8
    for (; base < a.in; base += kStep) {
      float wf[V], xf[V];
      w.load(base, wf);
      load_x<V>(x + base, xf);
#pragma unroll
      for (int v = 0; v < V; ++v) acc = __fmaf_rn(xf[v], wf[v], acc);
    }
    acc = warp_sum(acc);
  } else {
    const float* const xr[1] = {x};
    float r[1];
    dot_rows<Row, 1>(xr, 1, w, a.in, r);
    acc = r[0];
  }
  if (lane == 0) store_output(a, g, row, o, acc);
}

template <typename Row>
inline constexpr bool kPlainRow = std::is_same_v<Row, PlainRow<float>> || std::is_same_v<Row, PlainRow<__nv_bfloat16>> ||
                                  std::is_same_v<Row, PlainRow<__half>>;

// Rows > 1 of a plain matrix on the vector path, activations staged in shared memory: the block's
// 8 rows of x are copied chunk by chunk (kTileSteps lane steps of every lane) into shared memory
// once, and its 8 warps (8·KO outputs, KO per warp) read them there: each activation load serves KO
// outputs and each weight load 8 rows. A warp reading them from L1/L2 itself was bound by those
// reads (wo_b: 8 rows × 8192 f32 = 256 KB per row group, more than L1 holds). The grid puts
// the row groups on x, so the blocks sharing a weight slice run together and read it once from HBM.
// At KO = 1 and 2 a chunk's weights are fetched into registers before the barrier that precedes
// its staging (the first chunk's before pdl_begin(): nothing writes weights during a forward), so
// their latency overlaps the staging's instead of following it.
// Each lane still walks base = lane·V, lane·V + 32·V, … and v = 0 … V−1 in order, chunk after
// chunk, then warp_sum: the (row, o) bits of dot_rows<Row, 1>, whatever the row count or KO.
// The host picks this kernel only when every row and activation pointer is 16-byte aligned
// (tiled_ok), so the whole block takes the same path through its barriers.
constexpr int kTileSteps = 4;

template <typename Row, int KO>
__global__ void __launch_bounds__(kBlock, 2) linear_exact_tiled_kernel(LinearArgs a) {
  constexpr int RB = 8, V = Row::kV, kStep = kWarp * V, kChunk = kStep * kTileSteps, kQuads = kChunk / 4;
  // Element e = k·32·V + lane·V + v of a chunk sits at float4 (k·V/4 + v/4)·32 + lane: a warp's
  // float4 read of one (k, v/4) is 512 contiguous bytes, free of bank conflicts.
  __shared__ float4 xs[RB][kQuads];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int r0 = blockIdx.x * RB;
  const int o0 = (blockIdx.y * kOutsPerBlock + warp) * KO;
  const int g = blockIdx.z;
  const int nr = min(RB, a.rows - r0);
  Row w[KO];
#pragma unroll
  for (int t = 0; t < KO; ++t) w[t] = Row::at(a.w, a.ws, g * a.w_gstride / a.in + min(o0 + t, a.out - 1), a.in);
  // The chunk's weights, as loaded; not at KO = 4, where they spilled.
  constexpr int kPre = KO == 4 ? 0 : kTileSteps;
  uint4 wraw[KO][kPre > 0 ? kPre : 1];
  const auto fetch = [&](int c0, int cn) {
    if (o0 >= a.out) return;
#pragma unroll
    for (int k = 0; k < kPre; ++k)
      if (k * kStep + lane * V < cn)
#pragma unroll
        for (int t = 0; t < KO; ++t) wraw[t][k] = w[t].load_raw(c0 + k * kStep + lane * V);
  };
  fetch(0, min(kChunk, a.in));
  pdl_begin();
  const float* xg = a.x + g * a.x_gstride + static_cast<int64_t>(r0) * a.x_stride;
  float acc[KO * RB];  // (output o0 + t, row r) at t·RB + r
#pragma unroll
  for (int i = 0; i < KO * RB; ++i) acc[i] = 0.0f;
  for (int c0 = 0; c0 < a.in; c0 += kChunk) {
    const int cn = min(kChunk, a.in - c0);  // a multiple of V (the vector path needs in % V == 0)
    if (c0 > 0) fetch(c0, cn);
    __syncthreads();  // the previous chunk's reads are done
    for (int q = threadIdx.x; q < RB * kQuads; q += kBlock) {
      const int r = q / kQuads, e = (q % kQuads) * 4;
      if (r < nr && e < cn) {
        const int k = e / kStep, l = (e % kStep) / V, h = (e % V) / 4;
        xs[r][(k * (V / 4) + h) * kWarp + l] = *reinterpret_cast<const float4*>(xg + r * a.x_stride + c0 + e);
      }
    }
    __syncthreads();
    if (o0 < a.out) {
#pragma unroll
      for (int k = 0; k < kTileSteps; ++k) {
        if (k * kStep + lane * V < cn) {
          float wf[KO][V];
#pragma unroll
          for (int t = 0; t < KO; ++t) {
            if (k < kPre) Row::decode(wraw[t][k < kPre ? k : 0], wf[t]);
            else w[t].load(c0 + k * kStep + lane * V, wf[t]);
          }
#pragma unroll
          for (int r = 0; r < RB; ++r) {
            if (r < nr) {
              float xf[V];
#pragma unroll
              for (int h = 0; h < V / 4; ++h) {
                const float4 v4 = xs[r][(k * (V / 4) + h) * kWarp + lane];
                xf[4 * h] = v4.x, xf[4 * h + 1] = v4.y, xf[4 * h + 2] = v4.z, xf[4 * h + 3] = v4.w;
              }
#pragma unroll
              for (int t = 0; t < KO; ++t)
#pragma unroll
                for (int v = 0; v < V; ++v) acc[t * RB + r] = __fmaf_rn(xf[v], wf[t][v], acc[t * RB + r]);
            }
          }
        }
      }
    }
  }
  if (o0 >= a.out) return;  // after the last barrier
  // The KO·RB butterflies as one warp_sum_many (warp_sum's bits in ~31 shuffles instead of 5·KO·RB;
  // run 111: +1% batch 8): value t·RB + r ends on lanes (t·RB + r)·32 / (KO·RB) …, the first of
  // which stores it, the stores (with the hc_post epilogue, their loads of X) side by side.
  static_assert(KO * RB <= kWarp, "one lane per stored value");
  constexpr int kSpread = kWarp / (KO * RB);
  const float mine = warp_sum_many<KO * RB>(acc);
  const int i = lane / kSpread, t = i / RB, r = i % RB;
  if (lane % kSpread == 0 && r < nr && o0 + t < a.out) store_output(a, g, r0 + r, o0 + t, mine);
}

// 16 bytes of a 16-bit weight row → 8 floats (bf16 by shift and mask: bf16x2_f32).
__device__ __forceinline__ void decode8(const uint4& q, __nv_bfloat16, float (&out)[8]) {
  bf16x2_f32(q.x, out[0], out[1]), bf16x2_f32(q.y, out[2], out[3]);
  bf16x2_f32(q.z, out[4], out[5]), bf16x2_f32(q.w, out[6], out[7]);
}
__device__ __forceinline__ void decode8(const uint4& q, __half, float (&out)[8]) { PlainRow<__half>::decode(q, out); }

// A few rows (≤ 8 a block) of a 16-bit matrix: the tiled kernel's places and order (warp = KO
// outputs, lane l's chain over base = l·8, l·8 + 256, …, the 32 chains in warp_sum's butterfly),
// built for fewer instructions a weight (run 112: the tiled kernel issued 1.9 instructions an FMA
// at 8 rows, 47% of the issue slots, 36 us for wq_b's 15.6 us of bytes):
//   - RB rows a block fixed at compile time (4, 6, 8) and the rows past `rows` staged as zeros
//     (each thread one float4 of every row), so a lane step's FMAs are one branch-free block of
//     KO·RB chains;
//   - bf16 decoded by shift and mask; each weight row's lane pointer made once;
//   - the weights loaded 4 / KO lane steps before their FMAs (the first before pdl_begin), across
//     chunk boundaries;
//   - the epilogue's KO·8 butterflies as one warp_sum_many.
// Same (row, o) bits as every other form: each chain is dot_rows<Row, 1>'s, zero rows unstored.
template <typename WT, int KO, int RB>
__global__ void __launch_bounds__(kBlock, 2) linear_exact_rows_kernel(LinearArgs a) {
  constexpr int V = 8, kStep = kWarp * V, kChunk = kStep * kTileSteps, kQuads = kChunk / 4;
  static_assert(RB <= 8 && RB % 2 == 0, "rows a block");
  static_assert(kQuads == kBlock, "staging: thread i copies float4 i of every row");
  __shared__ float4 xs[RB][kQuads];  // the tiled kernel's layout: float4 (k·2 + h)·32 + lane
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int r0 = blockIdx.x * RB;
  const int o0 = (blockIdx.y * kOutsPerBlock + warp) * KO;
  const int g = blockIdx.z;
  const int nr = min(RB, a.rows - r0);
  // Weight row o0 + t from this lane's first value, as 16-byte steps (a lane step = kWarp of them).
  const bool lane_in = lane * V < a.in;
  const int last = lane_in ? (a.in - 1 - lane * V) / kStep : 0;  // this lane's last lane step
  const uint4* wl[KO];
#pragma unroll
  for (int t = 0; t < KO; ++t)
    wl[t] = reinterpret_cast<const uint4*>(static_cast<const WT*>(a.w) +
                                           (g * a.w_gstride / a.in + min(o0 + t, a.out - 1)) * static_cast<int64_t>(a.in) +
                                           (lane_in ? lane * V : 0));
  // Lane step s's weights go to slot s % kAhead, loaded kAhead steps before their FMAs: 16·KO·kAhead
  // = 64 bytes a lane in flight whatever KO (few outputs a warp: few warps, so deeper).
  constexpr int kAhead = 4 / KO;
  static_assert(kTileSteps % kAhead == 0, "slot = lane step within the chunk % kAhead");
  uint4 next[kAhead][KO];
  const auto fetch = [&](int s, uint4(&slot)[KO]) {
    if (lane_in && s <= last)
#pragma unroll
      for (int t = 0; t < KO; ++t) slot[t] = wl[t][s * kWarp];
  };
#pragma unroll
  for (int j = 0; j < kAhead; ++j) fetch(j, next[j]);
  pdl_begin();
  // Staging: thread i copies float4 i of the chunk for every row, to its place in the layout.
  const int e = threadIdx.x * 4;
  float4* const xs_at = &xs[0][((e / kStep) * 2 + (e % V) / 4) * kWarp + (e % kStep) / V];
  const float* xsrc = a.x + g * a.x_gstride + static_cast<int64_t>(r0) * a.x_stride + e;
  float acc[KO * 8];  // (output o0 + t, row r) at t·8 + r; rows RB … 7 stay zero
#pragma unroll
  for (int i = 0; i < KO * 8; ++i) acc[i] = 0.0f;
  for (int c0 = 0, s = 0; c0 < a.in; c0 += kChunk) {
    const int cn = min(kChunk, a.in - c0);  // a multiple of V
    __syncthreads();  // the previous chunk's reads are done
    // Through registers: by cp.async (zero-filled rows included) the same kernel stalled twice as
    // long on L1TEX and lost 15% (run 116, forms f10 / f11).
    float4 v[RB];
#pragma unroll
    for (int r = 0; r < RB; ++r)
      v[r] = r < nr && e < cn ? *reinterpret_cast<const float4*>(xsrc + r * a.x_stride + c0) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int r = 0; r < RB; ++r) xs_at[r * kQuads] = v[r];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTileSteps; ++k, ++s) {
      if (k * kStep >= cn) break;  // the chunk's last lane step passed (block-uniform)
      float wf[KO][V];  // this step's weights, decoded before their slot takes step s + kAhead's
#pragma unroll
      for (int t = 0; t < KO; ++t) decode8(next[k % kAhead][t], WT{}, wf[t]);
      fetch(s + kAhead, next[k % kAhead]);
      if (k * kStep + lane * V < cn) {
#pragma unroll
        for (int r = 0; r < RB; ++r) {
          const float4 x0 = xs[r][(k * 2) * kWarp + lane], x1 = xs[r][(k * 2 + 1) * kWarp + lane];
          const float xf[V] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
          for (int t = 0; t < KO; ++t)
#pragma unroll
            for (int v = 0; v < V; ++v) acc[t * 8 + r] = __fmaf_rn(xf[v], wf[t][v], acc[t * 8 + r]);
        }
      }
    }
  }
  if (o0 >= a.out) return;  // after the last barrier
  constexpr int kSpread = kWarp / (KO * 8);
  const float mine = warp_sum_many<KO * 8>(acc);
  const int i = lane / kSpread, t = i / 8, r = i % 8;
  if (lane % kSpread == 0 && r < nr && o0 + t < a.out) store_output(a, g, r0 + r, o0 + t, mine);
}

// Rows ≥ kGemmFromRows of a plain matrix on the vector path: the register-tiled form. The tiled
// kernel above gives each warp one lane step of 8 rows × KO outputs, so a weight load serves 8 rows
// and an activation load KO outputs, and its FMAs waited on both (ncu, run 70: 26% of the FMA pipe
// at 32 rows). Here a thread keeps one lane's partial sums for NJ rows × 4 outputs, both operands
// staged in shared memory, so a float4 of activations serves 4 outputs and a float4 of weights NJ
// rows: NJ·4·4 FMAs per NJ + 4 shared loads. Few outputs and many rows a thread, because a weight
// costs a conversion per thread that reads it (bf16 → f32) and an activation does not: at 4 × 8
// a half step is 128 FFMA of ~165 instructions, at 8 × 4 (the form before run 204) of 181.
//   Thread (warp w, lane λ): lane l = 4w + (λ & 3) of dot_rows' order, rows rt + 2j (rt = (λ >> 2)
//   & 1, j < NJ), outputs ob + 2k (ob = (ot & 1) + 8·(ot >> 1), ot = λ >> 3, k < 4). A block: 2·NJ
//   rows × 16 outputs.
// Its partial of (row, o) is lane l's chain of dot_rows<Row, 1>: acc = fma(x[i], w[i], acc) from +0
// over i = base + 0 … V−1, base = l·V, l·V + 32·V, … (< in), chunk after chunk of kGemmChunk
// (a multiple of 32·V). The 32 lanes' partials then meet in shared memory in warp_sum's butterfly
// (level off = 16, 8, 4, 2, 1: p[i] + p[i + off] for i < off), so (row, o) has the bits of every
// other form. Activations are copied by cp.async, weights through registers (decoded to f32 on the
// way in), chunk c + 1's in flight while chunk c is computed; one barrier per chunk.
// The register-tiled form from 33 rows (from 16 in runs 78-207): at 16-32 rows the rows kernel is
// faster (run 208, H100: wq_b / wo_a at 16 rows 60 / 68 → 50 / 47 us, wo_b / the LM head at 32 rows
// 115 / 71 → 88 / 46; verify 16 −1.7%, batch 32 +2.3%).
constexpr int kGemmFromRows = 33;
constexpr int kGemmChunk = 256;          // K elements per staged chunk
constexpr int kGemmLd = kGemmChunk + 4;  // padded row (floats): a warp's float4 reads in ≤ 2 wavefronts
constexpr int kGemmOuts = 16;            // outputs per block

constexpr int kRowGroups = 2;                      // rt: a thread's rows rt + 2j
constexpr int kThreadOuts = 4;                     // a thread's outputs ob + 2k, k < 4
static_assert(kRowGroups * (kGemmOuts / kThreadOuts) * 4 == kWarp, "4 lanes l × (rt, ot) places = a warp");

template <int NJ>
constexpr size_t gemm_smem_bytes() {
  const size_t stage = 2u * (kRowGroups * NJ + kGemmOuts) * kGemmLd * sizeof(float);  // two chunks of x and w
  const size_t partials = static_cast<size_t>(kRowGroups * NJ) * kGemmOuts * (kWarp + 1) * sizeof(float);
  return stage > partials ? stage : partials;
}

// warp_sum's levels on 32 partials held by one thread: p[i] + p[i + off] for i < off, off = OFF … 1
// (templates, so every index is a constant and p stays in registers).
template <int OFF>
__device__ __forceinline__ void butterfly_fold(float (&p)[kWarp]) {
#pragma unroll
  for (int i = 0; i < OFF; ++i) p[i] = p[i] + p[i + OFF];
  if constexpr (OFF > 1) butterfly_fold<OFF / 2>(p);
}

// Where a thread of a register-tiled block works (one definition for both kernels and their
// epilogue): lane l of dot_rows' order, rows rt + 2j and outputs ob + 2k of the block's rows r0 …
// r0 + nr − 1 and 16 outputs from o0, group g; wrow0 and xg: the block's first weight row and
// activation row. A warp's 4 × 4 (l, ob) weight reads hit 16 distinct 8-byte slots; with ob in
// {0, 1, 8, 9} and a raw row of 132 words (≡ 2 mod 32 banks) they fill the 32 banks once.
struct GemmPlace {
  int l, rt, ob, r0, o0, g, nr;
  int64_t wrow0;
  const float* xg;
  __device__ __forceinline__ GemmPlace(const LinearArgs& a, int rows_per_block) {
    const int lane = threadIdx.x % kWarp;
    const int ot = lane >> 3;
    l = static_cast<int>(threadIdx.x / kWarp) * 4 + (lane & 3), rt = (lane >> 2) & 1, ob = (ot & 1) + 8 * (ot >> 1);
    r0 = blockIdx.x * rows_per_block, o0 = blockIdx.y * kGemmOuts, g = blockIdx.z;
    nr = min(rows_per_block, a.rows - r0);
    wrow0 = g * a.w_gstride / a.in + o0;
    xg = a.x + g * a.x_gstride + static_cast<int64_t>(r0) * a.x_stride;
  }
};

// Each thread's copies of a chunk, planned once per block for both register-tiled kernels: x copy i
// is row xr0 + i·kXRowStep of the block at column xcol of the chunk, weight copy i (16 bytes of WT)
// row wr0 + i·kWRowStep at column wcol. Rows past the block's (x) or the matrix's (weights) are
// clamped to its last: their products land in partials nothing stores. Columns past `in` (a
// partial last chunk) are clamped to its last vector: lane l reads its step only when c0 + l·V <
// in, so those slots are never read. Every copy is then unconditional, its source the block's base
// plus a 32-bit offset (gemm_offsets_fit): with per-copy 64-bit pointers, masks and zero-fill
// predicates ptxas rematerialized them every chunk, 97 instructions for 6 copies (ncu source
// counters, run 202).
template <typename WT, int RT>
struct GemmCopyPlan {
  static constexpr int V = 16 / sizeof(WT), kRowVecs = kGemmChunk / V, kXQuads = kGemmChunk / 4;
  static constexpr int kWLoads = kGemmOuts * kRowVecs / kBlock, kXLoads = RT * kXQuads / kBlock;
  static constexpr int kWRowStep = kBlock / kRowVecs, kXRowStep = kBlock / kXQuads;
  static_assert(kWLoads >= 1 && kXLoads >= 1, "chunk too small for the block");
  int xr0, xcol, wr0, wcol;
  int x_last, w_last;                 // the last column a 16-byte copy may start at (in − its values)
  unsigned xo[kXLoads], wo[kWLoads];  // the copies' rows as byte offsets from xg / wg
  const char* xg;                     // the block's first x row
  const char* wg;                     // the block's first weight row
  __device__ __forceinline__ GemmCopyPlan(const LinearArgs& a, const GemmPlace& at) {
    const int t = threadIdx.x;
    xr0 = t / kXQuads, xcol = (t % kXQuads) * 4, wr0 = t / kRowVecs, wcol = (t % kRowVecs) * V;
    x_last = a.in - 4, w_last = a.in - V;
    xg = reinterpret_cast<const char*>(at.xg);
    wg = reinterpret_cast<const char*>(static_cast<const WT*>(a.w) + at.wrow0 * a.in);
#pragma unroll
    for (int i = 0; i < kXLoads; ++i)
      xo[i] = static_cast<unsigned>(min(xr0 + i * kXRowStep, at.nr - 1) * static_cast<int>(a.x_stride)) * 4u;
#pragma unroll
    for (int i = 0; i < kWLoads; ++i)
      wo[i] = static_cast<unsigned>(min(wr0 + i * kWRowStep, a.out - 1 - at.o0) * a.in) * unsigned{sizeof(WT)};
  }
  // The chunk at c0's x copies → rows xr0 + i·kXRowStep of the tile at xs ([RT][kGemmLd]).
  __device__ __forceinline__ void copy_x(float* xs, int c0) const {
    const unsigned c = static_cast<unsigned>(min(c0 + xcol, x_last)) * 4u;
#pragma unroll
    for (int i = 0; i < kXLoads; ++i) cp_async16(xs + (xr0 + i * kXRowStep) * kGemmLd + xcol, xg + (xo[i] + c), true);
  }
  // Weight copy i of the chunk at c0: its source (16 bytes of WT).
  __device__ __forceinline__ const WT* w_src(int i, int c0) const {
    return reinterpret_cast<const WT*>(wg + (wo[i] + static_cast<unsigned>(min(c0 + wcol, w_last)) * unsigned{sizeof(WT)}));
  }
};

// GemmCopyPlan's 32-bit byte offsets hold: a block's rows of x and of the weights span < 2³² bytes.
bool gemm_offsets_fit(const LinearArgs& a) {
  return a.x_stride <= (int64_t{1} << 24) && static_cast<int64_t>(a.in) <= (int64_t{1} << 24);
}

// The epilogue of both register-tiled kernels: each thread's partials of lane l into shared memory
// (`part`, [2·NJ·16][33], free once the caller's barrier has passed), then per (row, o) the 32
// lanes' partials in warp_sum's butterfly, stored to y.
template <int NJ>
__device__ __forceinline__ void gemm_butterfly_store(const float (&acc)[NJ][kThreadOuts], float* part, const LinearArgs& a,
                                                     const GemmPlace& at) {
  constexpr int RT = kRowGroups * NJ, OT = kGemmOuts;
  const int l = at.l, rt = at.rt, ob = at.ob, r0 = at.r0, o0 = at.o0, g = at.g, nr = at.nr;
#pragma unroll
  for (int j = 0; j < NJ; ++j)
#pragma unroll
    for (int k = 0; k < kThreadOuts; ++k) part[((rt + kRowGroups * j) * OT + ob + 2 * k) * (kWarp + 1) + l] = acc[j][k];
  __syncthreads();
  for (int e = threadIdx.x; e < RT * OT; e += kBlock) {
    const int r = e / OT, o = e % OT;
    float p[kWarp];
#pragma unroll
    for (int i = 0; i < kWarp; ++i) p[i] = part[e * (kWarp + 1) + i];
    butterfly_fold<kWarp / 2>(p);
    if (r < nr && o0 + o < a.out) store_output(a, g, r0 + r, o0 + o, p[0]);
  }
}

// One float4 of lane l's step: 4 outputs' weights (w(k) for output ob + 2k) times NJ rows (from
// the x tile): acc[j][k] takes the 4 products in element order, as dot_rows does.
template <int NJ, typename WLoad>
__device__ __forceinline__ void gemm_quad(float (&acc)[NJ][kThreadOuts], const float* xb, int rt, int x_off, WLoad&& w) {
  float4 wq[kThreadOuts];
#pragma unroll
  for (int k = 0; k < kThreadOuts; ++k) wq[k] = w(k);
#pragma unroll
  for (int j = 0; j < NJ; ++j) {
    const float4 xq = *reinterpret_cast<const float4*>(xb + (rt + kRowGroups * j) * kGemmLd + x_off);
#pragma unroll
    for (int k = 0; k < kThreadOuts; ++k) {
      float& sum = acc[j][k];
      sum = __fmaf_rn(xq.x, wq[k].x, sum);
      sum = __fmaf_rn(xq.y, wq[k].y, sum);
      sum = __fmaf_rn(xq.z, wq[k].z, sum);
      sum = __fmaf_rn(xq.w, wq[k].w, sum);
    }
  }
}

template <typename Row, int NJ, int kMinBlocks>
__global__ void __launch_bounds__(kBlock, kMinBlocks) linear_exact_gemm_kernel(LinearArgs a) {
  using WT = std::remove_cv_t<std::remove_pointer_t<decltype(Row::w)>>;
  constexpr int V = Row::kV, RT = kRowGroups * NJ, OT = kGemmOuts;
  constexpr int kSteps = kGemmChunk / (kWarp * V);  // lane steps per chunk
  using Plan = GemmCopyPlan<WT, RT>;
  MEMRA_DYNAMIC_SMEM(float, gemm_smem, 16);
  float* const xs = gemm_smem;                    // [2][RT][kGemmLd]
  float* const ws = gemm_smem + 2 * RT * kGemmLd;  // [2][OT][kGemmLd]
  const GemmPlace at(a, RT);
  const int l = at.l, rt = at.rt, ob = at.ob;
  const Plan plan(a, at);

  uint4 wraw[Plan::kWLoads];
  const auto fetch_w = [&](int c0) {
#pragma unroll
    for (int i = 0; i < Plan::kWLoads; ++i)
      wraw[i] = *reinterpret_cast<const uint4*>(plan.w_src(i, c0));
  };
  const auto store_w = [&](int buf) {
#pragma unroll
    for (int i = 0; i < Plan::kWLoads; ++i) {
      float f[V];
      Row::decode(wraw[i], f);
      float* dst = ws + (buf * OT + plan.wr0 + i * Plan::kWRowStep) * kGemmLd + plan.wcol;
#pragma unroll
      for (int h = 0; h < V / 4; ++h)
        *reinterpret_cast<float4*>(dst + 4 * h) = make_float4(f[4 * h], f[4 * h + 1], f[4 * h + 2], f[4 * h + 3]);
    }
  };
  const auto copy_x = [&](int buf, int c0) {
    plan.copy_x(xs + buf * RT * kGemmLd, c0);
    cp_async_commit();
  };

  fetch_w(0);  // weights only before pdl_begin(): nothing writes them during a forward
  pdl_begin();
  copy_x(0, 0);
  store_w(0);
  float acc[NJ][kThreadOuts];
#pragma unroll
  for (int j = 0; j < NJ; ++j)
#pragma unroll
    for (int k = 0; k < kThreadOuts; ++k) acc[j][k] = 0.0f;
  const int chunks = (a.in + kGemmChunk - 1) / kGemmChunk;
  for (int c = 0; c < chunks; ++c) {
    const int c0 = c * kGemmChunk, buf = c & 1;
    cp_async_wait<0>();
    __syncthreads();  // chunk c staged by every thread; chunk c − 1's reads of the other buffer done
    const bool next = c + 1 < chunks;
    if (next) {
      copy_x(buf ^ 1, c0 + kGemmChunk);
      fetch_w(c0 + kGemmChunk);
    }
    const float* xb = xs + buf * RT * kGemmLd;
    const float* wb = ws + buf * OT * kGemmLd;
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const int off = s * kWarp * V + l * V;
      if (c0 + off < a.in) {  // lane l's step is whole or absent (in % V == 0)
#pragma unroll 1  // unrolled, ptxas hoisted the second half's loads and spilled
        for (int h = 0; h < V / 4; ++h) {
          const float* wh = wb + ob * kGemmLd + off + 4 * h;
          gemm_quad<NJ>(acc, xb, rt, off + 4 * h,
                        [&](int k) { return *reinterpret_cast<const float4*>(wh + 2 * k * kGemmLd); });
        }
      }
    }
    if (next) store_w(buf ^ 1);
  }
  __syncthreads();  // every thread's reads of the staging buffers done: the partials reuse them
  gemm_butterfly_store<NJ>(acc, gemm_smem, a, at);
}

// The register-tiled form with 16-bit weights kept raw in shared memory: a float4 of decoded
// weights is an 8-byte load and four conversions in the loop instead of a 16-byte load, half the
// shared-memory bytes of the weights (run 74's stalls: short scoreboard and MIO throttle, the
// shared-memory pipe). With nothing to decode on the way in, every copy is a cp.async into a ring
// of kRing chunks, kRing − 1 chunks in flight while one is computed (2 by default: deeper rings
// cost blocks per SM and gained nothing, runs 74 and 76; three at the 8- and 16-row forms lost
// batch 64 4.3%, run 207); one barrier per chunk. In the loop a
// half step of the 16-row form is 128 FFMA of 165 instructions (SASS, 1c2ee38). The same lanes, rows, outputs and
// order as linear_exact_gemm_kernel: the same bits.
constexpr int kGemmLdRaw = kGemmChunk + 8;  // padded raw row (16-bit values): 528 bytes, 16-aligned,
                                            // 132 words ≡ 2 mod 32 banks (GemmPlace)

// Four 16-bit weights (8 bytes, element 0 in the low half of u.x) as f32: bf16 by its bits
// (bf16x2_f32), f16 by the conversion.
__device__ __forceinline__ float4 raw4_f32(uint2 u, __nv_bfloat16) {
  float4 f;
  bf16x2_f32(u.x, f.x, f.y);
  bf16x2_f32(u.y, f.z, f.w);
  return f;
}
__device__ __forceinline__ float4 raw4_f32(uint2 u, __half) {
  const __half* v = reinterpret_cast<const __half*>(&u);
  return make_float4(__half2float(v[0]), __half2float(v[1]), __half2float(v[2]), __half2float(v[3]));
}

template <int NJ, int kRing>
constexpr size_t gemm_raw_smem_bytes() {
  const size_t x = static_cast<size_t>(kRing) * kRowGroups * NJ * kGemmLd * sizeof(float);
  const size_t w = static_cast<size_t>(kRing) * kGemmOuts * kGemmLdRaw * 2;
  const size_t partials = static_cast<size_t>(kRowGroups * NJ) * kGemmOuts * (kWarp + 1) * sizeof(float);
  return x + w > partials ? x + w : partials;
}

template <typename Row, int NJ, int kMinBlocks, int kRing>
__global__ void __launch_bounds__(kBlock, kMinBlocks) linear_exact_gemm_raw_kernel(LinearArgs a) {
  constexpr int kAhead = kRing - 1;  // chunks in flight while one is computed
  using WT = std::remove_cv_t<std::remove_pointer_t<decltype(Row::w)>>;
  static_assert(sizeof(WT) == 2 && Row::kV == 8, "16-bit weights");
  constexpr int V = 8, RT = kRowGroups * NJ, OT = kGemmOuts;
  static_assert(kGemmChunk == kWarp * V, "one lane step per chunk");
  using Plan = GemmCopyPlan<WT, RT>;
  MEMRA_DYNAMIC_SMEM(float, gemm_smem, 16);
  float* const xs = gemm_smem;                                            // [ring][RT][kGemmLd]
  WT* const ws = reinterpret_cast<WT*>(gemm_smem + kRing * RT * kGemmLd);  // [ring][OT][kGemmLdRaw]
  const GemmPlace at(a, RT);
  const int l = at.l, rt = at.rt, ob = at.ob;
  const Plan plan(a, at);
  const int chunks = (a.in + kGemmChunk - 1) / kGemmChunk;
  const auto copy_w = [&](int c0, int slot) {  // the chunk at c0's weights → ring slot `slot`
#pragma unroll
    for (int i = 0; i < Plan::kWLoads; ++i)
      cp_async16(ws + (slot * OT + plan.wr0 + i * Plan::kWRowStep) * kGemmLdRaw + plan.wcol, plan.w_src(i, c0), true);
  };
  const auto copy_x = [&](int c0, int slot) { plan.copy_x(xs + slot * RT * kGemmLd, c0); };

  // Groups: G0 = weights of chunks 0 … kAhead − 1 (before pdl_begin(): nothing writes weights
  // during a forward) + x of chunk 0; Gp = x of chunk p < kAhead; G(c + kAhead) committed in
  // iteration c (maybe empty).
#pragma unroll
  for (int p = 0; p < kAhead; ++p)
    if (p < chunks) copy_w(p * kGemmChunk, p);
  pdl_begin();
#pragma unroll
  for (int p = 0; p < kAhead; ++p) {
    if (p < chunks) copy_x(p * kGemmChunk, p);
    cp_async_commit();
  }
  float acc[NJ][kThreadOuts];
#pragma unroll
  for (int j = 0; j < NJ; ++j)
#pragma unroll
    for (int k = 0; k < kThreadOuts; ++k) acc[j][k] = 0.0f;
  int slot = 0, fill = kAhead % kRing;  // ring slots of chunk c and of chunk c + kAhead
  for (int c0 = 0; c0 < a.in; c0 += kGemmChunk) {
    cp_async_wait<kAhead - 1>();  // every group but the latest kAhead − 1: this chunk's copies
    __syncthreads();              // … by every thread; the previous chunk's slot (= fill) free
    const int next0 = c0 + kAhead * kGemmChunk;
    if (next0 < a.in) {
      copy_x(next0, fill);
      copy_w(next0, fill);
    }
    cp_async_commit();
    const int off = l * V;
    if (c0 + off < a.in) {  // lane l's step is whole or absent (in % V == 0)
      const float* xb = xs + slot * RT * kGemmLd;
      const WT* wb = ws + (slot * OT + ob) * kGemmLdRaw + off;
#pragma unroll 1  // as in linear_exact_gemm_kernel
      for (int h = 0; h < V / 4; ++h) {
        const WT* wh = wb + 4 * h;
        gemm_quad<NJ>(acc, xb, rt, off + 4 * h, [&](int k) {
          return raw4_f32(*reinterpret_cast<const uint2*>(wh + 2 * k * kGemmLdRaw), WT{});
        });
      }
    }
    slot = slot + 1 == kRing ? 0 : slot + 1;
    fill = fill + 1 == kRing ? 0 : fill + 1;
  }
  cp_async_wait<0>();
  __syncthreads();  // every thread's reads of the rings done: the partials reuse them
  gemm_butterfly_store<NJ>(acc, gemm_smem, a, at);
}

// MEMRA_CUDA_LINEAR_TILED (A/B timing; the same bits in every setting): 0 = multi-row linears
// through linear_exact_kernel<Row, 8>; 1, 2 or 4 = the tiled kernel with that many outputs per
// warp; unset or anything else = the grid's choice (tiled_outs_per_warp).
int tiled_setting() {
  static const int setting =
      switch_on("MEMRA_CUDA_LINEAR_TILED") ? switch_choice("MEMRA_CUDA_LINEAR_TILED", {1, 2, 4}, 0) : -1;
  return setting;
}

// Every pointer the tiled kernel loads with 16-byte vectors is aligned: x, its row and group
// strides, the weight rows (in·sizeof(WT) a multiple of 16), and the grid fits.
template <typename Row>
bool tiled_ok(const LinearArgs& a, unsigned out_blocks) {
  constexpr int V = Row::kV;
  return a.in % V == 0 && reinterpret_cast<uintptr_t>(a.x) % 16 == 0 && a.x_stride % 4 == 0 && a.x_gstride % 4 == 0 &&
         reinterpret_cast<uintptr_t>(a.w) % 16 == 0 && out_blocks <= 65535;
}

// Outputs per warp of the tiled kernel when the caller leaves it open: the largest of 4, 2, 1 whose
// grid gives every SM a block, else 1. A few rows of a small matrix at 4 (the router: 8 blocks,
// wq_a: 32 at 6 rows) were bound by the few SMs they ran on: 28 -> 17 us at 1 (run 63). Past one
// block per SM, fewer outputs per warp cost more than they give: each block stages the row group's
// activations, so halving KO doubles that traffic (wo_a at 6 rows: 37 us at 4 with 256 blocks, 48
// at 2 with 512; run 63). Bits do not depend on it.
int tiled_outs_per_warp(const LinearArgs& a, unsigned row_blocks) {
  DeviceCaps caps;
  const int sms = current_device_caps(caps) == cudaSuccess ? caps.sms : 132;
  const auto blocks = [&](int ko) {
    return static_cast<int64_t>(row_blocks) * ((a.out + kOutsPerBlock * ko - 1) / (kOutsPerBlock * ko)) * a.groups;
  };
  return blocks(4) >= sms ? 4 : blocks(2) >= sms ? 2 : 1;
}

// MEMRA_CUDA_LINEAR_GEMM (A/B timing; the same bits in every setting): 0 = never the register-tiled
// form; n ≥ 1 = from n rows; unset or anything else = from kGemmFromRows.
int gemm_min_rows() {
  static const int setting = switch_zero_or_count("MEMRA_CUDA_LINEAR_GEMM", kGemmFromRows);
  return setting;
}

// MEMRA_CUDA_LINEAR_GEMM_RAW=0 (A/B timing; same bits): 16-bit weights through
// linear_exact_gemm_kernel (decoded to f32 on the way into shared memory) instead of raw.
bool gemm_raw_weights() {
  static const bool setting = switch_on("MEMRA_CUDA_LINEAR_GEMM_RAW");
  return setting;
}

template <typename Row>
inline constexpr bool kRawWeights = std::is_same_v<Row, PlainRow<__nv_bfloat16>> || std::is_same_v<Row, PlainRow<__half>>;

// A register-tiled kernel of NJ rows per thread (4·NJ per block) with `smem` bytes of dynamic shared memory.
template <int NJ, typename Kernel>
cudaError_t launch_gemm(Kernel kernel, size_t smem, const LinearArgs& a, cudaStream_t stream) {
  const cudaError_t e = allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
  if (e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>((a.rows + kRowGroups * NJ - 1) / (kRowGroups * NJ)),
                  static_cast<unsigned>((a.out + kGemmOuts - 1) / kGemmOuts), a.groups);
  return launch(kernel, grid, kBlock, smem, stream, a);
}
template <typename Row, int NJ, int kMinBlocks>
cudaError_t launch_gemm_staged(const LinearArgs& a, cudaStream_t stream) {
  return launch_gemm<NJ>(linear_exact_gemm_kernel<Row, NJ, kMinBlocks>, gemm_smem_bytes<NJ>(), a, stream);
}
template <typename Row, int NJ, int kMinBlocks, int kRing>
cudaError_t launch_gemm_raw(const LinearArgs& a, cudaStream_t stream) {
  return launch_gemm<NJ>(linear_exact_gemm_raw_kernel<Row, NJ, kMinBlocks, kRing>, gemm_raw_smem_bytes<NJ, kRing>(), a,
                         stream);
}

// Blocks of the register-tiled grid at `tile` rows a block, and the SMs they share.
int64_t gemm_blocks(const LinearArgs& a, int tile) {
  return static_cast<int64_t>((a.rows + tile - 1) / tile) * ((a.out + kGemmOuts - 1) / kGemmOuts) * a.groups;
}
int device_sms() {
  DeviceCaps caps;
  return current_device_caps(caps) == cudaSuccess ? caps.sms : 132;
}

// Rows a block: up to 8 rows 8, up to 16 rows 16 (three blocks an SM); above, 32 (NJ = 16, two an
// SM; a half step 256 FFMA of ~300 instructions) where that grid still gives every SM three blocks,
// else 16: at 256 32-row blocks half the SMs idle in the last wave (run 203). Run 204, this rule as
// the default: the 64-row linears 2.01 → 1.84 ms (2 layers), each big site at the faster form's
// time. 8-row blocks at the small grids gained under 0.3% of batch 32 / 64 (run 205; not taken).
// MEMRA_CUDA_LINEAR_GEMM_TILE (A/B timing; same bits): =16|32 that many above 16 rows; =8 always 8.
int gemm_tile_rows(const LinearArgs& a, int sms) {
  static const int setting = switch_choice("MEMRA_CUDA_LINEAR_GEMM_TILE", {8, 16, 32}, 0);
  if (a.rows <= 8 || setting == 8) return 8;
  if (a.rows <= 16) return 16;
  if (setting) return setting;
  return gemm_blocks(a, 32) >= 3 * sms ? 32 : 16;
}

// A few rows of a matrix with few outputs as per-row GEMVs (linear_one_row_kernel, grid y = rows)
// instead of the tiled kernel, whose 8-row blocks of such a matrix are few and each walks its chunks
// one after another (the router at 8 rows: 32 blocks, 19 us against 8 at one row). Each warp also
// reads its weight row again (from L2 after the first row's warp), so only while rows · outputs
// warps stay few (MEMRA_CUDA_LINEAR_PER_ROW=0: never, =n: up to n warps; A/B timing, same bits).
// Up to 16 rows since run 213 (H100, 16 rows: the router −3 us a layer, weights_proj −5, the
// indexer's compressor −3; at 8192 warps matrices of 512-1024 outputs lost 4-5 us each).
// MEMRA_CUDA_LINEAR_PER_ROW_ROWS=n: up to n rows instead of kPerRowMaxRows (A/B timing, same bits).
constexpr int kPerRowMaxWarps = 4096;
constexpr int kPerRowMaxRows = 16;

bool per_row_fits(const LinearArgs& a) {
  static const int64_t max_warps = switch_zero_or_count("MEMRA_CUDA_LINEAR_PER_ROW", kPerRowMaxWarps);
  static const int max_rows = switch_count("MEMRA_CUDA_LINEAR_PER_ROW_ROWS", kPerRowMaxRows);
  return a.rows <= max_rows && static_cast<int64_t>(a.rows) * a.out * a.groups <= max_warps;
}

// Whether the register-tiled grid gives every SM two blocks: a lane's chain cannot be split (its
// order is sequential over `in`), so a matrix of few outputs (wq_a, the router, the shared expert at
// 32 rows) has few blocks, each walking all of `in`; the tiled kernel spreads those better.
bool gemm_fills_sms(const LinearArgs& a, int tile, int sms) { return gemm_blocks(a, tile) >= 2 * sms; }

// The register-tiled form for `rows_per_block` (8, 16 or 32) rows a block. 16-bit weights raw, one
// chunk ahead (ring of 2), as many blocks per SM as registers allow: 16-row blocks three per SM at
// 80 registers (run 77, with 8 outputs a thread: within 1% of 32-row blocks at 32-64 rows); f32 weights
// decoded in staging (that form on 16-bit weights, MEMRA_CUDA_LINEAR_GEMM_RAW=0, is 8-30% slower:
// its weights wait in registers a chunk ahead, run 80).
template <typename Row>
cudaError_t launch_gemm_rows(const LinearArgs& a, cudaStream_t stream, int rows_per_block) {
  if constexpr (kRawWeights<Row>) {
    if (gemm_raw_weights()) {
      if (rows_per_block <= 8) return launch_gemm_raw<Row, 4, 4, 2>(a, stream);
      if (rows_per_block <= 16) return launch_gemm_raw<Row, 8, 3, 2>(a, stream);
      return launch_gemm_raw<Row, 16, 2, 2>(a, stream);
    }
  }
  if (rows_per_block <= 8) return launch_gemm_staged<Row, 4, 4>(a, stream);
  if (rows_per_block <= 16) return launch_gemm_staged<Row, 8, 3>(a, stream);
  return launch_gemm_staged<Row, 16, 2>(a, stream);
}

// The most rows a 16-bit round sends to linear_exact_rows_kernel where the register-tiled form is
// not taken: every row count. 2-15 rows since run 116 (batch 8 +7%, verify 6 −6.6% against the
// tiled kernel); more rows whose register-tiled grid would not fill the SMs (wo_b at 16 rows, wq_a,
// the router, the shared expert, the compressor) since run 207 (H100: verify 16 3.547 → 3.444 ms,
// wo_b 72 → 48 us a layer; batch 32 / 64 +0.4 / +0.6%); every 16-32-row round since run 208.
// MEMRA_CUDA_LINEAR_ROWS (A/B timing; same bits): 0 = never (the tiled kernel), n = up to n rows
// (15: the rule before run 207).
int rows_kernel_max_rows() {
  static const int setting = switch_zero_or_count("MEMRA_CUDA_LINEAR_ROWS", std::numeric_limits<int>::max());
  return setting;
}

template <typename WT, int KO>
cudaError_t launch_rows_ko(const LinearArgs& a, cudaStream_t stream, unsigned out_blocks) {
  const int rb = a.rows <= 4 ? 4 : a.rows <= 6 ? 6 : 8;
  const dim3 grid(static_cast<unsigned>((a.rows + rb - 1) / rb), out_blocks, a.groups);
  if (rb == 4) return launch(linear_exact_rows_kernel<WT, KO, 4>, grid, kBlock, 0, stream, a);
  if (rb == 6) return launch(linear_exact_rows_kernel<WT, KO, 6>, grid, kBlock, 0, stream, a);
  return launch(linear_exact_rows_kernel<WT, KO, 8>, grid, kBlock, 0, stream, a);
}
template <typename WT>
cudaError_t launch_rows(const LinearArgs& a, cudaStream_t stream, int ko) {
  const unsigned gm = static_cast<unsigned>((a.out + kOutsPerBlock * ko - 1) / (kOutsPerBlock * ko));
  if (ko == 4) return launch_rows_ko<WT, 4>(a, stream, gm);
  if (ko == 2) return launch_rows_ko<WT, 2>(a, stream, gm);
  return launch_rows_ko<WT, 1>(a, stream, gm);
}

template <typename Row>
cudaError_t launch_tiled(const LinearArgs& a, cudaStream_t stream, dim3 grid, int ko) {
  if (ko == 4) return launch(linear_exact_tiled_kernel<Row, 4>, grid, kBlock, 0, stream, a);
  if (ko == 2) return launch(linear_exact_tiled_kernel<Row, 2>, grid, kBlock, 0, stream, a);
  return launch(linear_exact_tiled_kernel<Row, 1>, grid, kBlock, 0, stream, a);
}

template <typename Row>
cudaError_t launch(const LinearArgs& a, cudaStream_t stream, int form) {
  // A rows-kernel form names its outputs per warp (kLinearRowsN = −200 − N); 16-bit weights only,
  // others take the library's choice.
  bool rows_form = form == kLinearRows1 || form == kLinearRows2 || form == kLinearRows4;
  if (rows_form && !kRawWeights<Row>) rows_form = false, form = 0;
  const unsigned gx = static_cast<unsigned>((a.out + kOutsPerBlock - 1) / kOutsPerBlock);
  const unsigned gy = static_cast<unsigned>((a.rows + 7) / 8);
  if (a.rows == 1 && form >= 0) {
    if constexpr (kPlainRow<Row>) return launch(linear_one_row_kernel<Row>, dim3(gx, 1, a.groups), kBlock, 0, stream, a);
    else return launch(linear_exact_kernel<Row, 1>, dim3(gx, 1, a.groups), kBlock, 0, stream, a);
  }
  if constexpr (kPlainRow<Row>) {
    if (form == kLinearPerRow || (form == 0 && per_row_fits(a)))
      return launch(linear_one_row_kernel<Row>, dim3(gx, a.rows, a.groups), kBlock, 0, stream, a);
    const bool gemm_fits =
        tiled_ok<Row>(a, static_cast<unsigned>((a.out + kGemmOuts - 1) / kGemmOuts)) && gemm_offsets_fit(a);
    if (form < 0 && !rows_form && gemm_fits) return launch_gemm_rows<Row>(a, stream, -form);
    const int from = gemm_min_rows();
    if (form == 0 && from > 0 && a.rows >= from && gemm_fits) {
      const int sms = device_sms();
      const int tile = gemm_tile_rows(a, sms);
      if (gemm_fills_sms(a, tile, sms)) return launch_gemm_rows<Row>(a, stream, tile);
    }
    const int env = tiled_setting();
    const int ko = form == 1 || form == 2 || form == 4 ? form
                   : rows_form                            ? -form - 200
                   : env > 0                              ? env
                                                          : tiled_outs_per_warp(a, gy);
    const int per_block = kOutsPerBlock * ko;
    const unsigned gm = static_cast<unsigned>((a.out + per_block - 1) / per_block);
    if ((env >= 0 || form > 0) && tiled_ok<Row>(a, gm)) {
      if constexpr (kRawWeights<Row>) {
        using WT = std::remove_const_t<std::remove_pointer_t<decltype(Row::w)>>;
        if (rows_form || (form == 0 && a.rows <= rows_kernel_max_rows()))
          return launch_rows<WT>(a, stream, ko);
      }
      return launch_tiled<Row>(a, stream, dim3(gy, gm, a.groups), ko);
    }
  }
  return launch(linear_exact_kernel<Row, 8>, dim3(gx, gy, a.groups), kBlock, 0, stream, a);  // packed weights, unaligned rows
}

}  // namespace

const char* wtype_name(WType t) {
  switch (t) {
    case WType::kF32: return "f32";
    case WType::kBF16: return "bf16";
    case WType::kF16: return "f16";
    case WType::kFp8Block: return "fp8-e4m3";
    case WType::kFp4Block: return "fp4-e2m1";
  }
  return "?";
}

size_t wtype_size(WType t) {
  switch (t) {
    case WType::kF32: return 4;
    case WType::kBF16:
    case WType::kF16: return 2;
    default: return 0;
  }
}

bool wtype_packed(WType t) { return t == WType::kFp8Block || t == WType::kFp4Block; }

size_t wtype_matrix_bytes(WType t, int64_t rows, int64_t cols) {
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  if (t == WType::kFp8Block) return n;
  if (t == WType::kFp4Block) return static_cast<size_t>(rows) * static_cast<size_t>(cols / 2);
  return n * wtype_size(t);
}

bool wscale_valid(WType t, const WScale& s, int in) {
  if (!wtype_packed(t)) return true;
  return s.ptr && s.block_rows >= 1 && s.block_cols >= 1 && s.cols == (in + s.block_cols - 1) / s.block_cols &&
         (t != WType::kFp4Block || in % 2 == 0);
}

cudaError_t linear_exact(const LinearArgs& a, cudaStream_t stream, int form) {
  if (a.rows == 0 || a.out == 0) return cudaSuccess;
  const bool hc = a.hc.X != nullptr;  // the hc_post epilogue: no y, one group
  if (!a.x || a.x16 || !a.w || (!hc && (!a.y || a.y_stride < a.out)) || a.rows < 0 || a.in <= 0 || a.out < 0 || a.groups < 1 ||
      a.groups > 65535 || (a.rows + 7) / 8 > 65535 || a.x_stride < a.in || a.w_gstride % a.in != 0 ||
      !wscale_valid(a.wtype, a.ws, a.in) ||
      (hc && (a.groups != 1 || !a.hc.post || !a.hc.comb || a.hc.n < 1 || a.hc.n > kMaxHc)))
    return cudaErrorInvalidValue;
  switch (a.wtype) {
    case WType::kF32: return launch<PlainRow<float>>(a, stream, form);
    case WType::kBF16: return launch<PlainRow<__nv_bfloat16>>(a, stream, form);
    case WType::kF16: return launch<PlainRow<__half>>(a, stream, form);
    case WType::kFp8Block: return launch<Fp8Row>(a, stream, form);
    case WType::kFp4Block: return launch<Fp4Row>(a, stream, form);
  }
  return cudaErrorInvalidValue;
}

}  // namespace memra::cuda
