// make_backend (backend.h): the realization table names the device; CPU realizations are built
// here, device realizations by their library's versioned registration (backend_registry.h).
#include "backend/cuda_loader.h"
#include "core/error.h"
#include "engine/backend.h"
#include "engine/backend_registry.h"
#include "engine/cpu_backends.h"

namespace memra {

std::unique_ptr<Backend> make_backend(const std::string& name, const Model& model, const BackendOptions& options) {
  const RealizationInfo& r = realization(name);
  if (r.name == "cpu") return make_cpu_backend(model, options);
  if (r.name == "cpu-fast") return make_cpu_fast_backend(model, options);
  if (options.qat)
    throw Error("--qat is implemented on the CPU realizations only, not " + std::string(r.name),
                "use --backend cpu or cpu-fast with --qat");
  // A device library: its versioned registration creates the backend.
  auto reg_fn = reinterpret_cast<BackendRegistrationFn>(cuda_symbol(kBackendRegistrationSymbol));
  const BackendRegistration* reg = reg_fn();
  if (!reg || reg->api_version != kBackendApiVersion)
    throw Error("the CUDA backend library speaks backend API version " + std::to_string(reg ? reg->api_version : -1) +
                    ", this memra speaks " + std::to_string(kBackendApiVersion),
                "rebuild memra and libmemra_cuda.so from the same source tree");
  char err[1024] = {0};
  Backend* b = reg->create(r, model, options, err, sizeof err);
  if (!b) {
    std::string what(err), hint;
    if (auto nl = what.find('\n'); nl != std::string::npos) {
      hint = what.substr(nl + 1);
      what = what.substr(0, nl);
    }
    throw Error(what.empty() ? "the CUDA backend could not be created" : what, hint);
  }
  return std::unique_ptr<Backend>(b);
}

}  // namespace memra
