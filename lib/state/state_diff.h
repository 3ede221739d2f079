// Class-by-class comparison of two verified state files: which classes differ and, for each, the
// first differing element (flat and multi-index, both values, ULP distance), how many elements
// differ and the largest ULP distance. Position and model fingerprint are part of identity;
// capacity, precision class and writer differences are reported as notes only.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "state/state_file.h"

namespace memra {

struct ClassDifference {
  std::string name;
  std::string kind;  // "values" | "shape" | "dtype" | "only_in_a" | "only_in_b"
  std::vector<int64_t> shape_a, shape_b;
  // kind == "values":
  uint64_t first_flat = 0;           // first differing element (elements for F32, bytes otherwise)
  std::vector<int64_t> first_index;  // its multi-index (F32)
  float value_a = 0, value_b = 0;
  bool ulps_known = false;  // false when a value is NaN or the class is not F32
  uint64_t ulps = 0;        // ULP distance of the first difference
  uint64_t differing = 0;   // elements that differ (by bits)
  uint64_t max_ulps = 0;    // over differing non-NaN elements
};

struct StateDiff {
  std::vector<std::string> identity;  // differing position / model fingerprint (make the states different)
  std::vector<std::string> notes;     // differing capacity / precision class / writer / version (informational)
  std::vector<ClassDifference> classes;
  size_t identical_classes = 0;
  bool identical() const { return identity.empty() && classes.empty(); }
  nlohmann::json to_json() const;
};

// ULP distance between two finite-or-infinite floats (ordered-integer distance; +0 and -0 are 1 apart).
uint64_t ulp_distance(float a, float b);

// Both files must be fully verified.
StateDiff diff_states(const StateFile& a, const StateFile& b);

}  // namespace memra
