// Running a model over a decode state: chunked prefill, one-token decode, greedy generation.
// Built on a Backend; the result of a position never depends on how tokens were split into calls.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend.h"
#include "model/model.h"

namespace memra {

// The CPU reference backend (exact f32; each row's arithmetic is independent of the chunk width).
std::unique_ptr<Backend> make_cpu_backend(const Model& model);

// Prefill in chunks of at most `chunk` tokens (chunk ≤ 0: one call). Appends [T, V] logits to
// *logits when non-null. on_progress(done, total) is called after each chunk when set.
void prefill(const Backend& backend, DecodeState& state, std::span<const int32_t> tokens, int64_t chunk,
             std::vector<float>* logits,
             const std::function<void(int64_t, int64_t)>& on_progress = {});

// One token at state.pos; returns its [V] logits.
std::vector<float> decode_step(const Backend& backend, DecodeState& state, int32_t token);

// Argmax with ties to the lower index.
int32_t argmax(std::span<const float> row);

// Greedy: `steps` times, picks argmax(state.last_logits) and feeds it (so pos advances by steps).
// Returns the picked tokens; optionally collects the logits each fed token produced [steps, V].
std::vector<int32_t> generate_greedy(const Backend& backend, DecodeState& state, int64_t steps,
                                     std::vector<float>* step_logits = nullptr);

}  // namespace memra
