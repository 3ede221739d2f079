// Internals of the CPU reference backend, shared by its files: the weight bindings of one layer and
// the per-site functions (mHC, attention with its compressors and indexer, MoE). Every function
// processes T rows with each row's arithmetic independent of T (the exact path).
//
// Shape letters: T tokens in this call, D hidden, n hc_mult, H heads, d head_dim, r rope dims,
// q_l q_lora_rank, G o_groups, R o_lora_rank, m compress ratio, W window, E experts, k experts per
// token, I expert width, Hi/di indexer heads/dim, K index_topk, V vocab.
#pragma once
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/cpu_ops.h"
#include "engine/decode_state.h"
#include "model/config.h"

namespace memra::cpu {

inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The arithmetic a CPU realization plugs into the shared site code. `cpu` (exact): sequential
// double-accumulated products. `cpu-fast`: blocked f32 GEMMs over all rows, f32 attention dots and
// sums, MoE grouped by expert. Both store f32 between ops (docs/bands.md says why not bf16).
struct Arithmetic {
  void (*linear)(const float* x, int64_t rows, int64_t in, const Matrix& w, int64_t out, float* y);  // y = x·wᵀ
  bool fast;         // f32 attention dots and sums, grouped MoE
  bool qat = false;  // the official code's QAT simulations (numerics/qat.h; BackendOptions::qat)
};
const Arithmetic& exact_arithmetic();
const Arithmetic& fast_arithmetic();

struct HcWeights {
  const float* fn;     // [(2+n)n, nD]
  const float* base;   // [(2+n)n]
  const float* scale;  // [3]
};

struct CompressorWeights {
  Matrix wkv;                    // [c·w, D]
  Matrix wgate;                  // [c·w, D]
  const float* ape = nullptr;    // [m, c·w]
  const float* norm = nullptr;   // [w]
  bool indexer = false;          // the indexer's keys (QAT: Hadamard + FP4), else main entries (FP8)
};

struct LayerWeights {
  LayerKind kind;
  int64_t ratio;  // m (0 for sliding)
  const std::vector<float>* inv_freq;
  HcWeights hc_attn, hc_ffn;
  const float* attn_norm;              // [D]
  const float* ffn_norm;               // [D]
  Matrix wq_a;                         // [q_l, D]
  const float* q_norm;                 // [q_l]
  Matrix wq_b;                         // [H·d, q_l]
  Matrix wkv;                          // [d, D]
  const float* kv_norm;                // [d]
  const float* sink;                   // [H]
  Matrix wo_a;                         // [G·R, H·d/G]
  Matrix wo_b;                         // [D, G·R]
  CompressorWeights compressor;        // CSA/HCA
  CompressorWeights indexer;           // CSA
  Matrix idx_wq_b;                     // [Hi·di, q_l]
  Matrix idx_weights;                  // [Hi, D]
  MlpKind mlp;
  Matrix gate;                           // [E, D]
  const float* gate_bias = nullptr;      // [E] (learned)
  const int64_t* tid2eid = nullptr;      // [V, k] (hash)
  std::vector<Matrix> w1, w2, w3;        // per expert: [I, D], [D, I], [I, D]
  Matrix shared_w1;
  Matrix shared_w2;
  Matrix shared_w3;
};

// Every weight of the model (names from model/tensor_names.h): matrices as Matrix (F32 in place,
// other formats packed and decoded per row), vectors and the hc matrices as f32 pointers
// (Model::f32: small). Not movable: layers point at the RoPE tables it owns.
struct ModelWeights {
  explicit ModelWeights(const Model& model);
  ModelWeights(const ModelWeights&) = delete;
  ModelWeights& operator=(const ModelWeights&) = delete;

  std::vector<float> inv_main, inv_compress;  // RoPE inverse frequencies [r/2]: sliding, compressed layers
  std::vector<LayerWeights> layers;
  Matrix embed;             // [V, D]
  Matrix head;              // [V, D]
  const float* final_norm;  // [D]
  HcWeights hc_head;        // fn [n, nD], base [n], scale [1]
};

// The hc head of one row: pre-weighted collapse of X_t [n, D] into h [D], then the final norm.
void hc_head(const ModelConfig& cfg, const ModelWeights& w, const float* X_t, float* h);

// One forward over a batch (the layer loop both CPU realizations share): validates nothing (the
// backend did), reads and advances every sequence's host state. journals[b] (null: none) is started
// for a sequence whose step asks for one (SequenceStep::journal) and filled row by row.
void forward_batch(const Arithmetic& ar, const ModelConfig& cfg, const ModelWeights& w, std::span<const SequenceStep> batch,
                   const std::vector<DecodeState*>& states, const std::vector<TrunkJournal*>& journals = {});

// mHC (docs/architecture.md §3.2): collapses the n streams of X [T,n,D] into x [T,D]; writes post
// [T,n] and comb [T,n,n].
void hc_pre(const Arithmetic& ar, const ModelConfig& cfg, const std::vector<float>& X, int64_t T, const HcWeights& w,
            std::vector<float>& x, std::vector<float>& post, std::vector<float>& comb);
// X'[t,k,:] = post[t,k]·y[t,:] + Σ_j comb[t,j,k]·X[t,j,:]  (the transposed combine)
void hc_post(const ModelConfig& cfg, std::vector<float>& X, int64_t T, const std::vector<float>& y,
             const std::vector<float>& post, const std::vector<float>& comb);

// Attention site (docs/architecture.md §3.4–3.7) for rows at positions pos0..pos0+T-1: reads and advances the layer's
// window ring, compressors and indexer keys; out [T, D].
void attention(const Arithmetic& ar, const ModelConfig& cfg, const LayerWeights& lw, int64_t layer, LayerState& ls,
               int64_t pos0, int64_t T, const std::vector<float>& x, std::vector<float>& out, ForwardTrace* trace,
               LayerJournal* journal = nullptr);
// Projects rows into the open window, closing entries at window ends (docs/architecture.md
// §3.5; appended to cs.entries). With a journal (rows [T]), each row as PEND takes it.
void compress_rows(const Arithmetic& ar, const ModelConfig& cfg, const CompressorWeights& cw, CompressorState& cs,
                   const std::vector<float>* inv_freq, int64_t pos0, int64_t T, const std::vector<float>& x,
                   CompressorJournal* journal = nullptr);

// MoE site (docs/architecture.md §3.8): hash or learned routing, routed experts in ascending id order plus the shared
// expert; out [T, D].
void moe(const Arithmetic& ar, const ModelConfig& cfg, const LayerWeights& lw, int64_t layer,
         std::span<const int32_t> tokens, const std::vector<float>& x, std::vector<float>& out, ForwardTrace* trace);

// Top-k with ties broken by the lower index (docs/architecture.md §5); ids in selection order.
std::vector<int64_t> topk_lower_index(const std::vector<float>& scores, int64_t k);
// A top-k selection's edge, from one partial selection of a copy: `boundary` = the k-th largest
// score, where a tie at the selection boundary sits, and `margin` = the k-th minus the (k+1)-th.
// Nothing left out (no (k+1)-th): {NaN, inf}, no tie or near-tie can flip the selection.
struct SelectionEdge {
  float boundary;
  float margin;
};
SelectionEdge selection_edge(std::vector<float> scores, int64_t k);
inline float selection_margin(std::vector<float> scores, int64_t k) { return selection_edge(std::move(scores), k).margin; }
inline float selection_boundary(std::vector<float> scores, int64_t k) { return selection_edge(std::move(scores), k).boundary; }
// The largest |score|: the scale a selection's near-tie band is relative to (docs/parity.md).
float selection_scale(const std::vector<float>& scores);
void trace_put(ForwardTrace* trace, const std::string& name, std::vector<int64_t> shape, std::vector<float> values);

}  // namespace memra::cpu
