// THE table of realizations: every arithmetic memra can run a model in, by name. A realization is
// what the gates compare (two realizations of one model must agree within a band; one exact
// realization must agree with itself by bits whatever the chunking or batching). Nothing else in
// memra matches precision-class strings: it asks this table.
#pragma once
#include <span>
#include <string>
#include <string_view>

namespace memra {

enum class Device { kCpu, kCuda };

struct RealizationInfo {
  std::string_view name;             // --backend value: "cpu", "cpu-fast", "cuda", "cuda-fast"
  Device device;
  std::string_view storage;          // activation storage between ops: "f32" or "bf16"
  std::string_view accumulation;     // reduction type: "f64" (cpu) or "f32"
  double unit_roundoff;              // u of the coarsest rounding a value passes through (storage or accumulation)
  double parity_rel_to_max;          // parity tolerance against an f32/f64 oracle dump (docs/parity.md)
  bool exact;                        // each row's arithmetic is independent of chunk width and batch
                                     // composition: chunked, batched and single runs agree by bits
  std::string_view precision_class;  // recorded in state files (v1.0 wrote "cpu-f32-exact" for cpu)
  std::string_view summary;          // one line for --help and docs
};

// Every realization, in table order.
std::span<const RealizationInfo> realizations();

// The realization called `name` (or recorded as precision class `name`); throws Error listing the
// known names otherwise.
const RealizationInfo& realization(std::string_view name);

// "cpu, cpu-fast, cuda, cuda-fast": for option help and error hints.
std::string realization_names();

}  // namespace memra
