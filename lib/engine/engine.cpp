// Prefill in chunks, one-token decode and greedy generation over any Backend.
#include "engine/engine.h"

#include <algorithm>

#include "core/checked.h"
#include "core/error.h"

namespace memra {

void prefill(const Backend& backend, DecodeState& state, std::span<const int32_t> tokens, int64_t chunk,
             std::vector<float>* logits, const std::function<void(int64_t, int64_t)>& on_progress) {
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t V = backend.vocab_size();
  if (chunk <= 0) chunk = std::max<int64_t>(T, 1);
  if (logits)
    logits->reserve(elements_checked(add_checked(static_cast<int64_t>(logits->size()), mul_checked(T, V, "prefill logits"),
                                                 "prefill logits"),
                                     sizeof(float), "prefill logits"));
  for (int64_t begin = 0; begin < T; begin += chunk) {
    const int64_t width = std::min(chunk, T - begin);
    float* out = nullptr;
    if (logits) {
      logits->resize(logits->size() + width * V);
      out = logits->data() + logits->size() - width * V;
    }
    backend.forward(state, tokens.subspan(begin, width), out, nullptr);
    if (on_progress) on_progress(begin + width, T);
  }
}

std::vector<float> decode_step(const Backend& backend, DecodeState& state, int32_t token) {
  std::vector<float> row(backend.vocab_size());
  backend.forward(state, std::span<const int32_t>(&token, 1), row.data(), nullptr);
  return row;
}

int32_t argmax(std::span<const float> row) {
  int32_t best = 0;
  for (size_t i = 1; i < row.size(); ++i)
    if (row[i] > row[best]) best = static_cast<int32_t>(i);
  return best;
}

std::vector<int32_t> generate_greedy(const Backend& backend, DecodeState& state, int64_t steps,
                                     std::vector<float>* step_logits) {
  if (steps > 0 && state.last_logits.empty())
    throw Error("greedy generation needs the logits of a processed position", "prefill at least one token first");
  std::vector<int32_t> out;
  for (int64_t s = 0; s < steps; ++s) {
    int32_t token = argmax(state.last_logits);
    out.push_back(token);
    std::vector<float> row = decode_step(backend, state, token);
    if (step_logits) step_logits->insert(step_logits->end(), row.begin(), row.end());
  }
  return out;
}

}  // namespace memra
