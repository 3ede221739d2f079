// A drafter paired with a trunk: priming from trunk forwards and proposals (drafter.h).
#include "drafter/drafter.h"

#include <algorithm>

#include "core/error.h"
#include "drafter/taps.h"
#include "engine/cpu_ops.h"
#include "model/tensor_names.h"

namespace memra {

Drafter::Drafter(const DrafterWeights& weights, const Model& trunk)
    : weights_(weights), trunk_(trunk), heads_(DrafterHeads::bind(weights)) {
  const DrafterConfig& c = weights.config();
  const ModelConfig& tc = trunk.config();
  const std::string hint = "use the drafter with the trunk it was made for (its oracle.json names it)";
  if (tc.vocab_size != c.vocab_size || tc.hidden_size != c.hidden_size)
    throw Error("the drafter's vocab/hidden " + std::to_string(c.vocab_size) + "/" + std::to_string(c.hidden_size) +
                    " differ from the trunk's " + std::to_string(tc.vocab_size) + "/" + std::to_string(tc.hidden_size),
                hint);
  for (int64_t j : c.tap_layer_inputs)
    if (j < 0 || j >= tc.num_hidden_layers)
      throw Error("the drafter taps the input of trunk layer " + std::to_string(j) + "; the trunk has " +
                      std::to_string(tc.num_hidden_layers) + " layers",
                  hint);
  if (c.noise_token_id < 0 || c.noise_token_id >= c.vocab_size)
    throw Error("the drafter's noise token " + std::to_string(c.noise_token_id) + " is outside the vocabulary");
  embed_ = trunk.f32(tensor_name(TensorId::kEmbed));
  head_ = trunk.f32(tensor_name(TensorId::kHead));
  if (c.family == DrafterFamily::kDspark)
    dspark_ = std::make_unique<DsparkWeights>(weights);
  else
    dflash_ = std::make_unique<DflashWeights>(weights);
}

Drafter::~Drafter() = default;

DraftShape Drafter::shape(int64_t block_size, std::optional<Harvest> harvest) const {
  const DrafterConfig& c = config();
  DraftShape s;
  s.block_size = block_size > 0 ? block_size : c.block_size;
  if (harvest) {
    s.harvest = *harvest;
  } else if (c.harvest) {
    s.harvest = *c.harvest;
  } else {
    throw Error("the drafter config names no harvest convention", "give --harvest dflash|dspark");
  }
  if (s.drafts() < 1)
    throw Error("block size " + std::to_string(s.block_size) + " gives no drafts under the " + harvest_name(s.harvest) +
                    " harvest",
                "use a block size of at least 2");
  return s;
}

void Drafter::attach(State& state) const {
  if (state.position() != 0)
    throw Error(
        "a drafter is attached to an empty state (position 0), this one is at " + std::to_string(state.position()),
        "attach the drafter before the prefill, or restore a state file that holds its classes");
  state.attach(std::make_unique<DrafterComponent>(config()));
}

std::vector<float> Drafter::taps(const ForwardTrace& trace, std::span<const int32_t> tokens) const {
  const int64_t T = static_cast<int64_t>(tokens.size()), D = config().hidden_size;
  std::vector<float> emb;
  if (std::find(config().tap_layer_inputs.begin(), config().tap_layer_inputs.end(), 0) !=
      config().tap_layer_inputs.end()) {
    emb.resize(T * D);
    for (int64_t t = 0; t < T; ++t)
      std::copy(embed_ + tokens[t] * D, embed_ + (tokens[t] + 1) * D, emb.begin() + t * D);
  }
  return taps_from_trace(config(), trace, T, trunk_.config().hc_mult, emb.empty() ? nullptr : emb.data());
}

void Drafter::feed(State& state, std::span<const float> taps, int64_t T, FeedCapture* capture) const {
  DrafterComponent& dc = drafter_component(state);
  const int64_t D = config().hidden_size;
  if (static_cast<int64_t>(taps.size()) != T * config().n_taps() * D)
    throw Error("drafter feed: " + std::to_string(taps.size()) + " tap values for " + std::to_string(T) + " rows");
  if (dc.position() + T != state.position())
    throw Error("drafter feed: the drafter holds " + std::to_string(dc.position()) + " positions + " +
                std::to_string(T) + " new ones, the trunk " + std::to_string(state.position()));
  std::vector<float> ctx(T * D);
  if (dspark_) {
    dspark_main_x(*dspark_, taps.data(), T, ctx.data());
    dspark_ring_append(*dspark_, dc.rings, ctx.data(), T);
  } else {
    dflash_ctx_features(*dflash_, taps.data(), T, ctx.data());
    dflash_context_append(*dflash_, dc.context, ctx.data(), T);
  }
  if (capture) {
    capture->taps.insert(capture->taps.end(), taps.begin(), taps.end());
    capture->ctx.insert(capture->ctx.end(), ctx.begin(), ctx.end());
  }
}

void Drafter::prefill(const Backend& backend, State& state, std::span<const int32_t> tokens, int64_t chunk,
                      std::vector<float>* logits, FeedCapture* capture) const {
  const int64_t T = static_cast<int64_t>(tokens.size()), V = backend.vocab_size();
  if (chunk <= 0) chunk = std::max<int64_t>(T, 1);
  for (int64_t begin = 0; begin < T; begin += chunk) {
    const int64_t width = std::min(chunk, T - begin);
    const std::span<const int32_t> part = tokens.subspan(begin, width);
    ForwardTrace trace;
    SequenceStep step{&state, part, nullptr, &trace};
    if (logits) {
      logits->resize(logits->size() + width * V);
      step.logits = logits->data() + logits->size() - width * V;
    }
    backend.forward(std::span<const SequenceStep>(&step, 1));
    feed(state, taps(trace, part), width, capture);
  }
}

Proposal Drafter::propose(const State& state, int32_t anchor, const DraftShape& shape, DraftCapture* capture) const {
  const DrafterConfig& c = config();
  const DrafterComponent& dc = drafter_component(state);
  const int64_t P = state.position(), b = shape.block_size, nd = shape.drafts(), D = c.hidden_size, V = c.vocab_size;
  if (dc.position() != P)
    throw Error("the drafter holds " + std::to_string(dc.position()) + " positions, the state " + std::to_string(P),
                "feed every trunk forward of this state through the drafter");
  if (anchor < 0 || anchor >= V) throw Error("anchor token " + std::to_string(anchor) + " is outside the vocabulary");
  std::vector<int32_t> ids(b, static_cast<int32_t>(c.noise_token_id));
  ids[0] = anchor;
  std::vector<float> emb(b * D);
  for (int64_t t = 0; t < b; ++t) std::copy(embed_ + ids[t] * D, embed_ + (ids[t] + 1) * D, emb.begin() + t * D);

  ForwardTrace* layers = capture ? &capture->layers : nullptr;
  std::vector<float> prenorm, final;
  if (dspark_) {
    DsparkBlock blk = dspark_block(*dspark_, dc.rings, emb.data(), b, layers);
    prenorm = std::move(blk.prenorm);
    final = std::move(blk.final);
  } else {
    DflashBlock blk = dflash_block(*dflash_, dc.context, emb.data(), b, layers);
    prenorm = std::move(blk.prenorm);
    final = std::move(blk.final);
  }
  const int64_t r0 = harvest_first_row(shape.harvest);
  std::vector<float> base(nd * V);
  cpu::linear(final.data() + r0 * D, nd, D, head_, V, base.data());

  Proposal p;
  p.position = P;
  p.anchor = anchor;
  std::vector<float> markov_logits;
  if (c.has_markov()) {
    MarkovChain chain = markov_chain(heads_, base, nd, anchor);
    p.tokens = std::move(chain.tokens);
    markov_logits = std::move(chain.logits);
  } else {
    p.tokens = argmax_rows(base, nd, V);
  }
  std::vector<int32_t> prev(nd);
  prev[0] = anchor;
  for (int64_t k = 1; k < nd; ++k) prev[k] = p.tokens[k - 1];
  if (c.confidence) {
    const std::vector<float>& h = c.confidence_input == "prenorm" ? prenorm : final;
    p.confidence = confidence_logits(heads_, std::span<const float>(h.data() + r0 * D, nd * D), prev);
  }
  if (capture) {
    capture->block_ids = ids;
    capture->block_embeddings = std::move(emb);
    capture->prenorm = std::move(prenorm);
    capture->final = std::move(final);
    capture->base_logits = std::move(base);
    capture->markov_logits = std::move(markov_logits);
    capture->markov_embeddings.clear();
    for (int64_t k = 0; k < nd && c.has_markov(); ++k)
      capture->markov_embeddings.insert(capture->markov_embeddings.end(), heads_.w1 + prev[k] * heads_.rank,
                                        heads_.w1 + (prev[k] + 1) * heads_.rank);
  }
  return p;
}

}  // namespace memra
