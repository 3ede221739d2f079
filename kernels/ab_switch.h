// The environment switches the kernels' A/B timings use (kernels/README.md lists them): read by
// the caller, usually once per process into a function-local static. Plain C++, host side only.
#pragma once
#include <cstdlib>
#include <initializer_list>
#include <string>

namespace memra::cuda {

// On unless the variable is set to "0" (MEMRA_CUDA_HC_MIX_ROWS=0 and the like).
inline bool switch_on(const char* name) {
  const char* v = std::getenv(name);
  return !(v && std::string(v) == "0");
}

// On only when the variable is exactly "1": the diagnostics and host forms that are off by default
// (MEMRA_CUDA_TIMELINE, MEMRA_CUDA_GRAPH_MARKS, MEMRA_CUDA_TIME_LINEARS, MEMRA_CUDA_HOST_MARK).
inline bool switch_one(const char* name) {
  const char* v = std::getenv(name);
  return v && std::string(v) == "1";
}

// The variable's positive count, else `fallback` (unset, empty, zero, negative or not a number).
inline int switch_count(const char* name, int fallback) {
  const char* v = std::getenv(name);
  const int n = v && *v ? std::atoi(v) : 0;
  return n > 0 ? n : fallback;
}

// "0" = 0 (the switch off), a positive count = that count, else `fallback`: the thresholds whose 0
// means "never" (MEMRA_CUDA_LINEAR_GEMM, MEMRA_CUDA_LINEAR_ROWS, MEMRA_CUDA_LINEAR_PER_ROW).
inline int switch_zero_or_count(const char* name, int fallback) {
  return switch_on(name) ? switch_count(name, fallback) : 0;
}

// The variable's value when its text is exactly one of `choices` written in decimal ("4" of
// {0, 4, 8}), else `fallback` (unset, empty, another number, "04", not a number): the switches that
// name a form (MEMRA_CUDA_LINEAR_TILED, MEMRA_CUDA_ATTN_CLUSTER, MEMRA_CUDA_MOE_WIDE, …).
inline int switch_choice(const char* name, std::initializer_list<int> choices, int fallback) {
  const char* v = std::getenv(name);
  if (!v) return fallback;
  for (int c : choices)
    if (std::to_string(c) == v) return c;
  return fallback;
}

}  // namespace memra::cuda
