// State classes: typed host views and comparisons (state_class.h).
#include "engine/state_class.h"

#include "core/checked.h"
#include "core/error.h"

namespace memra {

uint64_t ClassLayout::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("class " + name + " has a negative dimension");
    n = mul_checked(n, static_cast<uint64_t>(d), "class " + name);
  }
  return n;
}

size_t ClassLayout::nbytes() const {
  return mul_checked(numel(), static_cast<uint64_t>(dtype_size(dtype)), "class " + name);
}

CacheClass CacheClass::f32(std::string name, std::vector<int64_t> shape, std::span<const float> values) {
  CacheClass c;
  c.name = std::move(name);
  c.dtype = DType::kF32;
  c.shape = std::move(shape);
  if (values.size() != c.numel())
    throw Error("class " + c.name + " gets " + std::to_string(values.size()) + " values for " +
                std::to_string(c.numel()) + " elements");
  c.bytes.resize(values.size_bytes());
  if (!values.empty()) std::memcpy(c.bytes.data(), values.data(), values.size_bytes());
  return c;
}

std::span<const float> CacheClass::f32() const {
  if (dtype != DType::kF32) throw Error("class " + name + " is " + dtype_name(dtype) + ", not F32");
  return {reinterpret_cast<const float*>(bytes.data()), bytes.size() / sizeof(float)};
}

std::span<float> CacheClass::f32_mut() {
  if (dtype != DType::kF32) throw Error("class " + name + " is " + dtype_name(dtype) + ", not F32");
  return {reinterpret_cast<float*>(bytes.data()), bytes.size() / sizeof(float)};
}

bool is_supported_class_dtype(DType d) {
  return d == DType::kF32 || d == DType::kBF16 || d == DType::kI32 || d == DType::kI64;
}

bool classes_bit_equal(const std::vector<CacheClass>& a, const std::vector<CacheClass>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].dtype != b[i].dtype || a[i].shape != b[i].shape || a[i].bytes != b[i].bytes)
      return false;
  return true;
}

}  // namespace memra
