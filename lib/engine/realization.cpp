// The realization table (realization.h). Unit roundoffs: f32 2^-24, bf16 2^-8. The parity
// tolerances are derived in docs/parity.md; the bands that compare two realizations in docs/bands.md.
#include "engine/realization.h"

#include <array>
#include <cmath>

#include "core/error.h"

namespace memra {

namespace {

constexpr double kF32 = 5.9604644775390625e-08;  // 2^-24
constexpr double kBF16 = 0.00390625;             // 2^-8

constexpr std::array<RealizationInfo, 4> kTable = {{
    {"cpu", Device::kCpu, "f32", "f64", kF32, 1e-5, true, "cpu-f32-exact",
     "exact CPU reference: f32 storage, double accumulation in index order, one row at a time"},
    {"cpu-fast", Device::kCpu, "f32", "f32", kF32, 1e-5, false, "cpu-fast-f32",
     "fast CPU: blocked multi-threaded f32 GEMMs over many rows, experts grouped, f32 storage"},
    {"cuda", Device::kCuda, "f32", "f32", kF32, 1e-5, true, "cuda-f32-exact",
     "exact CUDA: fixed-order warp reductions, row arithmetic independent of batch and chunk"},
    {"cuda-fast", Device::kCuda, "bf16", "f32", kBF16, 2e-2, false, "cuda-fast-bf16",
     "fast CUDA: cuBLAS bf16 tensor-core GEMMs, fused MoE"},
}};

}  // namespace

std::span<const RealizationInfo> realizations() { return kTable; }

const RealizationInfo& realization(std::string_view name) {
  for (const auto& r : kTable)
    if (r.name == name || r.precision_class == name) return r;
  throw Error("unknown backend '" + std::string(name) + "'", "use one of: " + realization_names());
}

std::string realization_names() {
  std::string s;
  for (const auto& r : kTable) s += (s.empty() ? "" : ", ") + std::string(r.name);
  return s;
}

}  // namespace memra
