// Bitwise class comparison for gates and `snapshot --diff`-style evidence.
#include "gate/class_diff.h"

#include <cstdio>
#include <cstring>
#include <map>

namespace memra {

bool bits_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

namespace {

// Element i of a class as a double (F32/BF16 values, I32/I64 ids) for the evidence line.
double element(const CacheClass& c, uint64_t i) {
  const uint8_t* p = c.bytes.data() + i * dtype_size(c.dtype);
  switch (c.dtype) {
    case DType::kF32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::kBF16: { uint32_t bits = static_cast<uint32_t>(p[0] | (p[1] << 8)) << 16; float v; std::memcpy(&v, &bits, 4); return v; }
    case DType::kI32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::kI64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    default: return 0;
  }
}

}  // namespace

std::vector<ClassDiff> diff_classes(const std::vector<CacheClass>& a, const std::vector<CacheClass>& b,
                                    std::string* first_mismatch) {
  std::map<std::string, const CacheClass*> bm;
  for (const auto& c : b) bm[c.name] = &c;
  std::vector<ClassDiff> out;
  std::string first;
  for (const auto& ca : a) {
    ClassDiff d;
    d.name = ca.name;
    d.shape = ca.shape;
    d.elements = static_cast<int64_t>(ca.numel());
    auto it = bm.find(ca.name);
    if (it == bm.end() || it->second->shape != ca.shape || it->second->dtype != ca.dtype ||
        it->second->bytes.size() != ca.bytes.size()) {
      d.differing = d.elements;
      if (first.empty()) first = ca.name;
    } else {
      const CacheClass& cb = *it->second;
      const size_t width = dtype_size(ca.dtype);
      for (uint64_t i = 0; i < ca.numel(); ++i) {
        if (std::memcmp(ca.bytes.data() + i * width, cb.bytes.data() + i * width, width) == 0) continue;
        if (d.first_index < 0) {
          d.first_index = static_cast<int64_t>(i);
          d.first_a = element(ca, i);
          d.first_b = element(cb, i);
          if (ca.dtype == DType::kF32) d.first_ulp = ulp_distance(static_cast<float>(d.first_a), static_cast<float>(d.first_b));
        }
        ++d.differing;
      }
      if (d.differing && first.empty()) first = ca.name;
      bm.erase(it);
    }
    out.push_back(d);
  }
  for (const auto& [name, c] : bm) {  // only in b
    ClassDiff d;
    d.name = name;
    d.shape = c->shape;
    d.elements = static_cast<int64_t>(c->numel());
    d.differing = d.elements;
    if (first.empty()) first = name;
    out.push_back(d);
  }
  if (first_mismatch) *first_mismatch = first;
  return out;
}

std::string describe_first_difference(const std::vector<ClassDiff>& diffs, const std::string& first) {
  for (const auto& d : diffs) {
    if (d.name != first) continue;
    if (d.first_index < 0) return "class " + d.name + " differs in presence or shape";
    char buf[256];
    std::snprintf(buf, sizeof buf, "class %s: %lld of %lld elements differ, first at index %lld (a=%.9g b=%.9g, %llu ulp)",
                  d.name.c_str(), static_cast<long long>(d.differing), static_cast<long long>(d.elements),
                  static_cast<long long>(d.first_index), d.first_a, d.first_b, static_cast<unsigned long long>(d.first_ulp));
    return buf;
  }
  return "";
}

}  // namespace memra
