// A backend for state-layer work that has a geometry but no weights (state-file tests, the state
// throughput bench): it makes and rebuilds CPU host states (cpu_state.h) and exports them like the
// CPU realizations do; it runs no forward (asking it to is an Error).
#pragma once
#include "core/error.h"
#include "engine/backend.h"
#include "engine/cpu_state.h"

namespace memra {

class HostStateBackend final : public Backend {
 public:
  explicit HostStateBackend(const ModelConfig& config) : config_(config) {}
  const RealizationInfo& realization() const override { return memra::realization("cpu"); }
  const ModelConfig& config() const override { return config_; }
  std::unique_ptr<State> new_state(int64_t capacity) const override { return std::make_unique<CpuState>(config_, capacity); }
  std::vector<float> last_logits(const State& s) const override { return cpu_state(s, config_).trunk().host.last_logits; }
  void forward(std::span<const SequenceStep>) const override {
    throw Error("a host-state backend holds states only; it does not run a model", "use make_backend with a model");
  }

 private:
  const ModelConfig& config_;
};

}  // namespace memra
