// A drafter paired with a trunk, at run time: it primes its state component from trunk forwards
// (taps of every committed position) and proposes blocks from it. Both families (DSpark rings,
// DFlash context K/V) behind one interface; the heads (Markov chain, confidence) are shared.
//
// Protocol (drafters.md §1.4, §5.4): a state at position P has run tokens 0..P-1 through the trunk;
// the drafter component holds one entry per one of those positions. The anchor x_0 (the token at P,
// the argmax of the last logits under greedy) is not run yet; a proposal puts the block
// [x_0, noise, ..., noise] at positions P..P+b-1 and harvests nd drafts (harvest.h). Proposing
// never changes the state.
//
// The drafter math runs on the host (the CPU exact arithmetic); the trunk may run on any backend
// whose forward fills a ForwardTrace (the taps are read from it).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "drafter/dflash_forward.h"
#include "drafter/drafter_state.h"
#include "drafter/drafter_weights.h"
#include "drafter/dspark_forward.h"
#include "drafter/markov.h"
#include "engine/backend.h"
#include "model/model.h"

namespace memra {

// Block size and harvest of a proposal: the config's unless overridden.
struct DraftShape {
  int64_t block_size = 0;  // b
  Harvest harvest = Harvest::kDspark;
  int64_t drafts() const { return harvest_drafts(harvest, block_size); }  // nd
};

// Every intermediate of one proposal (filled only when asked for). Shapes: b block rows, nd drafts,
// D hidden, V vocab, r Markov rank.
struct DraftCapture {
  std::vector<int32_t> block_ids;        // [b] x_0, noise, ...
  std::vector<float> block_embeddings;   // [b, D]
  ForwardTrace layers;                   // dspark stage.S.{hidden,router.*}; dflash layer.L.hidden
  std::vector<float> prenorm, final;     // [b, D]
  std::vector<float> base_logits;        // [nd, V] LM head over the harvested rows
  std::vector<float> markov_logits;      // [nd, V] base + Markov bias (Markov head only)
  std::vector<float> markov_embeddings;  // [nd, r] W1[x_{k-1}] (Markov head only)
};

struct Proposal {
  int64_t position = 0;           // P, the anchor's position
  int32_t anchor = 0;             // x_0
  std::vector<int32_t> tokens;    // [nd] d_1..d_nd
  std::vector<float> confidence;  // [nd] confidence logits (empty without the head)
};

// Taps and the context rows derived from them, per fed position (filled only when asked for).
struct FeedCapture {
  std::vector<float> taps;  // [T, n_taps·D]
  std::vector<float> ctx;   // [T, D] dspark main_x; dflash ctx features
};

class Drafter {
 public:
  // Binds `weights` to `trunk` (both must outlive the Drafter). Throws Error when they do not pair:
  // vocabulary or hidden size differ, or a tap reads a layer the trunk does not have.
  Drafter(const DrafterWeights& weights, const Model& trunk);
  Drafter(const Drafter&) = delete;
  Drafter& operator=(const Drafter&) = delete;
  ~Drafter();

  const DrafterConfig& config() const { return weights_.config(); }
  const DrafterWeights& weights() const { return weights_; }

  // The config's shape with optional overrides (block_size 0 / harvest nullopt: the config's);
  // throws Error when the config has no harvest and none is given, or b < 2 (dflash) / b < 1.
  DraftShape shape(int64_t block_size = 0, std::optional<Harvest> harvest = std::nullopt) const;

  // Attaches an empty drafter component; the state must be at position 0 (the drafter is primed
  // by feeding it every token the trunk runs), or about to import classes (restore).
  void attach(State& state) const;

  // The drafter-aware forward: runs the trunk over `tokens` in chunks of at most `chunk` (≤ 0: one
  // call) and appends every row's taps to the drafter. logits [T, V] appended when non-null.
  void prefill(const Backend& backend, State& state, std::span<const int32_t> tokens, int64_t chunk,
               std::vector<float>* logits = nullptr, FeedCapture* capture = nullptr) const;
  // Appends taps [T, n_taps·D] of the positions state's drafter is missing (the trunk has run them).
  void feed(State& state, std::span<const float> taps, int64_t T, FeedCapture* capture = nullptr) const;
  // The taps [T, n_taps·D] of one traced trunk forward over `tokens`.
  std::vector<float> taps(const ForwardTrace& trace, std::span<const int32_t> tokens) const;

  // A block at the state's position from `anchor`. Leaves the state unchanged.
  Proposal propose(const State& state, int32_t anchor, const DraftShape& shape, DraftCapture* capture = nullptr) const;

 private:
  const DrafterWeights& weights_;
  const Model& trunk_;
  const float* embed_;  // [V, D] the trunk's
  const float* head_;   // [V, D] the trunk's
  DrafterHeads heads_;
  std::unique_ptr<DsparkWeights> dspark_;
  std::unique_ptr<DflashWeights> dflash_;
};

}  // namespace memra
