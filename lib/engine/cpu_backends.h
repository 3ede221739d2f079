// The CPU realizations (realization.h): `cpu`, the exact reference, and `cpu-fast`. Both keep the
// trunk state in the host layout of decode_state.h, so their state files are interchangeable.
#pragma once
#include <memory>

#include "engine/backend.h"

namespace memra {

std::unique_ptr<Backend> make_cpu_backend(const Model& model, const BackendOptions& options = {});
std::unique_ptr<Backend> make_cpu_fast_backend(const Model& model, const BackendOptions& options = {});

}  // namespace memra
