// The CSA/HCA compressors (docs/architecture.md §3.5) on the GPU, for a round of rows that may span
// several windows and any number of sequences. Every value a window needs is found by absolute
// position: a row of this round (its projection, score + ape[p % m] added here exactly as the CPU
// adds it when it writes PEND), or a row of the state's open window (PEND, positions before the
// round), or the state's PREV (the Ca half of the window closed just before the round). So an
// entry's inputs, and therefore its bits, are the same however the positions were split into
// rounds, chunks or batches.
//
// compressor_close   grid n_closings   block 256   dynamic smem c·m row sources + w floats
//   where each of the c·m pooled rows comes from (this round's projections, PEND or PREV) found
//   once per block; per channel (thread-strided): max over the rows, p_j = exp(s_j − max), sum (j
//   ascending), entry = Σ_j fma(kv_j, p_j / sum) (j ascending), a CSA window's 8 rows held in
//   registers across the three passes; then RMSNorm over w (block_sum<256>) and RoPE of the last
//   2·half dims at the window's start position e·m
//   (form 3; form 1, the kernel before run 117, found each row's source per channel and pass)
// compressor_pool    grid (n_closings, w / 32)   block 256   dynamic smem c·m row sources + 2·c·m·32 floats
//   windows of more than 8 rows (HCA, m = 128): a block's threads stage c·m rows of 32 channels,
//   warp 0 runs the same passes over them (form 2, the library's there); then
// compressor_finish  grid n_closings   block 256   the RMSNorm and RoPE above, in place in the entry
// compressor_update  grid n_seqs       block 256
//   PREV ← Ca half of the last window closed in the round (CSA); barrier; PEND ← the round's rows of
//   the open window (compressor_moves.cuh). A journaled sequence's rows also go to its journal
//   (keep_rows.cu replays them).
#include "ab_switch.h"
#include "common.cuh"
#include "compressor_moves.cuh"
#include "launch.cuh"
#include "ops.h"
#include "rope.cuh"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;

__device__ __forceinline__ const CompressorDev& state_of(const CompressorArgs& a, const SeqDesc& s) {
  const LayerDev& l = s.layers[a.layer];
  return a.indexer ? l.idx : l.cmp;
}

// kv and score (ape included) of column `col` at absolute position p: this round's row when
// p ≥ pos0, else the state's PEND row (p lies in the window open when the round started).
__device__ __forceinline__ void fetch(const CompressorArgs& a, const SeqDesc& s, const CompressorDev& st, int64_t p,
                                      int col, float& kv, float& sc) {
  const int cw = a.c * a.w;
  const int slot = static_cast<int>(p % a.m);
  if (p >= s.pos0) {
    const int64_t row = s.row0 + (p - s.pos0);
    kv = a.kv[row * cw + col];
    sc = a.score[row * cw + col] + a.ape[static_cast<int64_t>(slot) * cw + col];
  } else {
    kv = st.pend_kv[static_cast<int64_t>(slot) * cw + col];
    sc = st.pend_score[static_cast<int64_t>(slot) * cw + col];
  }
}

// Row j (0 … c·m−1) of the pooling of entry e, channel ch.
__device__ __forceinline__ void pool_row(const CompressorArgs& a, const SeqDesc& s, const CompressorDev& st, int64_t e,
                                         int j, int ch, float& kv, float& sc) {
  const int m = a.m;
  if (a.c == 2 && j < m) {  // Ca half of window e−1
    if (e == 0) {
      kv = 0.0f;
      sc = -INFINITY;
    } else if (e * m <= s.pos0) {  // window e−1 closed before the round: PREV holds it
      kv = st.prev_kv[static_cast<int64_t>(j) * a.w + ch];
      sc = st.prev_score[static_cast<int64_t>(j) * a.w + ch];
    } else {
      fetch(a, s, st, (e - 1) * m + j, ch, kv, sc);
    }
    return;
  }
  const int r = a.c == 2 ? j - m : j;
  fetch(a, s, st, e * m + r, (a.c == 2 ? a.w : 0) + ch, kv, sc);
}

// One channel's pooled value over `rows` rows: max, p_j = exp(s_j − max), sum (j ascending), then
// Σ_j fma(kv_j, p_j / sum) (j ascending); each pass loads kBatch rows' values (load(j, kv, sc))
// before it uses them, instead of one load after another (run 63: 44 -> 37 us for a CSA layer's two
// launches at 32/64 rows). Both close forms' order.
constexpr int kBatch = 8;

template <typename Load>
__device__ __forceinline__ float pool_passes(int rows, Load load) {
  float kv[kBatch], sc[kBatch];
  const auto batch = [&](int j0) {
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (j0 + b < rows) load(j0 + b, kv[b], sc[b]);
  };
  float mx = -INFINITY, sum = 0.0f, acc = 0.0f;
  for (int j0 = 0; j0 < rows; j0 += kBatch) {
    batch(j0);
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (j0 + b < rows) mx = fmaxf(mx, sc[b]);
  }
  for (int j0 = 0; j0 < rows; j0 += kBatch) {
    batch(j0);
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (j0 + b < rows) sum += expf(sc[b] - mx);
  }
  for (int j0 = 0; j0 < rows; j0 += kBatch) {
    batch(j0);
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (j0 + b < rows) acc = __fmaf_rn(kv[b], expf(sc[b] - mx) / sum, acc);
  }
  return acc;
}

// The pooled entry's RMSNorm over w (block_sum<256>; its barriers also publish entry[]), RoPE of its
// last 2·half dims at the window's start position e·m, then the store into the state's entries.
__device__ __forceinline__ void finish_entry(const CompressorArgs& a, const CompressorDev& st, int64_t e, float* entry,
                                             float* scratch) {
  float ss = 0.0f;
  for (int ch = threadIdx.x; ch < a.w; ch += kBlock) ss = __fmaf_rn(entry[ch], entry[ch], ss);
  ss = block_sum<kBlock>(ss, scratch);
  const float r = rms_inverse(ss, a.w, a.eps);
  for (int ch = threadIdx.x; ch < a.w; ch += kBlock) entry[ch] = a.norm[ch] * (entry[ch] * r);
  __syncthreads();
  float* tail = entry + (a.w - 2 * a.half);
  for (int i = threadIdx.x; i < a.half; i += kBlock)
    rope_pair(tail + 2 * i, a.inv_freq[i], static_cast<int32_t>(e * a.m), 1.0f);
  __syncthreads();
  float* out = st.entries + e * a.w;
  for (int ch = threadIdx.x; ch < a.w; ch += kBlock) out[ch] = entry[ch];
}

__global__ void __launch_bounds__(kBlock) compressor_close_kernel(CompressorArgs a, const Closing* closings) {
  pdl_begin();
  MEMRA_DYNAMIC_SMEM(float, entry, 4);  // [w]
  __shared__ float scratch[kBlock / kWarp];
  const Closing cl = closings[blockIdx.x];
  if (cl.seq < 0) return;  // padding (Shard::upload_plan): the whole block leaves together
  const SeqDesc& s = a.seqs[cl.seq];
  const CompressorDev& st = state_of(a, s);
  const int64_t e = cl.entry;
  const int rows = a.c * a.m;
  for (int ch = threadIdx.x; ch < a.w; ch += kBlock)
    entry[ch] = pool_passes(rows, [&](int j, float& kv, float& sc) { pool_row(a, s, st, e, j, ch, kv, sc); });
  finish_entry(a, st, e, entry, scratch);
}

// Where row j (0 … c·m−1) of entry e's pooling comes from, as pool_row and fetch find it: kv =
// kv[ch], score = sc[ch] (+ ape[ch] for a row of this round, the addition fetch makes); kv null is
// the Ca half before entry 0 (kv 0, score −inf).
struct PoolSrc {
  const float* kv;
  const float* sc;
  const float* ape;
};

__device__ PoolSrc pool_src(const CompressorArgs& a, const SeqDesc& s, const CompressorDev& st, int64_t e, int j) {
  const int m = a.m, cw = a.c * a.w;
  int64_t p;
  int col;
  if (a.c == 2 && j < m) {  // Ca half of window e−1
    if (e == 0) return {nullptr, nullptr, nullptr};
    if (e * m <= s.pos0) return {st.prev_kv + static_cast<int64_t>(j) * a.w, st.prev_score + static_cast<int64_t>(j) * a.w, nullptr};
    p = (e - 1) * m + j, col = 0;
  } else {
    p = e * m + (a.c == 2 ? j - m : j), col = a.c == 2 ? a.w : 0;
  }
  const int64_t slot = p % m;
  if (p >= s.pos0) {
    const int64_t row = s.row0 + (p - s.pos0);
    return {a.kv + row * cw + col, a.score + row * cw + col, a.ape + slot * cw + col};
  }
  return {st.pend_kv + slot * cw + col, st.pend_score + slot * cw + col, nullptr};
}

__device__ __forceinline__ void pool_value(const PoolSrc& r, int ch, float& kv, float& sc) {
  if (!r.kv) {
    kv = 0.0f, sc = -INFINITY;
    return;
  }
  kv = r.kv[ch];
  sc = r.ape ? r.sc[ch] + r.ape[ch] : r.sc[ch];
}

constexpr int kRegRows = 8;  // a CSA window's c·m rows (m = 4): loaded once, kept in registers

__host__ __device__ inline size_t close_src_bytes(int rows) { return (static_cast<size_t>(rows) * sizeof(PoolSrc) + 15) / 16 * 16; }

// compressor_close_kernel's operations in its order (the same bits), each row's source found once.
__global__ void __launch_bounds__(kBlock) compressor_close_rows_kernel(CompressorArgs a, const Closing* closings) {
  pdl_begin();
  MEMRA_DYNAMIC_SMEM(unsigned char, close_smem, 16);
  const int rows = a.c * a.m;
  PoolSrc* src = reinterpret_cast<PoolSrc*>(close_smem);                  // [rows]
  float* entry = reinterpret_cast<float*>(close_smem + close_src_bytes(rows));  // [w]
  __shared__ float scratch[kBlock / kWarp];
  const Closing cl = closings[blockIdx.x];
  if (cl.seq < 0) return;  // padding (Shard::upload_plan): the whole block leaves together
  const SeqDesc& s = a.seqs[cl.seq];
  const CompressorDev& st = state_of(a, s);
  const int64_t e = cl.entry;
  for (int j = threadIdx.x; j < rows; j += kBlock) src[j] = pool_src(a, s, st, e, j);
  __syncthreads();
  if (rows <= kRegRows) {
    for (int ch = threadIdx.x; ch < a.w; ch += kBlock) {
      float kv[kRegRows], sc[kRegRows];
#pragma unroll
      for (int b = 0; b < kRegRows; ++b)
        if (b < rows) pool_value(src[b], ch, kv[b], sc[b]);
      float mx = -INFINITY, sum = 0.0f, acc = 0.0f;
#pragma unroll
      for (int b = 0; b < kRegRows; ++b)
        if (b < rows) mx = fmaxf(mx, sc[b]);
#pragma unroll
      for (int b = 0; b < kRegRows; ++b)
        if (b < rows) sum += expf(sc[b] - mx);
#pragma unroll
      for (int b = 0; b < kRegRows; ++b)
        if (b < rows) acc = __fmaf_rn(kv[b], expf(sc[b] - mx) / sum, acc);
      entry[ch] = acc;
    }
  } else {
    for (int ch = threadIdx.x; ch < a.w; ch += kBlock)
      entry[ch] = pool_passes(rows, [&](int j, float& kv, float& sc) { pool_value(src[j], ch, kv, sc); });
  }
  finish_entry(a, st, e, entry, scratch);
}

// A window of many pooled rows (HCA: m = 128) split by channels: block (closing, y) stages rows × 32
// channels of kv and score (and ape) in shared memory with its 256 threads' loads in flight at once,
// then warp 0 runs pool_passes over them (lane = channel: the same function and order, the same
// bits) and stores the pooled values into the entry; compressor_finish_kernel normalises and ropes
// them. The one-block form ran a closing's 512 channels on 256 threads, each channel 48 dependent
// round trips of 8 rows, on 17 blocks for a 2048-row prefill (run 121: 251 us).
constexpr int kSplitCh = kWarp;  // channels a block: warp 0's lanes
constexpr int kStageLoads = 8;   // staged values a thread loads before it stores any

__host__ __device__ inline size_t split_smem_bytes(int rows) {
  return close_src_bytes(rows) + 2 * sizeof(float) * static_cast<size_t>(rows) * kSplitCh;
}

__global__ void __launch_bounds__(kBlock) compressor_pool_kernel(CompressorArgs a, const Closing* closings) {
  pdl_begin();
  MEMRA_DYNAMIC_SMEM(unsigned char, split_smem, 16);
  const int rows = a.c * a.m;
  PoolSrc* src = reinterpret_cast<PoolSrc*>(split_smem);                  // [rows]
  float* kvs = reinterpret_cast<float*>(split_smem + close_src_bytes(rows));  // [rows][kSplitCh]
  float* scs = kvs + static_cast<size_t>(rows) * kSplitCh;                   // [rows][kSplitCh]
  const Closing cl = closings[blockIdx.x];
  if (cl.seq < 0) return;  // padding (Shard::upload_plan): the whole block leaves together
  const SeqDesc& s = a.seqs[cl.seq];
  const CompressorDev& st = state_of(a, s);
  const int64_t e = cl.entry;
  const int c0 = blockIdx.y * kSplitCh;
  for (int j = threadIdx.x; j < rows; j += kBlock) src[j] = pool_src(a, s, st, e, j);
  __syncthreads();
  const int n = rows * kSplitCh;
  for (int id0 = threadIdx.x; id0 < n; id0 += kStageLoads * kBlock) {
    float kv[kStageLoads], sc[kStageLoads];
#pragma unroll
    for (int u = 0; u < kStageLoads; ++u) {
      const int id = id0 + u * kBlock, ch = c0 + id % kSplitCh;
      kv[u] = 0.0f, sc[u] = -INFINITY;  // channels past w: never stored below
      if (id < n && ch < a.w) pool_value(src[id / kSplitCh], ch, kv[u], sc[u]);
    }
#pragma unroll
    for (int u = 0; u < kStageLoads; ++u) {
      const int id = id0 + u * kBlock;
      if (id < n) kvs[id] = kv[u], scs[id] = sc[u];
    }
  }
  __syncthreads();
  if (threadIdx.x >= kWarp) return;
  const int lane = threadIdx.x, ch = c0 + lane;
  const float v = pool_passes(rows, [&](int j, float& kv, float& sc) {
    kv = kvs[j * kSplitCh + lane];
    sc = scs[j * kSplitCh + lane];
  });
  if (ch < a.w) st.entries[e * a.w + ch] = v;
}

// The pooled values compressor_pool_kernel left in entry e: finish_entry in place.
__global__ void __launch_bounds__(kBlock) compressor_finish_kernel(CompressorArgs a, const Closing* closings) {
  pdl_begin();
  MEMRA_DYNAMIC_SMEM(float, entry, 4);  // [w]
  __shared__ float scratch[kBlock / kWarp];
  const Closing cl = closings[blockIdx.x];
  if (cl.seq < 0) return;
  const CompressorDev& st = state_of(a, a.seqs[cl.seq]);
  const int64_t e = cl.entry;
  for (int ch = threadIdx.x; ch < a.w; ch += kBlock) entry[ch] = st.entries[e * a.w + ch];
  finish_entry(a, st, e, entry, scratch);
}

__global__ void __launch_bounds__(kBlock) compressor_update_kernel(CompressorArgs a) {
  pdl_begin();
  const SeqDesc& s = a.seqs[blockIdx.x];
  const CompressorDev& st = state_of(a, s);
  const int m = a.m, cw = a.c * a.w;
  const int64_t pos0 = s.pos0;
  compressor_moves<kBlock>(st, m, a.c, a.w, pos0, pos0 + s.T, [&](int64_t p, int col, float& kv, float& sc) {
    const int64_t row = s.row0 + (p - pos0), slot = p % m;
    kv = a.kv[row * cw + col];
    sc = a.score[row * cw + col] + a.ape[slot * cw + col];
  });
  if (s.journal_row < 0) return;
  // Every row of the round into the journal (State::rewind keeping rows replays them: keep_rows.cu).
  for (int id = threadIdx.x; id < s.T * cw; id += kBlock) {
    const int r = id / cw, col = id - r * cw;
    const int64_t row = s.row0 + r, slot = (pos0 + r) % m, at = static_cast<int64_t>(s.journal_row + r) * cw + col;
    st.journal_kv[at] = a.kv[row * cw + col];
    st.journal_score[at] = a.score[row * cw + col] + a.ape[slot * cw + col];
  }
}

bool valid(const CompressorArgs& a) {
  return a.seqs && a.kv && a.score && a.ape && a.m > 0 && (a.c == 1 || a.c == 2) && a.w > 0 && a.half >= 0 &&
         2 * a.half <= a.w && (a.half == 0 || a.inv_freq) &&
         static_cast<int64_t>(a.m) * a.c * a.w < (int64_t{1} << 31);  // compressor_update's 32-bit indices
}

// MEMRA_CUDA_CLOSE_FORM=1 / 3 (A/B timing; the same bits): that form where the caller leaves it open.
int close_form_setting() {
  static const int form = [] {
    const int f = switch_count("MEMRA_CUDA_CLOSE_FORM", 0);
    return f == 1 || f == 3 ? f : 0;
  }();
  return form;
}

}  // namespace

cudaError_t compressor_close(const CompressorArgs& a, const Closing* closings, int n_closings, cudaStream_t stream,
                             int form) {
  if (n_closings == 0) return cudaSuccess;
  if (!valid(a) || !a.norm || !closings || n_closings < 0 || form < 0 || form > 3) return cudaErrorInvalidValue;
  const size_t smem = sizeof(float) * static_cast<size_t>(a.w);
  if (smem > 48 * 1024) return cudaErrorInvalidValue;
  const int rows = a.c * a.m;
  const size_t rows_smem = close_src_bytes(rows) + smem, split_smem = split_smem_bytes(rows);
  if (form == 0) form = close_form_setting();
  if (form == 0) form = rows > kRegRows && split_smem <= 48 * 1024 ? 2 : 3;
  if (form == 2 && split_smem > 48 * 1024) form = 3;
  if (form == 3 && rows_smem > 48 * 1024) form = 1;
  if (form == 1) return launch(compressor_close_kernel, n_closings, kBlock, smem, stream, a, closings);
  if (form == 3) return launch(compressor_close_rows_kernel, n_closings, kBlock, rows_smem, stream, a, closings);
  const dim3 grid(n_closings, (a.w + kSplitCh - 1) / kSplitCh);
  const cudaError_t err = launch(compressor_pool_kernel, grid, kBlock, split_smem, stream, a, closings);
  if (err != cudaSuccess) return err;
  return launch(compressor_finish_kernel, n_closings, kBlock, smem, stream, a, closings);
}

cudaError_t compressor_update(const CompressorArgs& a, int n_seqs, cudaStream_t stream) {
  if (n_seqs == 0) return cudaSuccess;
  if (!valid(a) || n_seqs < 0) return cudaErrorInvalidValue;
  return launch(compressor_update_kernel, n_seqs, kBlock, 0, stream, a);
}

}  // namespace memra::cuda
