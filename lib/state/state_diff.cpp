// State file comparison: hashes decide equality of verified classes; differing ones are scanned
// element by element (bit patterns) for the first difference and the ULP spread.
#include "state/state_diff.h"

#include <cmath>
#include <cstring>
#include <map>

#include "core/error.h"

namespace memra {

namespace {

int64_t ordered(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return (bits & 0x80000000u) ? -static_cast<int64_t>(bits & 0x7fffffffu) - 1 : static_cast<int64_t>(bits);
}

std::vector<int64_t> unflatten(uint64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = static_cast<int64_t>(flat % static_cast<uint64_t>(shape[k]));
    flat /= static_cast<uint64_t>(shape[k]);
  }
  return idx;
}

void compare_values(const StateClassView& a, const StateClassView& b, ClassDifference* d) {
  if (a.dtype != DType::kF32) {  // extensions: compare bytes
    for (size_t i = 0; i < a.nbytes; ++i) {
      if (a.data[i] != b.data[i]) {
        if (d->differing == 0) d->first_flat = i;
        ++d->differing;
      }
    }
    return;
  }
  for (uint64_t i = 0; i < a.numel; ++i) {
    uint32_t ba, bb;
    std::memcpy(&ba, a.data + 4 * i, 4);
    std::memcpy(&bb, b.data + 4 * i, 4);
    if (ba == bb) continue;
    float fa, fb;
    std::memcpy(&fa, &ba, 4);
    std::memcpy(&fb, &bb, 4);
    const bool known = !std::isnan(fa) && !std::isnan(fb);
    const uint64_t u = known ? ulp_distance(fa, fb) : 0;
    if (d->differing == 0) {
      d->first_flat = i;
      d->first_index = unflatten(i, a.shape);
      d->value_a = fa;
      d->value_b = fb;
      d->ulps_known = known;
      d->ulps = u;
    }
    ++d->differing;
    if (known && u > d->max_ulps) d->max_ulps = u;
  }
}

}  // namespace

uint64_t ulp_distance(float a, float b) {
  const int64_t x = ordered(a), y = ordered(b);
  return static_cast<uint64_t>(x > y ? x - y : y - x);
}

StateDiff diff_states(const StateFile& a, const StateFile& b) {
  if (!a.payload_verified() || !b.payload_verified()) throw Error("state files must be verified before they are compared");
  StateDiff out;
  auto meta = [&](const char* key, bool identity) {
    const std::string va = a.metadata().at(key), vb = b.metadata().at(key);
    if (va != vb) (identity ? out.identity : out.notes).push_back(std::string(key) + ": " + va + " vs " + vb);
  };
  meta("position", true);
  meta("model_fingerprint", true);
  meta("capacity", false);
  meta("precision_class", false);
  meta("writer", false);
  meta("format_version", false);

  std::map<std::string, const StateClassView*> in_b;
  for (const auto& c : b.classes()) in_b[c.name] = &c;
  for (const auto& ca : a.classes()) {
    auto it = in_b.find(ca.name);
    ClassDifference d;
    d.name = ca.name;
    d.shape_a = ca.shape;
    if (it == in_b.end()) {
      d.kind = "only_in_a";
      out.classes.push_back(std::move(d));
      continue;
    }
    const StateClassView& cb = *it->second;
    in_b.erase(it);
    d.shape_b = cb.shape;
    if (ca.dtype != cb.dtype) {
      d.kind = "dtype";
    } else if (ca.shape != cb.shape) {
      d.kind = "shape";
    } else if (ca.hash == cb.hash && ca.nbytes == cb.nbytes && std::memcmp(ca.data, cb.data, ca.nbytes) == 0) {
      ++out.identical_classes;
      continue;
    } else {
      d.kind = "values";
      compare_values(ca, cb, &d);
    }
    out.classes.push_back(std::move(d));
  }
  for (const auto& cb : b.classes()) {
    if (!in_b.count(cb.name)) continue;
    ClassDifference d;
    d.name = cb.name;
    d.kind = "only_in_b";
    d.shape_b = cb.shape;
    out.classes.push_back(std::move(d));
  }
  return out;
}

nlohmann::json StateDiff::to_json() const {
  nlohmann::json cls = nlohmann::json::array();
  for (const auto& d : classes) {
    nlohmann::json j = {{"name", d.name}, {"kind", d.kind}};
    if (!d.shape_a.empty() || d.kind != "only_in_b") j["shape_a"] = d.shape_a;
    if (!d.shape_b.empty() || d.kind != "only_in_a") j["shape_b"] = d.shape_b;
    if (d.kind == "values") {
      j["first_flat_index"] = d.first_flat;
      j["first_index"] = d.first_index;
      j["differing_elements"] = d.differing;
      if (!d.first_index.empty()) {
        // Exact values as printed by %.9g (JSON has no NaN/inf).
        char buf[2][40];
        std::snprintf(buf[0], sizeof buf[0], "%.9g", d.value_a);
        std::snprintf(buf[1], sizeof buf[1], "%.9g", d.value_b);
        j["value_a"] = buf[0];
        j["value_b"] = buf[1];
        j["ulps"] = d.ulps_known ? nlohmann::json(d.ulps) : nlohmann::json(nullptr);
        j["max_ulps"] = d.max_ulps;
      }
    }
    cls.push_back(std::move(j));
  }
  return {{"identical", identical()},
          {"identity_differences", identity},
          {"notes", notes},
          {"identical_classes", identical_classes},
          {"differing_classes", cls}};
}

}  // namespace memra
