// memra devices: lists the CUDA devices memra can use, through the lazy CUDA loader. Having no GPU
// (no CUDA build, no driver, no device) is an answer, not an error: one clear line and exit 0.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "backend/cuda_loader.h"
#include "command.h"
#include "core/error.h"

namespace memra::cli {

namespace {

struct DevicesOptions {
  bool json = false;
};

int run_devices(const DevicesOptions& opt, const Context& ctx) {
  const CudaProbe& probe = probe_cuda();
  if (opt.json) {
    nlohmann::json doc;
    doc["backend"] = "cuda";
    doc["state"] = cuda_state_name(probe.state);
    doc["message"] = probe.message;
    doc["library"] = probe.library.empty() ? nlohmann::json(nullptr) : nlohmann::json(probe.library);
    doc["searched"] = probe.searched;
    doc["devices"] = nlohmann::json::array();
    for (const CudaDeviceInfo& d : probe.devices)
      doc["devices"].push_back({{"index", d.index}, {"description", d.description}});
    std::cout << doc.dump(2) << "\n";
    return kExitOk;
  }
  if (probe.devices.empty()) {
    std::cout << "no CUDA devices: " << probe.message << "\n";
    if (!probe.hint.empty() && !ctx.quiet) std::cerr << "memra: hint: " << probe.hint << "\n";
    return kExitOk;
  }
  for (const CudaDeviceInfo& d : probe.devices) std::cout << "cuda:" << d.index << "  " << d.description << "\n";
  return kExitOk;
}

}  // namespace

void setup_devices(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<DevicesOptions>();
  auto* sub = app.add_subcommand("devices", "List the CUDA devices memra can use (loads the CUDA backend)");
  sub->add_flag("--json", opt->json, "Print one JSON document: state, message, library, devices");
  sub->callback([opt, &ctx] { ctx.run = [opt, &ctx] { return run_devices(*opt, ctx); }; });
}

}  // namespace memra::cli
