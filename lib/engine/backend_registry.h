// The versioned entry point a separately built backend library exports (llama.cpp's
// ggml_backend_reg with its api_version is the anchor). libmemra_cuda.so exports
//
//   extern "C" const memra::BackendRegistration* memra_backend_registration();
//
// make_backend() dlopens the library on first use (lib/backend/cuda_loader.h), checks
// api_version == kBackendApiVersion (a mismatch is a clear error naming both versions, never a
// crash) and calls create(). The library is built from the same headers as the memra binary,
// which exports its symbols (ENABLE_EXPORTS), so the backend returns a plain memra::Backend.
#pragma once
#include <cstddef>

#include "engine/backend.h"

namespace memra {

// Bump when Backend, State, StateComponent, SequenceStep, BackendOptions or this struct change.
// 2: streamed export/import of state components, Backend::host_buffer and device_report,
//    BackendOptions::moe_per_expert and synthetic_seed.
// 3: Backend::set_probes (ForwardProbes), BackendOptions::time_linears.
inline constexpr int kBackendApiVersion = 3;

struct BackendRegistration {
  int api_version;     // kBackendApiVersion the library was built with
  const char* device;  // "cuda"
  // Creates `realization` (a name from realization.h whose device this library serves) for
  // `model`. Returns null and writes a one-line reason (and a hint after "\n") into error on failure.
  Backend* (*create)(const RealizationInfo& realization, const Model& model, const BackendOptions& options,
                     char* error, size_t error_size);
};

using BackendRegistrationFn = const BackendRegistration* (*)();
inline constexpr const char* kBackendRegistrationSymbol = "memra_backend_registration";

}  // namespace memra
