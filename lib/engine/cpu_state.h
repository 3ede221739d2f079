// The CPU realizations' decode state: one State whose trunk component keeps the host layout of
// decode_state.h. Shared by `cpu` and `cpu-fast` (their classes are the same F32 tensors).
#pragma once
#include <memory>

#include "engine/backend.h"
#include "engine/decode_state.h"

namespace memra {

class CpuTrunk final : public StateComponent {
 public:
  CpuTrunk(const ModelConfig& config, int64_t capacity) : config_(config), host(make_decode_state(config, capacity)) {}
  std::string name() const override { return "trunk"; }
  std::string class_prefix() const override { return ""; }
  std::vector<ClassLayout> layout(int64_t pos) const override { return trunk_layout(config_, pos); }
  std::vector<CacheClass> export_classes(int64_t pos) const override;
  void import_classes(int64_t pos, const std::vector<CacheClass>& classes) override;
  std::shared_ptr<const ComponentMark> export_mark(int64_t pos) const override;  // mark_classes: host classes
  void import_mark(int64_t pos, const ComponentMark& mark) override;
  void import_mark_keeping(int64_t pos, const ComponentMark& mark, int64_t rows) override;

  const ModelConfig& config_;
  DecodeState host;      // host.pos mirrors State::position()
  TrunkJournal journal;  // of the last forward, when it asked for one (SequenceStep::journal)
};

class CpuState final : public State {
 public:
  CpuState(const ModelConfig& config, int64_t capacity) : State(capacity), config_(&config) {
    attach(std::make_unique<CpuTrunk>(config, capacity));
    trunk_ = static_cast<CpuTrunk*>(components().front().get());
  }
  CpuTrunk& trunk() const { return *trunk_; }
  const ModelConfig* config() const { return config_; }
  using State::advance;

 private:
  const ModelConfig* config_;
  CpuTrunk* trunk_;
};

// The CPU state of `state`, which must have been made by a CPU backend for `config` (Error otherwise).
CpuState& cpu_state(State& state, const ModelConfig& config);
const CpuState& cpu_state(const State& state, const ModelConfig& config);

}  // namespace memra
