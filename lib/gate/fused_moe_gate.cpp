// Fused vs per-expert MoE on the CUDA backend (fused_moe_gate.h).
#include "gate/fused_moe_gate.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "gate/class_diff.h"

namespace memra {

namespace {

struct Arm {
  std::vector<float> logits;  // prefill rows, then one row per greedy step
  std::vector<int32_t> tokens;
  std::vector<CacheClass> classes;
};

int32_t argmax_row(const float* row, int64_t V) {
  int32_t best = 0;
  for (int64_t i = 1; i < V; ++i)
    if (row[i] > row[best]) best = static_cast<int32_t>(i);
  return best;
}

Arm run_arm(const Backend& backend, const std::vector<int32_t>& prompt, int64_t steps) {
  const int64_t V = backend.vocab_size(), P = static_cast<int64_t>(prompt.size());
  Arm a;
  auto state = backend.new_state(P + steps);
  a.logits.resize(P * V);
  SequenceStep st;
  st.state = state.get();
  st.tokens = prompt;
  st.logits = a.logits.data();
  backend.forward(std::span<const SequenceStep>(&st, 1));
  int32_t tok = argmax_row(a.logits.data() + (P - 1) * V, V);
  for (int64_t s = 0; s < steps; ++s) {
    a.tokens.push_back(tok);
    std::vector<float> row(V);
    st.tokens = std::span<const int32_t>(&a.tokens.back(), 1);
    st.logits = row.data();
    backend.forward(std::span<const SequenceStep>(&st, 1));
    a.logits.insert(a.logits.end(), row.begin(), row.end());
    tok = argmax_row(row.data(), V);
  }
  a.classes = state->export_classes();
  return a;
}

double time_prefill(const Backend& backend, const std::vector<int32_t>& prompt) {
  auto state = backend.new_state(static_cast<int64_t>(prompt.size()));
  SequenceStep st;
  st.state = state.get();
  st.tokens = prompt;
  const auto t0 = std::chrono::steady_clock::now();
  backend.forward(std::span<const SequenceStep>(&st, 1));
  backend.sync();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

GateResult gate_fused_moe(const Model& model, const Backend& fused_backend, const Backend& per_expert_backend,
                          const TrunkGateOptions& trunk, const FusedMoeOptions& options) {
  for (const Backend* b : {&fused_backend, &per_expert_backend})
    if (b->realization().device != Device::kCuda)
      throw Error("the fused-moe gate compares the CUDA backend's two MoE paths; " + b->name() + " has one",
                  "run it with --backend cuda");
  if (fused_backend.name() != per_expert_backend.name())
    throw Error("the fused-moe gate needs one realization on both paths, not " + fused_backend.name() + " and " +
                per_expert_backend.name());
  GateResult g;
  g.name = "fused-moe";
  const Backend& backend = fused_backend;
  const std::vector<int32_t> prompt = gate_prompt(model.config(), trunk);
  const Arm per = run_arm(per_expert_backend, prompt, options.steps);
  const Arm fused = run_arm(fused_backend, prompt, options.steps);

  const bool logits_bits = per.logits.size() == fused.logits.size() &&
                           std::memcmp(per.logits.data(), fused.logits.data(), per.logits.size() * sizeof(float)) == 0;
  const bool tokens_equal = per.tokens == fused.tokens;
  std::string first;
  g.class_diffs = diff_classes(per.classes, fused.classes, &first);
  const bool classes_bits = first.empty();
  if (!logits_bits) g.fail("fused and per-expert logits differ");
  if (!tokens_equal) g.fail("fused and per-expert greedy tokens differ");
  if (!classes_bits) g.fail("cache classes differ: " + describe_first_difference(g.class_diffs, first));

  std::vector<double> t_per, t_fused;
  for (int64_t r = 0; r < options.reps; ++r) {  // interleaved, so drift hits both arms alike
    t_per.push_back(time_prefill(per_expert_backend, prompt));
    t_fused.push_back(time_prefill(fused_backend, prompt));
  }
  const double per_s = median(t_per), fused_s = median(t_fused);
  g.figure("realization", backend.name());
  g.figure("prompt", static_cast<int64_t>(prompt.size()));
  g.figure("steps", options.steps);
  g.figure_bool("logits_bits_equal", logits_bits);
  g.figure_bool("tokens_equal", tokens_equal);
  g.figure_bool("cache_bits_equal", classes_bits);
  g.figure("reps", options.reps);
  g.figure("per_expert_s", per_s);
  g.figure("fused_s", fused_s);
  g.figure("speedup", fused_s > 0 ? per_s / fused_s : 0.0);
  g.details["timing"] = "median prefill wall time of the prompt per path, interleaved";
  return g;
}

}  // namespace memra
