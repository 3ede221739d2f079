// One device's share of a forward: its stream, its scratch, the round's plan on the device, and the
// sites of a layer (attention, MoE, mHC) in the order the CPU reference runs them (cpu_backend.cpp).
// The backend runs one Shard per device in pipeline order; the op-parity harness drives the same
// sites on random inputs against their CPU twins.
//
// A round is a set of rows from one or more sequences, each sequence a contiguous run of its
// positions; every kernel finds a row's sequence, position and state through the plan.
#pragma once
#include <cublas_v2.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "graph_marks.h"
#include "model/config.h"
#include "ops.h"
#include "timeline.h"
#include "weights.h"

namespace memra::cuda {

enum class MoePath { kFused, kPerExpert };

// Host side of a round's plan.
struct RoundPlan {
  std::vector<int32_t> tokens, row_pos, row_seq;  // [rows]
  std::vector<SeqDesc> seqs;                      // .layers filled per shard at upload
  std::vector<Closing> closings_csa, closings_hca;
  int max_visible_csa = 0, max_visible_hca = 0;   // max over rows of (pos+1)/m
  std::vector<int32_t> logit_rows;                // rows the LM head computes, ascending
  // [logit rows] or empty: where head()'s logits_out moves each logit row (logits_out.cu); what it
  // does not move (empty, a null slot) the backend copies after the round where it is wanted.
  std::vector<LogitDest> logit_dests;
  int rows() const { return static_cast<int>(tokens.size()); }
  int seq_count() const { return static_cast<int>(seqs.size()); }
};
// Appends a sequence's rows at positions pos0 … pos0+|tokens|−1; returns its index in the plan.
int plan_add_sequence(RoundPlan& plan, const ModelConfig& config, int32_t pos0, std::span<const int32_t> tokens);

// Host copies of a layer's intermediates for all rows of the round (ForwardTrace's sources).
struct LayerTrace {
  std::vector<float> hidden;          // [rows, n, D] streams after the layer
  std::vector<int32_t> experts;       // [rows, k] ascending
  std::vector<float> router_margin;   // [rows] learned layers
  std::vector<float> router_scale;    // [rows] learned layers: largest |selection score|
  std::vector<int32_t> selected;      // [rows, K] CSA, −1 padded
  std::vector<float> indexer_margin;  // [rows] CSA
  std::vector<float> indexer_scale;   // [rows] CSA: largest |score|
  std::vector<float> indexer_boundary;  // [rows] CSA: the k-th largest score, where a tie sits (NaN: ≤ K visible)
};

// A linear's input rows already in a 16-bit GEMM type (cuda-fast): Shard::site_rows16.
struct HalfRows {
  const void* p = nullptr;
  WType type = WType::kBF16;
};

class Shard {
 public:
  Shard(const ModelConfig& config, int device, bool fast);
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  bool fast() const { return fast_; }
  void set_moe_path(MoePath path) { moe_path_ = path; }
  MoePath moe_path() const { return moe_path_; }
  // Which MoE path the last moe_site ran: "fused", "batched" (cuda-fast, batched cuBLAS) or "per-expert".
  const char* moe_ran() const { return moe_ran_; }

  // Uploads the plan (tables[s] = sequence s's state table on this device) and sizes the scratch.
  // timeline / graph_marks: the round's probes (ForwardProbes; MEMRA_CUDA_TIMELINE=1 and
  // MEMRA_CUDA_GRAPH_MARKS=1 turn them on as well).
  // copy_now = false stages the plan in pinned memory only: the caller then calls copy_plan() on the
  // shard's stream before the round's first launch (the backend's phases probe times the copy).
  void upload_plan(const RoundPlan& plan, const std::vector<const LayerDev*>& tables, bool timeline = false,
                   bool graph_marks = false, bool copy_now = true);
  void copy_plan();
  // Times every linear from now on (BackendOptions::time_linears; MEMRA_CUDA_TIME_LINEARS=1 as well).
  void set_time_linears() { time_linears_ = true; }
  const RoundPlan& plan() const { return plan_; }
  int rows() const { return plan_.rows(); }
  float* X() const { return X_.get(); }  // [rows, n, D]

  void embed(const DevEnds& ends);
  void layer(const DevLayer& w, int layer, LayerTrace* trace);
  // hc head, final norm and LM head for plan().logit_rows: device logits [logit rows, V].
  const float* head(const DevEnds& ends);

  // The sites, on this round's rows: x [rows, D] → y [rows, D] (the attention site advances the
  // layer's state: compressors, window ring). The attention site with y == nullptr applies the
  // layer's hc_post to the streams X_ in wo_b's epilogue (exact kernels) instead of storing y.
  void attention_site(const DevLayer& w, int layer, const float* x, float* y, LayerTrace* trace);
  void moe_site(const DevLayer& w, const float* x, float* y, LayerTrace* trace);
  void linear(const DevMatrix& w, const float* x, int64_t x_stride, int rows, float* y, int64_t y_stride,
              const char* what, HalfRows xh = {});
  // cuda-fast: a site's input rows x [rows, D] converted once into x16_, in the GEMM type of w (the
  // site's first linear), for every linear of the site that reads them (each converted them again
  // before, run 160); {} on the exact realization or where w's GEMM is not 16-bit. run_linear
  // converts as before for a linear whose weights want another type.
  HalfRows site_rows16(const DevMatrix& w, const float* x, int rows);
  // y [rows, out] = x [rows, in] · wᵀ as LinearArgs (one group), for callers that add to them.
  static LinearArgs matrix_args(const DevMatrix& w, const float* x, int64_t x_stride, int rows, float* y,
                                int64_t y_stride);
  // Any linear (grouped too) on this shard's realization: linear_exact, or on cuda-fast cuBLAS (a
  // packed weight dequantised one matrix at a time into scratch first, unless the round is small).
  void run_linear(LinearArgs a, const char* what);

  // Layers whose hc streams the round copies out after the layer (a trace that asks for "hidden.L"
  // only): a device copy inside the round, so the round stays graph-capturable; tap_hidden reads
  // one back after the round. Set before upload_plan (which sizes the copies).
  void set_taps(std::vector<int> layers) { tap_layers_ = std::move(layers); }
  std::vector<float> tap_hidden(int layer) const;  // [rows, n, D]; synchronises the stream

  void sync() const;
  // Device bytes of this shard's scratch (activations of the largest round so far, plan, MoE).
  size_t scratch_bytes() const;
  // Everything a captured round's launches depend on besides the plan's device contents: the
  // round's bucketed shape and the scratch addresses. Equal signatures replay one CUDA graph.
  std::vector<uint64_t> launch_signature() const;
  float* logits() const { return logits_.get(); }  // [logit rows, V] after head()
  // With MEMRA_CUDA_TIME_LINEARS=1 every linear is bracketed by events: the time and FLOPs
  // (2·rows·in·out) of the linears since the last call (synchronises the stream).
  void collect_linear_timing(double* ms, double* flop);
  // With MEMRA_CUDA_TIMELINE=1 (read per round) every launch's device time (timeline.h), by site
  // ("C:", "H:", "S:" for a layer's kind, none for the ends), added into `into` since the last call.
  void collect_timeline(std::map<std::string, SiteTime>& into);
  bool timeline_on() const { return timeline_on_; }
  // With MEMRA_CUDA_GRAPH_MARKS=1 (read per round) when each site of the last round finished inside
  // its graph (graph_marks.h): "stream site" and microseconds after the round's first mark.
  std::vector<std::pair<std::string, double>> collect_graph_marks() const;

 private:
  void per_expert(const DevLayer& w, const float* x);
  // cuda-fast, bf16/f16 experts: every touched expert's three GEMMs as one batched cuBLAS call each,
  // on all pairs gathered once into per-expert slots (per_expert's loop launches 7 kernels per
  // expert). False when the weight type rules it out (per_expert runs instead). xh: x already in
  // the GEMM type (site_rows16), or none; in_slots: the outputs may stay in their slots for the
  // combine (eo_read_ / eo_rows_) instead of moving to pair order in eo_.
  bool batched_experts(const DevLayer& w, const float* x, HalfRows xh, bool in_slots);
  // The round's (row, expert) pairs by expert, read back from the device (a host wait): order = pair
  // indices grouped by expert (pair order within), rows_of = their rows, first[e] = e's start.
  void expert_order(std::vector<int32_t>& order, std::vector<int32_t>& rows_of, std::vector<int32_t>& first);
  // check_launch, then the timeline's mark when it is on.
  void launched(cudaError_t err, const char* what);
  // Independent launches of a site on side streams (fork/join by events; captured into the round's
  // graph as parallel branches): the exact realization, untraced, fused MoE, no timing.
  // MEMRA_CUDA_OVERLAP=0 runs everything on the one stream (A/B timing; the bits are the same).
  bool overlap(const LayerTrace* trace) const;
  // The side streams and what each runs (attention_site, moe_site). The compressors' two projections
  // run side by side and meet before their closings; everything a round's attention does not read
  // (the window and pending-window updates) runs on kSideKv after it, joined by the MoE site.
  enum Side : int {
    kSideKv = 0,       // wkv, kv norm+RoPE; after the attention: the state updates; then the shared expert
    kSideIndexer = 1,  // (CSA) the indexer's weights, queries, scores and top-k
    kSideIdxKv = 2,    // (CSA) the indexer compressor's wkv, then its closings
    kSideCmpKv = 3,    // the attention compressor's wkv, then its closings
    kSideCmpGate = 4,  // the attention compressor's wgate
    kSideIdxGate = 5,  // (CSA) the indexer compressor's wgate
    kSideComb = 6,     // hc_comb: a sublayer's Sinkhorn, joined before its hc_post
    kSides = 7
  };
  // The side streams' names, in Side's order (the graph marks' labels).
  static constexpr const char* kSideNames[kSides] = {"kv", "indexer", "idx-kv", "cmp-kv", "cmp-gate", "idx-gate", "comb"};
  void fork_to(int side);            // side stream `side` waits for what stream_ enqueued so far
  void join_from(int side);          // stream_ waits for what side stream `side` enqueued so far
  // cuda-fast, rounds of kFastHcMixRows+ rows: hp's unscaled mix X·fnᵀ as a cuBLAS TF32 GEMM into
  // hp.partial (hp.mix_given, hp.mix_unscaled: hc_pre scales it); otherwise hp.mix_given = false and
  // hc_pre makes it.
  void hc_mix_fast(HcPreArgs& hp, const char* what);
  void launch_comb(const HcPreArgs& hp, const char* what);  // hc_comb on kSideComb (comb_pending_)
  void join_comb();                  // stream_ waits for a pending hc_comb
  void link(int from, int to);       // side stream `to` waits for what side stream `from` enqueued so far
  friend class OnStream;
  void time_begin();
  void time_end(double flop);
  void norm(float* x, int64_t stride, int rows, int segs, int width, const float* weight, const float* inv_freq,
            const char* what);

  ModelConfig cfg_;
  int device_;
  bool fast_;
  MoePath moe_path_ = MoePath::kFused;
  cudaStream_t stream_ = nullptr;  // where launches go (a side stream inside OnStream scopes)
  cudaStream_t main_stream_ = nullptr;
  cudaStream_t side_[kSides] = {};
  cudaEvent_t fork_event_ = nullptr, qr_ready_ = nullptr, join_event_[kSides] = {};
  bool overlap_env_ = true;
  cublasHandle_t cublas_ = nullptr;
  int max_keys_ = 0;
  bool time_linears_ = false;
  bool timeline_on_ = false;
  bool marks_on_ = false;
  std::unique_ptr<GraphMarks> marks_;
  std::unique_ptr<Timeline> timeline_;
  std::string site_prefix_;  // the running layer's kind for the timeline's site names
  int csa_bucket_ = 0, hca_bucket_ = 0;  // visible compressed entries, rounded up (upload_plan)
  bool hc_split_ = true;  // MEMRA_CUDA_HC_SPLIT=0: the mHC mix in one block per row (bench A/B)
  bool hc_post_epilogue_ = true;  // MEMRA_CUDA_HC_POST_EPILOGUE=0: the attention's hc_post as its own launch (A/B)
  bool side_chains_ = true;       // MEMRA_CUDA_SIDE_CHAINS=0: session 28's side chains (A/B; shard.h Side)
  bool hc_norm_ = true;           // MEMRA_CUDA_HC_NORM=0: the sublayer's norm as its own launch after hc_pre (A/B)
  bool comb_apart_ = true;        // MEMRA_CUDA_HC_COMB_APART=0: the Sinkhorn inside hc_pre (A/B)
  bool comb_pending_ = false;     // hc_comb runs on kSideComb, not yet joined
  int indexer_priority_ = 0;      // the indexer chain's launch priority (the device's highest; MEMRA_CUDA_INDEXER_PRIORITY=0: none)
  Scratch<float> hc_partial_;
  std::vector<cudaEvent_t> timing_events_;  // pairs, reused
  std::vector<double> timing_flop_;        // per pair in use

  RoundPlan plan_;
  PinnedBuffer plan_host_;
  Scratch<uint8_t> plan_dev_;
  size_t plan_bytes_ = 0;  // the staged plan's bytes (upload_plan), what copy_plan moves
  int32_t* d_tokens_ = nullptr;
  int32_t* d_row_pos_ = nullptr;
  int32_t* d_row_seq_ = nullptr;
  SeqDesc* d_seqs_ = nullptr;
  Closing* d_csa_ = nullptr;
  Closing* d_hca_ = nullptr;
  int32_t* d_logit_rows_ = nullptr;
  LogitDest* d_logit_dests_ = nullptr;

  Scratch<float> X_, x_, y_, post_, comb_, qr_, q_, kv_, o_, z_, ckv_, csc_, ikv_, isc_, qi_, wi_, scores_;
  Scratch<int32_t> selected_, eid_, pair_order_, groups_, n_groups_, order_;
  Scratch<int32_t> moe_sync_;  // the one-row MoE launch's counters (zero between launches)
  Scratch<float> rlogits_, ew_, margin_, rscale_, h_, eo_, sg_, su_, sh_, sy_, xg_, eg_, eu_, eh_, eoe_, hh_, logits_;
  Scratch<uint8_t> conv_, dq_;  // bf16 activations; one dequantised matrix (cuda-fast, packed weights)
  Scratch<uint8_t> xb_;         // batched experts: the slot rows, then the hidden rows, in bf16/f16
  const void* eo_read_ = nullptr;      // where the ffn combine reads the routed outputs (moe_site)
  const int32_t* eo_rows_ = nullptr;   // and each pair's row there (null: row = pair)
  WType eo_type_ = WType::kF32;        // and their type (bf16 / f16: the batched experts' down GEMM)
  Scratch<uint8_t> x16_;        // cuda-fast: a site's input rows in bf16/f16 (site_rows16)
  Scratch<float> taps_;         // [tap layers, rows, n, D]
  std::vector<int> tap_layers_;
  Scratch<uint64_t> gptr_;      // batched experts: the GEMMs' device pointer arrays
  const char* moe_ran_ = "fused";
  PinnedBuffer order_host_;
};

}  // namespace memra::cuda
