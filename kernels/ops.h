// The CUDA kernels' launchers, callable from plain C++ (the backend, the op-parity harness). Each
// launcher validates its arguments, enqueues one or a few kernels on `stream` and returns the CUDA
// error of the launch (cudaErrorInvalidValue for bad arguments); it never exits. Callers wrap the
// result with check(…, "kernel name") (cuda_check.h), which throws memra::Error naming the kernel.
//
// Layout conventions: row-major, f32 activations; a weight W [out, in] is contiguous in its stored
// type (f32, bf16 or f16, or packed FP8/FP4 codes with their e8m0 block scales: WScale); positions
// are int32 (a state's capacity is below 2^31). Shape letters as in lib/engine/cpu_layer.h.
// kernels/README.md has each kernel's contract and why it is exact.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace memra::cuda {

// Weight element types. kFp8Block: e4m3 codes [rows, cols], one byte each; kFp4Block: e2m1 codes,
// two per byte ([rows, cols/2] bytes, low nibble = even column). Both read their e8m0 scales from a
// WScale (docs/quantization.md); the kernels decode them in registers (packed_decode.h), there is
// no dequantised copy.
enum class WType : int32_t { kF32 = 0, kBF16 = 1, kF16 = 2, kFp8Block = 3, kFp4Block = 4 };
const char* wtype_name(WType t);
size_t wtype_size(WType t);  // bytes per element of the plain types (f32 4, bf16/f16 2); packed: 0
bool wtype_packed(WType t);
// Bytes of the codes of a [rows, cols] matrix of type t (FP4: rows · cols/2; cols is even).
size_t wtype_matrix_bytes(WType t, int64_t rows, int64_t cols);

// The e8m0 scales of a packed weight: bytes, row-major [⌈rows/block_rows⌉, cols]; element (r, k)
// of the matrix is scaled by ptr[(r / block_rows) · cols + k / block_cols]. FP8 as released: 128 ×
// 128 blocks; FP4: 1 × 32. Unused (null) for plain types.
struct WScale {
  const uint8_t* ptr = nullptr;
  int32_t block_rows = 1, block_cols = 1;
  int64_t cols = 0;  // ⌈in / block_cols⌉
};
// A packed type's scales are given and fit a row of `in` values (always true for plain types).
bool wscale_valid(WType t, const WScale& s, int in);
// Scale bytes of one [rows, ·] matrix (a stack's matrices follow each other).
inline int64_t wscale_matrix_bytes(const WScale& s, int64_t rows) {
  return (rows + s.block_rows - 1) / s.block_rows * s.cols;
}

inline constexpr int kMaxHc = 8;  // hc_mult supported by the mHC kernels

// ---- the decode state as the kernels see it ---------------------------------------------------

// One compressor's state of one sequence and layer (m = ratio, c = 1 HCA / 2 CSA, w = width).
struct CompressorDev {
  float* pend_kv = nullptr;     // [m, c·w]  rows of the open window
  float* pend_score = nullptr;  // [m, c·w]  their scores, ape added
  float* prev_kv = nullptr;     // [m, w]    CSA: Ca half of the last closed window
  float* prev_score = nullptr;  // [m, w]
  float* entries = nullptr;     // [capacity/m, w]
  // A journaled forward's rows as PEND takes them (SequenceStep::journal; null until the state's
  // first one): [J, c·w] kv and score with ape, row = position − the forward's first position.
  float* journal_kv = nullptr;
  float* journal_score = nullptr;
  int32_t m = 0, c = 0, w = 0;  // its geometry (m = 0: no such compressor in this layer)
};

struct LayerDev {
  float* window = nullptr;          // [W, d] ring, slot = position % W
  float* journal_window = nullptr;  // [J, d] a journaled forward's window rows (as above)
  CompressorDev cmp;                // CSA/HCA main compressor
  CompressorDev idx;                // CSA indexer compressor
};

// One sequence of a round (a contiguous run of its positions).
struct SeqDesc {
  int32_t pos0 = 0;                 // position of its first row
  int32_t T = 0;                    // rows
  int32_t row0 = 0;                 // its first row in the round's activations
  int32_t journal_row = -1;         // ≥ 0: its rows go to the state's journal from this row on; −1: none
  const LayerDev* layers = nullptr; // [L] device table of its state (valid for this device's layers)
};

// A compressor window that a round closes: entry `entry` of sequence `seq`.
struct Closing {
  int32_t seq;
  int32_t entry;
};

// ---- linear (linear_exact.cu, linear_fast.cu) -------------------------------------------------

// y[g][t, o] = Σ_i x[g][t, i] · W[g][o, i] for groups g < groups (grouped output projection);
// x[g] = x + g·x_gstride (row stride x_stride), W[g] = w + g·w_gstride elements (a multiple of
// `in`: group g's rows are rows g·w_gstride/in … of the one matrix w, which a packed type's scale
// grid covers as a whole), y likewise.
// The exact linear's optional epilogue: with X set, each output y[r, o] goes through hc_post
// (mhc_post.cuh) into the mHC streams X [rows, n, out] with row r's post [n] and comb [n, n], as
// hc_post(X, y, post, comb, …) would after a stored y (the same operations); y is not written and may
// be null. One group only.
struct HcPostTo {
  float* X = nullptr;
  const float* post = nullptr;
  const float* comb = nullptr;
  int n = 0;
};
struct LinearArgs {
  const float* x = nullptr;
  int64_t x_stride = 0;
  const void* w = nullptr;
  WType wtype = WType::kF32;
  WScale ws;  // packed types
  float* y = nullptr;
  int64_t y_stride = 0;
  int rows = 0, in = 0, out = 0;
  int groups = 1;
  int64_t x_gstride = 0, w_gstride = 0, y_gstride = 0;
  HcPostTo hc;  // the hc_post epilogue (exact kernels only; linear_fast refuses it)
  // linear_fast only: x already in the weights' 16-bit type, [rows, x_stride] elements (x is not
  // read and may be null); linear_exact refuses it.
  const void* x16 = nullptr;
  WType x16_type = WType::kBF16;  // x16's type: must be the weights' (linear_fast checks)
};
// Exact: the fixed lane K-order and butterfly of dot_exact.cuh for every (row, output). `form`
// fixes the kernel for the tests, which run each: 1, 2 or 4 = the tiled kernel with that many
// outputs per warp (rows > 1); kLinearGemm8/16/32 = the register-tiled kernel with blocks of 8, 16
// or 32 rows; kLinearPerRow = the one-row kernel per row (plain weights); kLinearRows1/2/4 = the
// rows kernel with 1, 2 or 4 outputs per warp (16-bit weights; others take the library's choice);
// 0 = the library's choice.
// The bits are the same in every form.
inline constexpr int kLinearGemm8 = -8, kLinearGemm16 = -16, kLinearGemm32 = -32;
inline constexpr int kLinearPerRow = -1;  // the one-row kernel once per row (rows side by side)
inline constexpr int kLinearRows1 = -201, kLinearRows2 = -202, kLinearRows4 = -204;  // linear_exact_rows_kernel, 1, 2 or 4 outputs a warp (16-bit weights)
cudaError_t linear_exact(const LinearArgs& a, cudaStream_t stream, int form = 0);

// Packed weights (kFp8Block / kFp4Block) [rows, cols] → bf16 [rows, cols] (dequant.cu): the
// cuda-fast realization's dense operand for cuBLAS, one matrix at a time into reusable scratch.
// Exact wherever the value fits bf16 (docs/quantization.md), else rounded to nearest even.
cudaError_t dequant_bf16(const void* w, WType wtype, const WScale& ws, int64_t rows, int64_t cols, void* out,
                         cudaStream_t stream);

// ---- norms and RoPE (norm.cu, rope.cu) --------------------------------------------------------

// For each row and segment s < segs of x[row·row_stride + s·width + (0..width)]:
//   norm:  x = weight · (x · rsqrt(mean(x²) + eps))  (weight null: unweighted)
//   rope:  then rotate the last 2·half dims at position pos[row] (sign −1: the inverse rotation)
struct NormRopeArgs {
  float* x = nullptr;
  int64_t row_stride = 0;
  int rows = 0, segs = 1, width = 0;
  bool norm = true;
  const float* weight = nullptr;  // [width] or null
  float eps = 1e-6f;
  const float* inv_freq = nullptr;  // [half]; null: no rotation
  int half = 0;
  const int32_t* pos = nullptr;  // [rows]
  float sign = 1.0f;
};
// form 0: the library's choice; 1: a block per segment; 2: a warp per segment (width ≤ 1024; the
// same bits, tests).
cudaError_t norm_rope(const NormRopeArgs& a, cudaStream_t stream, int form = 0);
// Rotation only (same arguments, norm ignored): the indexer's query heads.
cudaError_t rope_only(const NormRopeArgs& a, cudaStream_t stream);

// ---- mHC (mhc.cu) -----------------------------------------------------------------------------

// hc_pre over rows: X [rows, n, D] → x [rows, D], post [rows, n], comb [rows, n, n] (§3.2).
struct HcPreArgs {
  const float* X = nullptr;
  int rows = 0, n = 0, D = 0;
  const float* fn = nullptr;     // [(2+n)n, nD]
  const float* base = nullptr;   // [(2+n)n]
  const float* scale = nullptr;  // [3]
  float norm_eps = 1e-6f, hc_eps = 1e-6f;
  int iters = 20;
  float* x = nullptr;
  float* post = nullptr;
  float* comb = nullptr;
  // [hc_mix_scratch(rows, n, D)] floats: the mix computed by rows × slices blocks (mhc.cu); null:
  // one block per row computes it (the single-block order, kept for MEMRA_CUDA_HC_SPLIT=0).
  float* partial = nullptr;
  // Non-null: x is then RMS-normed with this weight and norm_eps (the sublayer's attn / ffn norm) in
  // hc_pre's own launch: norm_rope's bits, one launch fewer.
  const float* norm_weight = nullptr;
  // True: hc_pre leaves comb to hc_comb (the same bits), which the caller launches on another stream
  // after it: the Sinkhorn's 40 dependent passes (5.6 us of hc_pre's 9 at a decode row, probes of
  // run 101) leave the sublayer's critical path; comb is first read by hc_post.
  bool comb_apart = false;
  // True: partial already holds each row's (2+n)n mix values [rows, (2+n)n] (cuda-fast: a TF32 GEMM);
  // hc_pre and hc_comb take them as they are. With mix_unscaled they are X·fnᵀ still to be multiplied
  // by the row's rms: hc_pre does it (inside its fused norm kernel where that runs, which sums the
  // squares from the stream values it loads anyway; else hc_mix_finish first) and writes them back,
  // so an hc_comb after it reads the scaled values.
  bool mix_given = false;
  bool mix_unscaled = false;
  // 0: the library's rule; n: each row's rms once and the many-row mix (hc_mix_rows) from n rows
  // (tests: the same bits at any row count).
  int mix_rows_from = 0;
};
size_t hc_mix_scratch(int rows, int n, int D);
cudaError_t hc_pre(const HcPreArgs& a, cudaStream_t stream);
// mix [rows, M] *= each row's rsqrt(mean(X²) + eps) over its nD stream values (stream_rms, hc_pre's
// own): the unnormalised mix X·fnᵀ of a GEMM made hc_pre's mix (HcPreArgs::mix_given).
cudaError_t hc_mix_finish(const float* X, int rows, int nD, float eps, float* mix, int M, cudaStream_t stream);
// comb of hc_pre's rows alone, from a's mix partials (after hc_pre's launch) or its X.
cudaError_t hc_comb(const HcPreArgs& a, cudaStream_t stream);
// X[t,k,:] = post[t,k]·y[t,:] + Σ_j comb[t,j,k]·X[t,j,:]  in place.
// form 0: the library's choice; 1: one thread an element; 2: four elements a thread with the row's
// comb and post loaded once (n = 4, D % 4 = 0, 16-byte aligned; else form 1): the same bits.
cudaError_t hc_post(float* X, const float* y, const float* post, const float* comb, int rows, int n, int D,
                    cudaStream_t stream, int form = 0);
// hc_post with y = moe_combine(eo, ew, shared) (moe.cu) computed in place, never stored: the bits of
// moe_combine then hc_post, one launch instead of two. eo_rows [rows·k]: pair p's output is eo's row
// eo_rows[p] (the batched experts' slots) instead of row p, the same bits.
cudaError_t hc_post_moe(float* X, const float* eo, const float* ew, const float* shared, int k, const float* post,
                        const float* comb, int rows, int n, int D, cudaStream_t stream, int form = 0,
                        const int32_t* eo_rows = nullptr);
// hc_post_moe on outputs eo stored as bf16 / f16 (eo_type; cuda-fast's batched experts), each widened
// exactly to f32: hc_post_moe's bits on those values as floats. The four-elements-a-thread form only:
// hc_post_moe16_ok(n, D) (n = 4, D % 4 = 0), X and shared 16-byte aligned, eo 8-byte aligned, rows ≤
// 65535; else cudaErrorInvalidValue.
bool hc_post_moe16_ok(int n, int D);
cudaError_t hc_post_moe16(float* X, const void* eo, WType eo_type, const float* ew, const float* shared, int k, const float* post,
                          const float* comb, int rows, int n, int D, cudaStream_t stream, const int32_t* eo_rows = nullptr);
// hc head for the rows listed in `rows_idx` [out_rows]: h [out_rows, D] = Σ_j pre_j X[row, j, :].
cudaError_t hc_head(const float* X, const int32_t* rows_idx, int out_rows, int n, int D, const float* fn,
                    const float* base, const float* scale, float norm_eps, float hc_eps, float* h, float* partial,
                    cudaStream_t stream);

// ---- embedding (embed_head.cu) ----------------------------------------------------------------

// X[t, j, :] = embed[tokens[t], :] for j < n.
cudaError_t embed_rows(const void* embed, WType wtype, const int32_t* tokens, int rows, int n, int D, float* X,
                       cudaStream_t stream);
// out[i, :] = src[rows_idx[i], :]  (width floats, row strides in floats)
cudaError_t gather_rows(const float* src, int64_t src_stride, const int32_t* rows_idx, int out_rows, int width,
                        float* out, int64_t out_stride, cudaStream_t stream);
// out[rows_idx[i], :] = src[i, :]
cudaError_t scatter_rows(const float* src, int64_t src_stride, const int32_t* rows_idx, int src_rows, int width,
                         float* out, int64_t out_stride, cudaStream_t stream);
// out[out_idx[i], :] = src[src_idx[i], :] for i < n (a null index: i; out_idx's entries distinct)
cudaError_t move_rows(const float* src, int64_t src_stride, const int32_t* src_idx, int n, int width, float* out,
                      int64_t out_stride, const int32_t* out_idx, cudaStream_t stream);

// ---- the logits out of a round (logits_out.cu) ------------------------------------------------

// Where a logit row goes: to[k][0, V) = the row for every non-null to[k] (device memory or pinned
// host memory; the slots are the trunk's last logits, the caller's staging and the journal).
struct LogitDest {
  static constexpr int kSlots = 3;
  float* to[kSlots] = {nullptr, nullptr, nullptr};
};
// For r < rows: logits[r, 0:V) → the destinations dests[r] (device memory) names.
cudaError_t logits_out(const float* logits, int64_t V, const LogitDest* dests, int rows, cudaStream_t stream);

// ---- compressors (compressor.cu) --------------------------------------------------------------

struct CompressorArgs {
  const SeqDesc* seqs = nullptr;
  int layer = 0;
  bool indexer = false;        // LayerDev::idx instead of LayerDev::cmp
  const float* kv = nullptr;   // [rows, c·w]  this round's projections x @ wkv^T
  const float* score = nullptr;// [rows, c·w]  x @ wgate^T (ape not yet added)
  const float* ape = nullptr;  // [m, c·w]
  const float* norm = nullptr; // [w]
  const float* inv_freq = nullptr;
  int half = 0;
  int m = 0, c = 1, w = 0;
  float eps = 1e-6f;
};
// Forms every entry the round closes (one block per closing) and writes it to the state's entries.
// form 0: the library's choice; 1: the per-row-fetch kernel; 2: channels split over blocks, then a
// finishing launch (windows of more than 8 rows); 3: one block per closing (the same bits; tests).
cudaError_t compressor_close(const CompressorArgs& a, const Closing* closings, int n_closings, cudaStream_t stream,
                             int form = 0);
// Then moves the round's rows into the state: PREV (CSA) from the last closed window, PEND from
// the open one (one block per sequence); a sequence with a journal_row also gets every row of the
// round, as PEND takes it, into its journal.
cudaError_t compressor_update(const CompressorArgs& a, int n_seqs, cudaStream_t stream);

// ---- keeping a journaled forward's first rows (keep_rows.cu) -----------------------------------

// A state that ran a journaled forward from pos0 and was then put back to its mark at pos0
// (entries untouched): layers [first, first + count) of `layers` take the forward's first `rows`
// rows from their journals, the window ring's rows and, per compressor, PREV from the last window
// those rows close and PEND from the open one (compressor_update's moves, sources the journal):
// the state of a forward over those rows alone (the entries they close are the forward's own).
// Grid (count, 3): window, main compressor, indexer compressor of each layer.
struct KeepArgs {
  const LayerDev* layers = nullptr;  // device [L]
  int first = 0, count = 0;
  int32_t pos0 = 0, rows = 0;
  int d = 0, W = 0;
};
cudaError_t keep_rows(const KeepArgs& a, cudaStream_t stream);

// ---- indexer and top-k (indexer.cu, topk.cu) --------------------------------------------------

// score[t, s] = Σ_h relu(qi[t,h]·IDXK[s]) · softmax_scale · (wi[t,h] · weight_scale), s < (pos+1)/m.
struct IndexerArgs {
  const SeqDesc* seqs = nullptr;
  const int32_t* row_seq = nullptr;
  const int32_t* row_pos = nullptr;
  int layer = 0, rows = 0;
  const float* qi = nullptr;  // [rows, Hi·di] roped
  const float* wi = nullptr;  // [rows, Hi]
  int Hi = 0, di = 0, m = 0;
  float softmax_scale = 1.0f, weight_scale = 1.0f;
  float* scores = nullptr;  // [rows, score_stride]
  int64_t score_stride = 0;
  int max_visible = 0;  // max over rows of (pos+1)/m
  // cuda-fast's tensor-core scores only: qi not yet rotated; the kernel rotates each head's last
  // 2·q_half dims (rope_only's bits, position row_pos) while staging it. The exact kernels refuse it.
  const float* q_inv_freq = nullptr;  // [q_half]
  int q_half = 0;
};
// allow_stage = false reads each row's query from global memory instead of staging it in shared
// memory (the form taken when it does not fit; the tests run it beside the staged one, same bits).
// form 0: the library's choice; 1: the warp kernels (a warp per entry or per 4 entries); 2: the
// tiled kernel (di 64 or 128, an even head count; else form 1): the same bits.
cudaError_t indexer_scores(const IndexerArgs& a, cudaStream_t stream, bool allow_stage = true, int form = 0);
// cuda-fast: the same scores on TF32 tensor cores (indexer_fast.cu), for rounds of many rows; not
// exact (the ops test bounds each score by the rounding). indexer_fast_ok: Hi ≤ 64, di a multiple
// of 16, qi and each sequence's entries 16-byte aligned (the entries are not checked on the host),
// the row's query within the shared-memory opt-in; indexer_scores_fast returns cudaErrorInvalidValue
// where it is false.
bool indexer_fast_ok(const IndexerArgs& a);
cudaError_t indexer_scores_fast(const IndexerArgs& a, cudaStream_t stream);

// Per row: the k largest of scores[row, 0..N) (N = n_fixed, or (row_pos[row]+1)/m when row_pos is
// given, N ≤ stride), ties to the lower index; out [rows, k] holds the chosen indices ascending, -1 padded.
// allow_cluster = false keeps rows past 2048 entries on one block each (the tests' second form).
cudaError_t topk_rows(const float* scores, int64_t stride, int rows, int n_fixed, const int32_t* row_pos, int m,
                      int k, int32_t* out, cudaStream_t stream, bool allow_cluster = true);

// ---- attention (attention.cu) -----------------------------------------------------------------

enum class AttnKind : int32_t { kSliding = 0, kCSA = 1, kHCA = 2 };

struct AttentionArgs {
  const SeqDesc* seqs = nullptr;
  const int32_t* row_seq = nullptr;
  const int32_t* row_pos = nullptr;
  int layer = 0, rows = 0;
  AttnKind kind = AttnKind::kSliding;
  const float* q = nullptr;     // [rows, H·d] normed, roped (q_raw: neither)
  const float* kv = nullptr;    // [rows, d]   this round's kv (normed, roped)
  const float* sink = nullptr;  // [H]
  const int32_t* selected = nullptr;  // CSA [rows, K]
  int K = 0;
  int H = 0, d = 0, W = 0, m = 0;
  float scale = 1.0f;
  const float* inv_freq = nullptr;
  int half = 0;
  int max_keys = 0;  // bound on window + compressed keys of any row (shared memory size)
  float* o = nullptr;  // [rows, H·d]
  // cuda-fast only (attention_fast): the outputs as o16_type (bf16 / f16), rounded from the f32 values
  // `o` would hold, in place of them (the output projection's GEMM input, no f32 round trip through
  // convert_rows); `o` is then not written and may be null. Needs 2·half a multiple of 4.
  void* o16 = nullptr;
  WType o16_type = WType::kBF16;
  // cuda-fast only (attention_fast): q as wq_b left it; the kernel applies the query heads' norm_rope
  // (RMSNorm without weight, eps q_eps, then RoPE of the last 2·half dims) while staging it, with
  // norm_rope's bits (the 2 × 268 MB of a V4-Flash prefill's separate pass gone).
  bool q_raw = false;
  float q_eps = 0.0f;
};
// heads: 0 picks the form by the row count (the cluster kernel for few rows, else 1, 4, 8 or 16 heads a
// block; MEMRA_CUDA_ATTN_HEADS=n: n for many rows, for A/B); 1, 2, 4, 8 or 16 forces that many heads a
// block on every row (tests: each form's bits against the others'); cudaErrorNotSupported where they
// do not fit shared memory.
cudaError_t attention(const AttentionArgs& a, cudaStream_t stream, int heads = 0);
// Decode-sized rounds (attention_cluster.cu): one cluster of 8 blocks per (row, group of `heads`
// heads), the bits of attention(). attention() takes it for rows ≤ attention_cluster_rows()
// (kAttentionClusterRows; MEMRA_CUDA_ATTN_CLUSTER_ROWS=n: n, for A/B) where attention_cluster_ok(a)
// (d ∈ {64, 128, 256, 512}, shared memory, a cluster-capable device). heads: 4 or 8; 0 = the
// default, 4 for one or two rows and 8 for more (MEMRA_CUDA_ATTN_CLUSTER=4 or 8: that; =0: never
// taken by attention()). attention_cluster returns cudaErrorInvalidValue where attention_cluster_ok
// is false.
// 10: the cluster kernel against the 4-head kernel (run 205, H200; C / H attention, us): 6 rows
// 80 / 33 against 122 / 36, 8 rows 104 / 43 against 126 / 38, 16 rows 174 / 72 against 133 / 39
// (the 4-head grid is rows × 16 blocks, nearly flat in rows until it fills the SMs); run 206 (H100),
// C + H: 10 rows 165 against 186, 12 rows 195 against 168.
inline constexpr int kAttentionClusterRows = 10;
int attention_cluster_rows();
bool attention_cluster_ok(const AttentionArgs& a, int heads = 0);
cudaError_t attention_cluster(const AttentionArgs& a, cudaStream_t stream, int heads = 0);
// cuda-fast: the same attention on tensor cores (TF32; attention_fast.cu), for rounds of many rows.
// Falls back to attention() where attention_fast_ok is false (d not 64/128/256/512, or more keys
// than its shared memory holds).
// form: 0 the launcher's choice, 1 one block of 32 heads an SM, 2 two such blocks an SM
// (cudaErrorNotSupported, nothing launched, where two blocks do not fit an SM); both forms give the
// same bits (the tests compare them).
cudaError_t attention_fast(const AttentionArgs& a, cudaStream_t stream, int form = 0);
bool attention_fast_ok(const AttentionArgs& a);
// Most keys one attention block can hold in shared memory on this device (d = head dim).
int attention_max_keys(int d, int device);
// After attention: the last min(T, W) rows of each sequence into its window ring.
cudaError_t window_update(const SeqDesc* seqs, const int32_t* row_seq, const int32_t* row_pos, int layer, int rows,
                          const float* kv, int d, int W, cudaStream_t stream);

// ---- MoE (moe.cu) -----------------------------------------------------------------------------

enum class Scoring : int32_t { kSqrtSoftplus = 0, kSigmoid = 1, kSoftmax = 2 };

// Router: scores from logits [rows, E]; hash rows (tid2eid [V, k]) or top-k of score + bias (ties
// to the lower index); weights renormalised and scaled. eid/ew [rows, k] in ascending expert id
// order (the order experts are summed in); margin [rows] (k-th minus (k+1)-th selection score,
// +inf for hash rows) and scale [rows] (largest |score + bias|, 0 for hash rows) when non-null.
struct RouteArgs {
  const float* logits = nullptr;
  int rows = 0, E = 0, k = 0;
  Scoring scoring = Scoring::kSqrtSoftplus;
  const float* bias = nullptr;      // [E] learned routing
  const int32_t* tid2eid = nullptr; // [V, k] hash routing
  const int32_t* tokens = nullptr;  // [rows]
  float route_scale = 1.0f;
  int32_t* eid = nullptr;
  float* ew = nullptr;
  float* margin = nullptr;
  float* scale = nullptr;
};
// form −1: MEMRA_CUDA_ROUTE_FORM's (default 0); 0: the candidates' rank (moe.cu); 1: the all-pairs
// count it replaced (the same bits; tests).
cudaError_t route(const RouteArgs& a, cudaStream_t stream, int form = -1);

// Experts of one layer, stacked: w1/w3 [E, I, D], w2 [E, D, I] in one dtype; packed types with
// their scales stacked the same way (expert e's scales follow expert e−1's: wscale_matrix_bytes).
struct ExpertsArgs {
  const float* x = nullptr;  // [rows, D]
  int rows = 0, D = 0, I = 0, E = 0, k = 0;
  const int32_t* eid = nullptr;  // [rows, k]
  const void* w1 = nullptr;
  const void* w3 = nullptr;
  const void* w2 = nullptr;
  WType wtype = WType::kF32;
  WScale s1, s3, s2;  // packed types
  float limit = 0.0f;  // swiglu clamp
  // scratch: pair_order [rows·k], groups [3 · max_groups], n_groups [2] (the two group lists), h [rows·k, I]
  int32_t* pair_order = nullptr;
  int32_t* groups = nullptr;
  int32_t* n_groups = nullptr;
  float* h = nullptr;
  float* eo = nullptr;  // out: [rows·k, D] expert outputs, pair p = row·k + slot
  // [k + 1] counters of the one-row launch, zero before it and left zero after it; null: one-row
  // rounds take the grouped launches too
  int32_t* sync = nullptr;
  // The grouped launches' group lists (moe.cu): 1 = one list for every group, 2 = groups of ≤ 2 rows
  // and larger ones in kernels of their own, 0 = the library's rule (MEMRA_CUDA_MOE_SPLIT, else by
  // row count). Same bits in every setting.
  int lists = 0;
};
int experts_max_groups(int rows, int k, int E);
// The fused path: every selected (row, expert) pair of every row in one launch per stage
// (grouping, gate+up+SwiGLU, down); rows sharing an expert share its weight loads.
cudaError_t experts_fused(const ExpertsArgs& a, cudaStream_t stream);
// SwiGLU elementwise: h[i] = swiglu(g[i], u[i]) (the per-expert path and the shared expert).
cudaError_t swiglu(const float* g, const float* u, float* h, int64_t n, float limit, cudaStream_t stream);
// out[t, o] = (Σ_{slot asc} eo[t·k + slot, o] · ew[t, slot]) + shared[t, o]
cudaError_t moe_combine(const float* eo, const float* ew, const float* shared, int rows, int k, int D, float* out,
                        cudaStream_t stream);

// ---- state class hashes (class_hash.cu) --------------------------------------------------------

// One class for class_hashes_device: class_hash()'s stream is prefix ‖ part[0] ‖ part[1] (a window
// ring's two runs; part 1 may be empty), more than 240 bytes in all (XXH3's long path).
struct HashClassDev {
  const uint8_t* prefix = nullptr;  // class_hash_prefix(), on the device
  const uint8_t* part[2] = {nullptr, nullptr};
  uint64_t prefix_bytes = 0;
  uint64_t part_bytes[2] = {0, 0};
};
// XXH3's secret as the long path reads it: the accumulate / scramble words, the last stripe's
// (offset 121) and the two merges' (offsets 11 and 117), each a little-endian u64.
struct Xxh3Keys {
  uint64_t acc[24];
  uint64_t last[8];
  uint64_t merge_low[8];
  uint64_t merge_high[8];
};
Xxh3Keys xxh3_keys(const uint8_t* secret);  // secret: kXxh3SecretBytes (core/hash.h)
// out[2c], out[2c + 1] = class c's XXH3-128 (high, low): class_hash()'s bits. classes: on the device.
cudaError_t class_hashes_device(const HashClassDev* classes, int n, const Xxh3Keys& keys, uint64_t* out, cudaStream_t stream);

// ---- elementwise helpers (embed_head.cu) ------------------------------------------------------

cudaError_t fill_f32(float* p, int64_t n, float value, cudaStream_t stream);
// Converts f32 [rows, cols] (row stride src_stride) to bf16/f16 contiguous [rows, cols]; with
// rows_idx, row r from source row rows_idx[r] (a gather on the way).
cudaError_t convert_rows(const float* src, int64_t src_stride, int rows, int cols, void* dst, WType dst_type,
                         cudaStream_t stream, const int32_t* rows_idx = nullptr);
// dst [rows, cols] = src rows rows_idx[r] (row stride src_stride), 16-bit values (bf16 / f16) moved as
// they are: rows convert_rows already made, gathered without reading their f32 source again.
cudaError_t gather_rows16(const void* src, int64_t src_stride, const int32_t* rows_idx, int rows, int cols, void* dst,
                          cudaStream_t stream);
// swiglu_convert with g and u already bf16 / f16 (of `type`, dst's too): each widened exactly to f32
// first, so its bits are swiglu_convert's on those values as floats.
cudaError_t swiglu16_convert(const void* g, const void* u, void* dst, WType type, int64_t n, float limit,
                             cudaStream_t stream);
// dst[i] = bf16/f16(swiglu(g[i], u[i])): swiglu() and convert_rows() in one pass, the same bits.
cudaError_t swiglu_convert(const float* g, const float* u, void* dst, WType dst_type, int64_t n, float limit,
                           cudaStream_t stream);

}  // namespace memra::cuda
