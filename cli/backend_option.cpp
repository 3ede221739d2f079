// --backend / --devices (backend_option.h).
#include "backend_option.h"

#include "core/error.h"
#include "engine/realization.h"
#include "format/token_list.h"
#include "options.h"

namespace memra::cli {

constexpr int64_t kMaxDevice = 1023;  // a CUDA device index; the driver reports how many exist

void add_backend_options(CLI::App* sub, BackendChoice& choice) {
  std::vector<std::string> names;
  for (const auto& r : realizations()) names.emplace_back(r.name);
  sub->add_option("--backend", choice.name, "Realization that runs the model: " + realization_names())
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  add_count_list(sub, "--devices", choice.devices, "GPU indices for a CUDA backend, e.g. 0,1 (default 0)", 0, kMaxDevice);
  sub->add_flag("--qat", choice.qat,
                "Apply the official inference code's QAT simulations (FP8 window/compressed kv, Hadamard+FP4 "
                "indexer q/k; CPU backends); state files record it");
}

std::unique_ptr<Backend> make_backend(const BackendChoice& choice, const Model& model, bool moe_per_expert) {
  BackendOptions options;
  options.qat = choice.qat;
  options.moe_per_expert = moe_per_expert;
  if (!choice.devices.empty()) {
    for (int32_t d : parse_token_text(choice.devices, "--devices")) options.devices.push_back(d);
    if (realization(choice.name).device != Device::kCuda)
      throw Error("--devices applies to a CUDA backend, not --backend " + choice.name, "add --backend cuda");
  }
  return memra::make_backend(choice.name, model, options);
}

}  // namespace memra::cli
