// Markov and confidence heads on the CPU (see markov.h).
#include "drafter/markov.h"

#include "core/error.h"
#include "engine/cpu_ops.h"

namespace memra {

DrafterHeads DrafterHeads::bind(const DrafterWeights& weights) {
  const DrafterConfig& c = weights.config();
  const std::string p = drafter_head_prefix(c);
  DrafterHeads h;
  h.vocab = c.vocab_size;
  if (c.has_markov()) {
    h.rank = c.markov_rank;
    h.w1 = weights.f32(p + "markov_head.markov_w1.weight");
    h.w2 = weights.f32(p + "markov_head.markov_w2.weight");
  }
  if (c.confidence) {
    h.conf_in = c.confidence_in();
    h.conf_with_markov = c.confidence_with_markov;
    h.conf_w = weights.f32(p + "confidence_head.proj.weight");
    if (weights.has(p + "confidence_head.proj.bias")) h.conf_b = weights.f32(p + "confidence_head.proj.bias");
  }
  return h;
}

static void check_token(const DrafterHeads& h, int32_t id, const char* what) {
  if (id < 0 || id >= h.vocab)
    throw Error(std::string(what) + " " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(h.vocab) + ")");
}

void markov_bias(const DrafterHeads& h, int32_t prev, float* bias) {
  check_token(h, prev, "markov: previous token");
  const float* e = h.w1 + static_cast<int64_t>(prev) * h.rank;  // [r]
  for (int64_t v = 0; v < h.vocab; ++v) bias[v] = static_cast<float>(cpu::dot(h.w2 + v * h.rank, e, h.rank));
}

std::vector<int32_t> argmax_rows(std::span<const float> base, int64_t nd, int64_t V) {
  std::vector<int32_t> out(nd);
  for (int64_t k = 0; k < nd; ++k) {
    const float* row = base.data() + k * V;
    int64_t best = 0;
    for (int64_t v = 1; v < V; ++v)
      if (row[v] > row[best]) best = v;
    out[k] = static_cast<int32_t>(best);
  }
  return out;
}

MarkovChain markov_chain(const DrafterHeads& h, std::span<const float> base, int64_t nd, int32_t anchor) {
  if (h.rank == 0) throw Error("markov: the drafter has no Markov head");
  if (static_cast<int64_t>(base.size()) != nd * h.vocab)
    throw Error("markov: base logits hold " + std::to_string(base.size()) + " values, expected nd·V = " +
                std::to_string(nd * h.vocab));
  MarkovChain c;
  c.logits.assign(base.begin(), base.end());
  c.tokens.resize(nd);
  std::vector<float> bias(h.vocab);
  int32_t prev = anchor;
  for (int64_t k = 0; k < nd; ++k) {
    markov_bias(h, prev, bias.data());
    float* row = c.logits.data() + k * h.vocab;
    for (int64_t v = 0; v < h.vocab; ++v) row[v] += bias[v];
    prev = argmax_rows(std::span<const float>(row, h.vocab), 1, h.vocab)[0];
    c.tokens[k] = prev;
  }
  return c;
}

std::vector<float> confidence_logits(const DrafterHeads& h, std::span<const float> hidden, std::span<const int32_t> prev) {
  if (h.conf_in == 0) throw Error("confidence: the drafter has no confidence head");
  const int64_t nd = static_cast<int64_t>(prev.size()), D = h.conf_in - (h.conf_with_markov ? h.rank : 0);
  if (static_cast<int64_t>(hidden.size()) != nd * D)
    throw Error("confidence: hidden rows hold " + std::to_string(hidden.size()) + " values, expected " + std::to_string(nd * D));
  std::vector<float> out(nd);
  for (int64_t k = 0; k < nd; ++k) {
    double s = cpu::dot(h.conf_w, hidden.data() + k * D, D);
    if (h.conf_with_markov) {
      check_token(h, prev[k], "confidence: previous token");
      s += cpu::dot(h.conf_w + D, h.w1 + static_cast<int64_t>(prev[k]) * h.rank, h.rank);
    }
    out[k] = static_cast<float>(s + (h.conf_b ? static_cast<double>(h.conf_b[0]) : 0.0));
  }
  return out;
}

}  // namespace memra
