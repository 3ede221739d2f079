// Class-by-class comparison of two sets of cache classes (any dtype), by bits.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/state_class.h"
#include "gate/gate.h"
#include "state/state_diff.h"  // ulp_distance

namespace memra {

// One ClassDiff per class of `a` (and a note for classes only in `b`); `first_mismatch` receives the
// first class that differs in name, shape or bits ("" when identical).
std::vector<ClassDiff> diff_classes(const std::vector<CacheClass>& a, const std::vector<CacheClass>& b,
                                    std::string* first_mismatch);

// "layers.1.csa.cmp index 37 a=0.1 b=0.2 ulp=12" for the first differing class, or a name/shape note.
std::string describe_first_difference(const std::vector<ClassDiff>& diffs, const std::string& first_mismatch);

bool bits_equal(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace memra
