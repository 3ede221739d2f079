// Running a model over a decode state: chunked prefill, one-token decode, greedy generation.
// Built on any Backend; on an exact realization the result of a position never depends on how the
// tokens were split into calls.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend.h"
#include "model/model.h"

namespace memra {

// Prefill in chunks of at most `chunk` tokens (chunk ≤ 0: one call). Appends [T, V] logits to
// *logits when non-null. on_progress(done, total) is called after each chunk when set; on_trace,
// when set, gets each chunk's ForwardTrace (the backend traces only then).
void prefill(const Backend& backend, State& state, std::span<const int32_t> tokens, int64_t chunk,
             std::vector<float>* logits, const std::function<void(int64_t, int64_t)>& on_progress = {},
             const std::function<void(const ForwardTrace&)>& on_trace = {});

// One token at state.position(); returns its [V] logits (and fills *trace when non-null).
std::vector<float> decode_step(const Backend& backend, State& state, int32_t token, ForwardTrace* trace = nullptr);

// Argmax with ties to the lower index.
int32_t argmax(std::span<const float> row);

// True when `token` is one of `stop` (end-of-sequence ids; model/generation_config.h).
bool is_stop_token(std::span<const int32_t> stop, int32_t token);

// Greedy: `steps` times, picks argmax(last logits) and feeds it (so the position advances by the
// number of tokens returned). Returns the picked tokens; optionally collects the logits each fed
// token produced [returned, V]; on_token (when set) gets each token as soon as it is picked
// (streaming output). A token in `stop` ends the generation early: it is returned and fed (the
// state ends after it, as a finished chat turn does). Empty `stop`: always `steps` tokens (gates).
std::vector<int32_t> generate_greedy(const Backend& backend, State& state, int64_t steps,
                                     std::vector<float>* step_logits = nullptr,
                                     const std::function<void(int32_t)>& on_token = {},
                                     std::span<const int32_t> stop = {});

// A new state of `capacity` holding `classes` at `pos` (all components of the backend's states, plus
// those `attach` adds to the empty state first, e.g. a drafter); throws Error naming the first class
// that disagrees with the layout.
std::unique_ptr<State> state_from_classes(const Backend& backend, int64_t pos, int64_t capacity,
                                          const std::vector<CacheClass>& classes,
                                          const std::function<void(State&)>& attach = {});

}  // namespace memra
