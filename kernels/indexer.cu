// The lightning indexer's scores (docs/architecture.md §3.6) for CSA layers:
//   score[t, s] = Σ_h relu(qi[t,h]·IDXK[s]) · softmax_scale · (wi[t,h] · weight_scale),  s < (pos_t+1)/m
// One warp per (row, entry) or (row, 4 entries): each head's dot is a lane-strided fma chain + a
// butterfly with warp_sum's bits (indexer_scores_wide_kernel: warp_sum_many for 8 heads × 4 entries
// at once), the heads are summed h-ascending in one fma chain. A row's scores depend only on its own q, weights and the
// keys, never on the launch's row count. Entries past a row's causal limit are not written.
// Each block first copies its row's query and head weights into shared memory (stage_query): every
// warp reads the query di/32 times per head group, and from L2 each group waited a round trip.
//
//   grid (rows, ceil(max_visible / (8·EPW)))   block 256 (8 warps, EPW = 1 or 4 entries each);
//   rounds of 128+ rows: grid y a quarter of that, each block 4 chunks of 8·EPW entries in turn
//   (where di is 64 or 128: indexer_scores_tiled, grid (rows / 32, max_visible / 64), each value's
//   dot one thread's, in the warp order)
#include "ab_switch.h"
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

// A warp's work in a scores block: the row's query and head weights (staged by stage_query) and the
// warp's EPW entries s0 … s0 + EPW − 1 (key[e]: an entry past the row's limit points at s0's key and
// is not written). Returns false, before stage_query's barrier for the whole block when no warp of
// it has an entry, or after it for a warp without one: every thread of a block reaches the barrier
// or none does.
template <int EPW>
struct WarpEntries {
  int row;
  int64_t visible, s0;
  const float* q;
  const float* ws;
  const float* key[EPW];
};

template <int EPW>
__device__ __forceinline__ bool warp_entries(const IndexerArgs& a, bool stage_q, float* staged, WarpEntries<EPW>& w) {
  const int warp = threadIdx.x / kWarp;
  w.row = blockIdx.x;
  w.visible = (static_cast<int64_t>(a.row_pos[w.row]) + 1) / a.m;
  if (static_cast<int64_t>(blockIdx.y) * kWarps * EPW >= w.visible) return false;  // the whole block
  float* ws = staged + (stage_q ? a.Hi * a.di : 0);
  w.q = stage_query(a, w.row, stage_q, staged, ws);
  w.ws = ws;
  w.s0 = (static_cast<int64_t>(blockIdx.y) * kWarps + warp) * EPW;
  if (w.s0 >= w.visible) return false;
  const float* entries = a.seqs[a.row_seq[w.row]].layers[a.layer].idx.entries;
#pragma unroll
  for (int e = 0; e < EPW; ++e) w.key[e] = entries + (w.s0 + e < w.visible ? w.s0 + e : w.s0) * a.di;
  return true;
}

// The warp's entries in chunk cy of its row (kWarps·EPW entries a chunk, warp_entries' for cy =
// blockIdx.y) once the block's query is staged; false when it has none.
template <int EPW>
__device__ __forceinline__ bool chunk_entries(const IndexerArgs& a, int64_t cy, WarpEntries<EPW>& w) {
  const int warp = threadIdx.x / kWarp;
  w.s0 = (cy * kWarps + warp) * EPW;
  if (w.s0 >= w.visible) return false;
  const float* entries = a.seqs[a.row_seq[w.row]].layers[a.layer].idx.entries;
#pragma unroll
  for (int e = 0; e < EPW; ++e) w.key[e] = entries + (w.s0 + e < w.visible ? w.s0 + e : w.s0) * a.di;
  return true;
}

// kHeadsAtOnce heads' lane-strided dot products with the warp's EPW keys side by side (their loads
// and FMAs overlap): d[e·kHeadsAtOnce + u] = lane's part of q[h0 + u]·key[e], from +0. UNROLL
// unrolls the lane loop (every q and key load of a lane in flight at V4-Flash's di = 128).
template <int EPW, int UNROLL>
__device__ __forceinline__ void head_group_dots(const float* q, int h0, const WarpEntries<EPW>& w, int di,
                                                float (&d)[EPW * kHeadsAtOnce]) {
  const int lane = threadIdx.x % kWarp;
#pragma unroll
  for (int j = 0; j < EPW * kHeadsAtOnce; ++j) d[j] = 0.0f;
#pragma unroll UNROLL
  for (int i = lane; i < di; i += kWarp) {
    float k[EPW];
#pragma unroll
    for (int e = 0; e < EPW; ++e) k[e] = w.key[e][i];
#pragma unroll
    for (int u = 0; u < kHeadsAtOnce; ++u) {
      const float qv = q[static_cast<int64_t>(h0 + u) * di + i];
#pragma unroll
      for (int e = 0; e < EPW; ++e) d[e * kHeadsAtOnce + u] = __fmaf_rn(qv, k[e], d[e * kHeadsAtOnce + u]);
    }
  }
}

// The heads past the last whole group, one at a time: add(e, h, term) for each entry e, h ascending.
template <int EPW, typename Add>
__device__ __forceinline__ void remaining_heads(const IndexerArgs& a, int h0, const WarpEntries<EPW>& w, Add add) {
  const int lane = threadIdx.x % kWarp;
  for (int h = h0; h < a.Hi; ++h) {
    const float* qh = w.q + static_cast<int64_t>(h) * a.di;
#pragma unroll
    for (int e = 0; e < EPW; ++e) {
      float d = 0.0f;
      for (int i = lane; i < a.di; i += kWarp) d = __fmaf_rn(qh[i], w.key[e][i], d);
      d = warp_sum(d);
      add(e, h, fmaxf(d, 0.0f) * a.softmax_scale);
    }
  }
}

// One entry per warp (few rows of few entries: as many warps as entries). Its head group's 8
// butterflies run side by side, each added into acc in h order: each value's operations are the
// one-head loop's.
__global__ void __launch_bounds__(kBlock) indexer_scores_kernel(IndexerArgs a, bool stage_q) {
  constexpr int EPW = 1;
  pdl_begin();
  MEMRA_DYNAMIC_SMEM(float4, staged4, 16);  // qs [Hi·di] when stage_q, then ws [Hi]
  WarpEntries<EPW> w;
  if (!warp_entries(a, stage_q, reinterpret_cast<float*>(staged4), w)) return;
  float acc = 0.0f;
  int h0 = 0;
  for (; h0 + kHeadsAtOnce <= a.Hi; h0 += kHeadsAtOnce) {
    float d[kHeadsAtOnce];
    // Unrolled by 4: without it, pdl_begin()'s barrier at the kernel's start left ptxas a schedule at
    // 48 registers that took a 2k decode step's scores 12.9 -> 31 us (runs 49, 51, 55).
    head_group_dots<EPW, 4>(w.q, h0, w, a.di, d);
#pragma unroll
    for (int u = 0; u < kHeadsAtOnce; ++u) acc = __fmaf_rn(fmaxf(warp_sum(d[u]), 0.0f) * a.softmax_scale, w.ws[h0 + u], acc);
  }
  remaining_heads(a, h0, w, [&](int, int h, float term) { acc = __fmaf_rn(term, w.ws[h], acc); });
  if (threadIdx.x % kWarp == 0) a.scores[static_cast<int64_t>(w.row) * a.score_stride + w.s0] = acc;
}

// Four entries per warp (rounds of many rows, rows of many entries: a query load serves 4 dot
// products): the one-entry kernel's values, their 32 butterflies per head group as one
// warp_sum_many (warp_sum's bits in a fifth of the shuffles; run 50: 32.6 -> 25.9 us for a 32k
// decode step). For one entry per warp the 8 butterflies stay side by side (runs 50-51 measured
// warp_sum_many there 12.9 -> 22-31 us).
__device__ __forceinline__ void wide_scores(const IndexerArgs& a, const WarpEntries<4>& w) {
  constexpr int EPW = 4;
  const int lane = threadIdx.x % kWarp;
  // Lane l accumulates entry me = l % EPW's score (lanes < EPW write them).
  const int me = lane % EPW;
  float acc = 0.0f;
  int h0 = 0;
  constexpr int kVals = kHeadsAtOnce * EPW;  // value j = e·kHeadsAtOnce + u, its sum held by lane j
  for (; h0 + kHeadsAtOnce <= a.Hi; h0 += kHeadsAtOnce) {
    float d[kVals];
    head_group_dots<EPW, 1>(w.q, h0, w, a.di, d);
    const float term = fmaxf(warp_sum_many<kVals>(d), 0.0f) * a.softmax_scale;  // value j = lane
#pragma unroll
    for (int u = 0; u < kHeadsAtOnce; ++u) {
      const float t = __shfl_sync(kFullMask, term, me * kHeadsAtOnce + u);
      acc = __fmaf_rn(t, w.ws[h0 + u], acc);
    }
  }
  remaining_heads(a, h0, w, [&](int e, int h, float term) {
    if (e == me) acc = __fmaf_rn(term, w.ws[h], acc);
  });
  if (lane < EPW && w.s0 + lane < w.visible) a.scores[static_cast<int64_t>(w.row) * a.score_stride + w.s0 + lane] = acc;
}

// kChunks: the block also takes chunks blockIdx.y + gridDim.y, + 2·gridDim.y, … (a many-row
// round), its query staged once; a warp without an entry in the first has none in the others.
template <bool kChunks>
__global__ void __launch_bounds__(kBlock) indexer_scores_wide_kernel(IndexerArgs a, bool stage_q) {
  pdl_begin();
  MEMRA_DYNAMIC_SMEM(float4, staged4, 16);  // qs [Hi·di] when stage_q, then ws [Hi]
  WarpEntries<4> w;
  if (!warp_entries(a, stage_q, reinterpret_cast<float*>(staged4), w)) return;
  wide_scores(a, w);
  if constexpr (kChunks)
    for (int64_t cy = blockIdx.y + gridDim.y; chunk_entries(a, cy, w); cy += gridDim.y) wide_scores(a, w);
}

// ---- the tiled form (rounds of kTiledFrom+ rows: a prefill) ------------------------------------
// A block takes kTiledRows rows × kTiledEntries entries; thread (warp w, lane l) the 4 rows 4w … 4w+3
// and the entries l and l + 32. Each (row, entry, head) value is the warp kernels' arithmetic done
// by one thread: lane j's partial of the dot (fma chain over i = j, j + 32, …, from +0) for all 32 j,
// added in warp_sum's butterfly tree (lane_tree: strides 16, 8, 4, 2, 1), then relu, the scale and
// the h-ascending fma into the score. So the bits are the warp kernels' (ops indexer compares them),
// without their per-value shuffles: the warp kernels spent ~4 instructions on loads, addresses and
// butterflies per FMA (run 150's ncu: 614 M warp instructions for 143 M FFMA, 840 us a prefill).
// Keys and queries sit in shared memory as each lane's partial inputs side by side (a row of
// kPer·32 floats + 4: lanes' entries 16 bytes apart in the banks); the rows' queries go kTiledHeads
// heads at a time, the next heads' loaded into registers while the current ones are used.
constexpr int kTiledRows = 32;
constexpr int kTiledEntries = 64;
constexpr int kTiledHeads = 2;
constexpr int kTiledFrom = 128;

template <int kPer>
struct TiledVec;
template <>
struct TiledVec<2> {
  using T = float2;
};
template <>
struct TiledVec<4> {
  using T = float4;
};

template <int kPer>
__host__ __device__ constexpr int tiled_stride() {
  return kPer * kWarp + 4;
}

template <int kPer>
size_t tiled_smem_bytes(int Hi) {
  return sizeof(float) * (static_cast<size_t>(kTiledEntries + kTiledHeads * kTiledRows) * tiled_stride<kPer>() +
                          static_cast<size_t>(kTiledRows) * Hi);
}

__device__ __forceinline__ float comp(const float2& v, int m) { return m == 0 ? v.x : v.y; }
__device__ __forceinline__ float comp(const float4& v, int m) { return m == 0 ? v.x : m == 1 ? v.y : m == 2 ? v.z : v.w; }

struct Octet {
  float v[8];  // (row i, entry e) at 2i + e
};

// The butterfly's value for lane j's subtree at stride S: V(S, j) = V(2S, j) + V(2S, j + S), and
// V(32, j) = lane j's partial (warp_sum adds xor 16 first, then 8, 4, 2, 1: every lane ends with
// V(1, 0), the additions commuting). q: the warp's 4 query rows (stride tiled_stride), k0 / k1:
// the thread's two keys; j0 is J's part not known at compile time.
template <int kPer, int S, int J>
__device__ __forceinline__ Octet lane_tree(const float* q, const float* k0, const float* k1, int j0) {
  using V = typename TiledVec<kPer>::T;
  Octet r;
  if constexpr (S == kWarp) {
    const int j = j0 + J;
    V qv[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) qv[i] = *reinterpret_cast<const V*>(q + i * tiled_stride<kPer>() + kPer * j);
    const V kv[2] = {*reinterpret_cast<const V*>(k0 + kPer * j), *reinterpret_cast<const V*>(k1 + kPer * j)};
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float d = 0.0f;
#pragma unroll
        for (int m = 0; m < kPer; ++m) d = __fmaf_rn(comp(qv[i], m), comp(kv[e], m), d);
        r.v[2 * i + e] = d;
      }
  } else {
    const Octet x = lane_tree<kPer, 2 * S, J>(q, k0, k1, j0), y = lane_tree<kPer, 2 * S, J + S>(q, k0, k1, j0);
#pragma unroll
    for (int p = 0; p < 8; ++p) r.v[p] = x.v[p] + y.v[p];
  }
  return r;
}

__device__ __forceinline__ void add_octet(Octet& x, const Octet& y) {
#pragma unroll
  for (int p = 0; p < 8; ++p) x.v[p] = x.v[p] + y.v[p];
}

// V(1, 0) of the thread's 8 values: the 8 subtrees V(8, b) (4 partials each, lane_tree), b the
// 3-bit reversal of c = 0 … 7 (0, 4, 2, 6, 1, 5, 3, 7), merged as a binary counter: c odd closes a
// V(4, ·), c ≡ 3 mod 4 a V(2, ·), c = 7 the whole. A loop, not unrolled: 4 partials' operands
// live at a time (unrolled whole, ptxas kept all 32 partials' loads in flight and spilled).
template <int kPer>
__device__ __forceinline__ Octet warp_order_dots(const float* q, const float* k0, const float* k1) {
  Octet s4, s2, total;
#pragma unroll 1
  for (int c = 0; c < 8; ++c) {
    const int b = __brev(static_cast<unsigned>(c)) >> 29;
    const Octet v = lane_tree<kPer, 8, 0>(q, k0, k1, b);
    if (!(c & 1)) {
      s4 = v;
      continue;
    }
    add_octet(s4, v);  // V(4, ·) = V(8, b − 4) + V(8, b)
    if (!(c & 2)) {
      s2 = s4;
      continue;
    }
    add_octet(s2, s4);  // V(2, ·)
    if (!(c & 4)) {
      total = s2;
      continue;
    }
    add_octet(total, s2);  // V(1, 0)
  }
  return total;
}

template <int kPer>
__global__ void __launch_bounds__(kBlock) indexer_scores_tiled_kernel(IndexerArgs a) {
  using V = typename TiledVec<kPer>::T;
  constexpr int kS = tiled_stride<kPer>();
  constexpr int kQLoads = kTiledHeads * kTiledRows * kWarp / kBlock;  // a thread's vectors of a head stage
  constexpr int kKLoads = kTiledEntries * kWarp / kBlock;
  pdl_begin();
  MEMRA_DYNAMIC_SMEM(float4, tiled4, 16);
  float* ks = reinterpret_cast<float*>(tiled4);  // [kTiledEntries][kS]: ks[e][kPer·j + m] = key[e0 + e][j + 32m]
  float* qs = ks + kTiledEntries * kS;           // [kTiledHeads][kTiledRows][kS], the same for q
  float* ws = qs + kTiledHeads * kTiledRows * kS;  // [kTiledRows][Hi]: wi · weight_scale
  __shared__ int rseq[kTiledRows];
  __shared__ int64_t rvis[kTiledRows], seqvis[kTiledRows];  // seqvis[r]: the most any row of r's sequence sees; -1: not its first row
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int r0 = blockIdx.x * kTiledRows, nr = min(kTiledRows, a.rows - r0), Hi = a.Hi;
  const int64_t e0 = static_cast<int64_t>(blockIdx.y) * kTiledEntries;
  if (threadIdx.x < kTiledRows) {
    const int r = threadIdx.x;
    rseq[r] = r < nr ? a.row_seq[r0 + r] : -1;
    rvis[r] = r < nr ? (static_cast<int64_t>(a.row_pos[r0 + r]) + 1) / a.m : 0;
  }
  __syncthreads();
  if (threadIdx.x < nr) {
    const int r = threadIdx.x, seq = rseq[r];
    int64_t vis = 0;
    bool first = true;
    for (int o = 0; o < nr; ++o) {
      first = first && !(o < r && rseq[o] == seq);
      if (rseq[o] == seq) vis = max(vis, rvis[o]);
    }
    seqvis[r] = first ? vis : -1;
  }
  __syncthreads();
  // The block's rows by sequence (a round's rows of one sequence are usually all of them): keys are
  // staged for one sequence at a time; a thread's values for rows of another are not stored.
  for (int first = 0; first < nr; ++first) {
    const int seq = rseq[first];
    const int64_t vis = seqvis[first];  // entries the sequence's rows here see, at most
    if (vis < 0 || e0 >= vis) continue;  // block-uniform
    __syncthreads();  // the previous sequence's reads of ks, qs and ws are done
    const float* entries = a.seqs[seq].layers[a.layer].idx.entries;
    {
      V kv[kKLoads];
#pragma unroll
      for (int u = 0; u < kKLoads; ++u) {
        const int id = threadIdx.x + u * kBlock, e = id / kWarp, j = id % kWarp;
        float c[kPer];
#pragma unroll
        for (int m = 0; m < kPer; ++m) c[m] = e0 + e < vis ? entries[(e0 + e) * (kPer * kWarp) + j + kWarp * m] : 0.0f;
        if constexpr (kPer == 2) kv[u] = make_float2(c[0], c[1]);
        else kv[u] = make_float4(c[0], c[1], c[2], c[3]);
      }
#pragma unroll
      for (int u = 0; u < kKLoads; ++u) {
        const int id = threadIdx.x + u * kBlock, e = id / kWarp, j = id % kWarp;
        *reinterpret_cast<V*>(ks + e * kS + kPer * j) = kv[u];
      }
    }
    for (int id = threadIdx.x; id < kTiledRows * Hi; id += kBlock) {
      const int r = id / Hi, h = id - r * Hi;
      ws[id] = rseq[r] == seq ? a.wi[static_cast<int64_t>(r0 + r) * Hi + h] * a.weight_scale : 0.0f;
    }
    V qv[kQLoads];
    const auto load_q = [&](int h0) {
#pragma unroll
      for (int u = 0; u < kQLoads; ++u) {
        const int id = threadIdx.x + u * kBlock, hh = id / (kTiledRows * kWarp), r = id / kWarp % kTiledRows, j = id % kWarp;
        const float* q = a.qi + (static_cast<int64_t>(r0 + r) * Hi + h0 + hh) * (kPer * kWarp) + j;
        float c[kPer];
#pragma unroll
        for (int m = 0; m < kPer; ++m) c[m] = rseq[r] == seq ? q[kWarp * m] : 0.0f;
        if constexpr (kPer == 2) qv[u] = make_float2(c[0], c[1]);
        else qv[u] = make_float4(c[0], c[1], c[2], c[3]);
      }
    };
    load_q(0);
    float acc[8];
#pragma unroll
    for (int p = 0; p < 8; ++p) acc[p] = 0.0f;
    const float* k0 = ks + lane * kS;
    const float* k1 = ks + (lane + kWarp) * kS;
    for (int h0 = 0; h0 < Hi; h0 += kTiledHeads) {
      __syncthreads();  // the last stage's reads of qs are done
#pragma unroll
      for (int u = 0; u < kQLoads; ++u) {
        const int id = threadIdx.x + u * kBlock, hh = id / (kTiledRows * kWarp), r = id / kWarp % kTiledRows, j = id % kWarp;
        *reinterpret_cast<V*>(qs + (hh * kTiledRows + r) * kS + kPer * j) = qv[u];
      }
      __syncthreads();
      if (h0 + kTiledHeads < Hi) load_q(h0 + kTiledHeads);  // in flight while these heads are used
#pragma unroll
      for (int hh = 0; hh < kTiledHeads; ++hh) {
        const Octet d = warp_order_dots<kPer>(qs + (hh * kTiledRows + 4 * warp) * kS, k0, k1);
#pragma unroll
        for (int p = 0; p < 8; ++p)
          acc[p] = __fmaf_rn(fmaxf(d.v[p], 0.0f) * a.softmax_scale, ws[(4 * warp + p / 2) * Hi + h0 + hh], acc[p]);
      }
    }
#pragma unroll
    for (int p = 0; p < 8; ++p) {
      const int r = 4 * warp + p / 2;
      const int64_t e = e0 + lane + kWarp * (p % 2);
      if (rseq[r] == seq && e < rvis[r]) a.scores[static_cast<int64_t>(r0 + r) * a.score_stride + e] = acc[p];
    }
  }
}

constexpr int kChunkRows = 128;
constexpr int kChunksPerBlock = 4;

// MEMRA_CUDA_INDEXER_CHUNKS=0 (A/B timing; the same bits): one chunk a block whatever the rows.
bool chunks_per_block_on() {
  static const bool on = switch_on("MEMRA_CUDA_INDEXER_CHUNKS");
  return on;
}

// MEMRA_CUDA_INDEXER_TILED=0 (A/B timing; the same bits): the warp kernels whatever the rows.
bool tiled_on() {
  static const bool on = switch_on("MEMRA_CUDA_INDEXER_TILED");
  return on;
}

// The tiled kernel for this round, or null where it does not apply (di other than 64 or 128, an odd
// head count, its shared memory past the opt-in).
using TiledKernel = void (*)(IndexerArgs);
TiledKernel tiled_kernel(const IndexerArgs& a, int smem_optin, size_t& smem) {
  if (a.Hi % kTiledHeads != 0) return nullptr;
  if (a.di == 4 * kWarp) smem = tiled_smem_bytes<4>(a.Hi);
  else if (a.di == 2 * kWarp) smem = tiled_smem_bytes<2>(a.Hi);
  else return nullptr;
  if (smem > static_cast<size_t>(smem_optin)) return nullptr;
  return a.di == 4 * kWarp ? indexer_scores_tiled_kernel<4> : indexer_scores_tiled_kernel<2>;
}

}  // namespace

cudaError_t indexer_scores(const IndexerArgs& a, cudaStream_t stream, bool allow_stage, int form) {
  if (a.rows == 0 || a.max_visible == 0) return cudaSuccess;
  if (!a.seqs || !a.row_seq || !a.row_pos || !a.qi || !a.wi || !a.scores || a.rows < 0 || a.Hi <= 0 || a.di <= 0 ||
      a.m <= 0 || a.max_visible < 0 || a.score_stride < a.max_visible || form < 0 || form > 2 || a.q_inv_freq)
    return cudaErrorInvalidValue;
  if (form == 2 || (form == 0 && a.rows >= kTiledFrom && tiled_on())) {
    DeviceCaps caps;
    cudaError_t err = current_device_caps(caps);
    if (err != cudaSuccess) return err;
    size_t smem = 0;
    if (const TiledKernel kernel = tiled_kernel(a, caps.smem_optin, smem)) {
      const int64_t gy = (static_cast<int64_t>(a.max_visible) + kTiledEntries - 1) / kTiledEntries;
      if (gy > 65535) return cudaErrorInvalidValue;
      if ((err = allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem)) != cudaSuccess) return err;
      return launch(kernel, dim3((a.rows + kTiledRows - 1) / kTiledRows, static_cast<unsigned>(gy)), kBlock, smem, stream, a);
    }
  }
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
  // Rounds of kChunkRows+ rows (a prefill: 2048 rows × up to 16 chunks, each block staging the
  // 32 KB query for 32 entries) give a block kChunksPerBlock chunks.
  const int64_t per_block = epw == 4 && a.rows >= kChunkRows && chunks_per_block_on() ? kChunksPerBlock : 1;
  void (*kernel)(IndexerArgs, bool) = epw == 1         ? indexer_scores_kernel
                                      : per_block > 1 ? indexer_scores_wide_kernel<true>
                                                      : indexer_scores_wide_kernel<false>;
  if (smem > 48 * 1024 && (err = allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem)) != cudaSuccess) return err;
  return launch(kernel, dim3(a.rows, static_cast<unsigned>((gy + per_block - 1) / per_block)), kBlock, smem, stream, a, stage_q);
}

}  // namespace memra::cuda
