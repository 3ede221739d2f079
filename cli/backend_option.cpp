// --backend / --devices (backend_option.h).
#include "backend_option.h"

#include "core/error.h"
#include "engine/realization.h"
#include "format/token_list.h"

namespace memra::cli {

void add_backend_options(CLI::App* sub, BackendChoice& choice) {
  std::vector<std::string> names;
  for (const auto& r : realizations()) names.emplace_back(r.name);
  sub->add_option("--backend", choice.name, "Realization that runs the model: " + realization_names())
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  sub->add_option("--devices", choice.devices, "GPU indices for a CUDA backend, e.g. 0,1 (default 0)");
}

std::unique_ptr<Backend> make_backend(const BackendChoice& choice, const Model& model) {
  BackendOptions options;
  if (!choice.devices.empty()) {
    for (int32_t d : parse_token_text(choice.devices, "--devices")) {
      if (d < 0 || d > 1023) throw Error("--devices: " + std::to_string(d) + " is not a device index");
      options.devices.push_back(d);
    }
    if (realization(choice.name).device != Device::kCuda)
      throw Error("--devices applies to a CUDA backend, not --backend " + choice.name, "add --backend cuda");
  }
  return memra::make_backend(choice.name, model, options);
}

}  // namespace memra::cli
