// Taps: what a drafter reads from the trunk. Tap i is the mean over the trunk's hc streams of the
// INPUT of trunk layer config.tap_layer_inputs[i] (DeepSeek-V4's own convention: the reference
// appends h.mean(dim=2) before layer i runs; DFlash's HF "output of layer id" is the input of id+1).
// The input of layer j ≥ 1 is the output of layer j-1 (the trace's hidden.{j-1}); the input of
// layer 0 is the token embedding in every stream, whose mean is the embedding itself.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "drafter/drafter_config.h"
#include "engine/backend.h"

namespace memra {

// taps [T, n_taps, D] from a trunk forward trace over T tokens (hidden.L [T, n, D] for the tapped
// layers' predecessors) and, when a tap reads layer 0, the tokens' embeddings [T, D].
std::vector<float> taps_from_trace(const DrafterConfig& config, const ForwardTrace& trace, int64_t T, int64_t hc_mult,
                                   const float* embeddings = nullptr);
// The trace arrays taps_from_trace reads (ForwardTrace::only): hidden.{j-1} for every tap j ≥ 1.
std::vector<std::string> tap_arrays(const DrafterConfig& config);

}  // namespace memra
