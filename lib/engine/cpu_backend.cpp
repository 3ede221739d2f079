// The two CPU realizations (cpu_backends.h): `cpu`, the exact reference (DeepSeek-V4 as
// docs/architecture.md and transformers 5.17 compute it: f32 storage, double accumulation in index
// order, one row at a time, so chunk widths and batches give bit-identical logits and state), and
// `cpu-fast` (blocked f32 GEMMs, bf16 storage between ops). Both run the shared layer loop
// (cpu_forward.cpp) with their own arithmetic, and keep the trunk state in the host layout of
// decode_state.h (cpu_state.h).
#include <algorithm>
#include <memory>
#include <vector>

#include "core/error.h"
#include "engine/cpu_backends.h"
#include "engine/cpu_gemm.h"
#include "engine/cpu_layer.h"
#include "engine/cpu_ops.h"
#include "engine/cpu_state.h"
#include "model/model.h"

namespace memra {

namespace cpu {

const Arithmetic& exact_arithmetic() {
  static const Arithmetic a{&linear, false};
  return a;
}

const Arithmetic& fast_arithmetic() {
  static const Arithmetic a{&gemm, true};
  return a;
}

}  // namespace cpu

namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(const Model& model, const RealizationInfo& realization, const cpu::Arithmetic& arithmetic, bool qat)
      : cfg_(model.config()), realization_(realization), arithmetic_(arithmetic), weights_(model) {
    arithmetic_.qat = qat;
  }

  const RealizationInfo& realization() const override { return realization_; }
  bool qat() const override { return arithmetic_.qat; }
  const ModelConfig& config() const override { return cfg_; }
  std::unique_ptr<State> new_state(int64_t capacity) const override {
    return std::make_unique<CpuState>(cfg_, capacity);
  }
  std::vector<float> last_logits(const State& state) const override {
    return cpu_state(state, cfg_).trunk().host.last_logits;
  }

  void forward(std::span<const SequenceStep> batch) const override {
    validate_batch(cfg_, batch);
    std::vector<CpuState*> states;
    for (const auto& s : batch) states.push_back(&cpu_state(*s.state, cfg_));
    // Traces are per sequence: a traced sequence runs alone.
    bool traced = false;
    for (const auto& s : batch) traced |= s.trace != nullptr;
    for (size_t b = 0; b < batch.size(); b += traced ? 1 : batch.size()) {
      const size_t n = traced ? 1 : batch.size();
      std::vector<DecodeState*> hosts;
      std::vector<TrunkJournal*> journals;
      for (size_t i = b; i < b + n; ++i) {
        hosts.push_back(&states[i]->trunk().host);
        journals.push_back(&states[i]->trunk().journal);
        states[i]->trunk().journal.drop();  // a journal describes the last forward only
      }
      cpu::forward_batch(arithmetic_, cfg_, weights_, batch.subspan(b, n), hosts, journals);
      for (size_t i = b; i < b + n; ++i) states[i]->advance(static_cast<int64_t>(batch[i].tokens.size()));
    }
  }

 private:
  const ModelConfig& cfg_;
  const RealizationInfo& realization_;
  cpu::Arithmetic arithmetic_;
  cpu::ModelWeights weights_;
};

}  // namespace

// QAT's Hadamard transform needs a power-of-two indexer head dim (DeepSeek-V4's is 128).
static bool check_qat(const Model& model, const BackendOptions& options) {
  const int64_t di = model.config().index_head_dim;
  const bool csa = std::count(model.config().layer_types.begin(), model.config().layer_types.end(), LayerKind::kCSA) > 0;
  if (options.qat && csa && (di < 1 || (di & (di - 1)) != 0))
    throw Error("--qat: the indexer head dim " + std::to_string(di) + " is not a power of two (the Hadamard transform needs one)",
                "run this model without --qat");
  return options.qat;
}

std::unique_ptr<Backend> make_cpu_backend(const Model& model, const BackendOptions& options) {
  return std::make_unique<CpuBackend>(model, realization("cpu"), cpu::exact_arithmetic(), check_qat(model, options));
}

std::unique_ptr<Backend> make_cpu_fast_backend(const Model& model, const BackendOptions& options) {
  return std::make_unique<CpuBackend>(model, realization("cpu-fast"), cpu::fast_arithmetic(), check_qat(model, options));
}

}  // namespace memra
