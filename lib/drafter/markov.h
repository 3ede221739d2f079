// The heads both drafter families share (drafters.md §5): the vanilla Markov head and the
// confidence head, on plain host arrays. All f32 weights, double accumulation (cpu_ops.h).
//   Markov:      bias_k = W2 · W1[x_{k-1}]  (W1 = markov_w1 [V, r] gathered by the previous token,
//                W2 = markov_w2 [V, r]); greedy chain from the anchor: x_0 = anchor,
//                logits_k = base_k + bias_k, x_k = argmax (the lower index wins a tie).
//   Confidence:  c_k = w · [h_k ; W1[x_{k-1}]] (+ b), a logit; σ(c_k) is the acceptance probability.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "drafter/drafter_weights.h"

namespace memra {

struct DrafterHeads {
  int64_t vocab = 0, rank = 0;       // V, r (r = 0: no Markov head)
  const float* w1 = nullptr;         // [V, r]
  const float* w2 = nullptr;         // [V, r]
  int64_t conf_in = 0;               // D (+ r); 0: no confidence head
  bool conf_with_markov = false;
  const float* conf_w = nullptr;     // [conf_in]
  const float* conf_b = nullptr;     // [1] or null
  static DrafterHeads bind(const DrafterWeights& weights);
};

struct MarkovChain {
  std::vector<int32_t> tokens;  // [nd] x_1..x_nd
  std::vector<float> logits;    // [nd, V] base + bias, the rows the argmaxes were taken over
};

// bias [V] for previous token `prev`.
void markov_bias(const DrafterHeads& h, int32_t prev, float* bias);
// base [nd, V]; throws Error when the anchor is outside the vocabulary or there is no Markov head.
MarkovChain markov_chain(const DrafterHeads& h, std::span<const float> base, int64_t nd, int32_t anchor);
// Argmax of each row of base [nd, V] (drafters without a Markov head); lower index wins a tie.
std::vector<int32_t> argmax_rows(std::span<const float> base, int64_t nd, int64_t V);
// c_k for hidden rows [nd, D] and previous tokens [nd] = [anchor, x_1..x_{nd-1}].
std::vector<float> confidence_logits(const DrafterHeads& h, std::span<const float> hidden, std::span<const int32_t> prev);

}  // namespace memra
