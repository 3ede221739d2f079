// Prefill in chunks, one-token decode, greedy generation and state rebuilds over any Backend.
#include "engine/engine.h"

#include <algorithm>

#include "core/checked.h"
#include "core/error.h"

namespace memra {

void prefill(const Backend& backend, State& state, std::span<const int32_t> tokens, int64_t chunk,
             std::vector<float>* logits, const std::function<void(int64_t, int64_t)>& on_progress,
             const std::function<void(const ForwardTrace&)>& on_trace) {
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t V = backend.vocab_size();
  if (chunk <= 0) chunk = std::max<int64_t>(T, 1);
  if (logits)
    logits->reserve(elements_checked(add_checked(static_cast<int64_t>(logits->size()), mul_checked(T, V, "prefill logits"),
                                                 "prefill logits"),
                                     sizeof(float), "prefill logits"));
  for (int64_t begin = 0; begin < T; begin += chunk) {
    const int64_t width = std::min(chunk, T - begin);
    SequenceStep step{&state, tokens.subspan(begin, width), nullptr, nullptr};
    if (logits) {
      logits->resize(logits->size() + width * V);
      step.logits = logits->data() + logits->size() - width * V;
    }
    ForwardTrace trace;
    if (on_trace) step.trace = &trace;
    backend.forward(std::span<const SequenceStep>(&step, 1));
    if (on_trace) on_trace(trace);
    if (on_progress) on_progress(begin + width, T);
  }
}

std::vector<float> decode_step(const Backend& backend, State& state, int32_t token, ForwardTrace* trace) {
  std::vector<float> row(backend.vocab_size());
  SequenceStep step{&state, std::span<const int32_t>(&token, 1), row.data(), trace};
  backend.forward(std::span<const SequenceStep>(&step, 1));
  return row;
}

int32_t argmax(std::span<const float> row) {
  int32_t best = 0;
  for (size_t i = 1; i < row.size(); ++i)
    if (row[i] > row[best]) best = static_cast<int32_t>(i);
  return best;
}

bool is_stop_token(std::span<const int32_t> stop, int32_t token) {
  return std::find(stop.begin(), stop.end(), token) != stop.end();
}

std::vector<int32_t> generate_greedy(const Backend& backend, State& state, int64_t steps,
                                     std::vector<float>* step_logits, const std::function<void(int32_t)>& on_token,
                                     std::span<const int32_t> stop) {
  std::vector<int32_t> out;
  if (steps <= 0) return out;
  std::vector<float> last = backend.last_logits(state);
  if (last.empty())
    throw Error("greedy generation needs the logits of a processed position", "prefill at least one token first");
  for (int64_t s = 0; s < steps; ++s) {
    const int32_t token = argmax(last);
    out.push_back(token);
    if (on_token) on_token(token);
    last = decode_step(backend, state, token);
    if (step_logits) step_logits->insert(step_logits->end(), last.begin(), last.end());
    if (is_stop_token(stop, token)) break;
  }
  return out;
}

std::unique_ptr<State> state_from_classes(const Backend& backend, int64_t pos, int64_t capacity,
                                          const std::vector<CacheClass>& classes,
                                          const std::function<void(State&)>& attach) {
  if (capacity < pos)
    throw negative("capacity " + std::to_string(capacity) + " is smaller than the state's position " +
                       std::to_string(pos),
                   "restore with a capacity of at least " + std::to_string(pos));
  std::unique_ptr<State> state = backend.new_state(capacity);
  if (attach) attach(*state);
  state->import_classes(pos, classes);
  return state;
}

}  // namespace memra
