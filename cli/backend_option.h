// The --backend / --devices options every command that runs the model shares, and the backend they
// select (make_backend over the realization table).
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/backend.h"
#include "model/model.h"

namespace memra::cli {

struct BackendChoice {
  std::string name = "cpu";
  std::string devices;  // "0,1"
  bool qat = false;     // --qat (BackendOptions::qat)
};

void add_backend_options(CLI::App* sub, BackendChoice& choice);

// moe_per_expert: the CUDA backend's per-expert MoE path (BackendOptions::moe_per_expert).
std::unique_ptr<Backend> make_backend(const BackendChoice& choice, const Model& model, bool moe_per_expert = false);

}  // namespace memra::cli
