// A tensor shape as error messages and reports print it: "[2, 64, 128]" ("[]" for a scalar).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace memra {

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace memra
