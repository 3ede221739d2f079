// A state class: one live tensor of a decode state on the host, by stable name (e.g.
// `layers.3.csa.cmp`), with its dtype. It is the unit that snapshots, state files, hashes and gates
// compare. Values are little-endian, row-major, in position order (a window oldest first).
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "format/safetensors.h"  // DType

namespace memra {

// Names, dtypes and shapes only: what a component holds at a position.
struct ClassLayout {
  std::string name;
  DType dtype = DType::kF32;  // F32, BF16, I32 or I64
  std::vector<int64_t> shape;

  uint64_t numel() const;  // Error when the product overflows
  size_t nbytes() const;   // Error when numel × dtype size overflows
};

struct CacheClass : ClassLayout {
  std::vector<uint8_t> bytes;  // nbytes()

  CacheClass() = default;
  CacheClass(ClassLayout layout, std::vector<uint8_t> data) : ClassLayout(std::move(layout)), bytes(std::move(data)) {}
  // An F32 class from values (the trunk's classes on every realization that stores f32).
  static CacheClass f32(std::string name, std::vector<int64_t> shape, std::span<const float> values);

  // Views of the values; the dtype must match (throws Error otherwise).
  std::span<const float> f32() const;
  std::span<float> f32_mut();
  std::vector<float> f32_copy() const { auto v = f32(); return {v.begin(), v.end()}; }
};

bool is_supported_class_dtype(DType dtype);  // F32, BF16, I32, I64

// Two class lists agree in names, dtypes, shapes and bytes.
bool classes_bit_equal(const std::vector<CacheClass>& a, const std::vector<CacheClass>& b);

}  // namespace memra
