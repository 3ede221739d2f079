// Checked size arithmetic: every count × width product and every sum of counts that sizes a buffer
// or a file goes through these, so an overflow is an Error naming what was being sized, never a
// wrapped value that allocates too little and is then written past (issue 9: --capacity 2^62 gave
// buffers for ~96 tokens and a heap overwrite).
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

#include "core/error.h"

namespace memra {

[[noreturn]] inline void size_overflow(const std::string& what) {
  throw Error(what + " is too large (the size does not fit in 64 bits)",
              "use smaller counts (a capacity, token count or shape this large cannot be allocated)");
}

// The non-throwing forms, for parsers that word their own message: false on overflow.
inline bool mul_fits(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool add_fits(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

// a · b for non-negative a, b; Error when either is negative or the product overflows.
inline int64_t mul_checked(int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (a < 0 || b < 0) throw Error(what + " has a negative factor (" + std::to_string(a) + " x " + std::to_string(b) + ")");
  if (__builtin_mul_overflow(a, b, &r)) size_overflow(what);
  return r;
}
inline uint64_t mul_checked(uint64_t a, uint64_t b, const std::string& what) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) size_overflow(what);
  return r;
}

// a + b for non-negative a, b.
inline int64_t add_checked(int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (a < 0 || b < 0) throw Error(what + " has a negative term (" + std::to_string(a) + " + " + std::to_string(b) + ")");
  if (__builtin_add_overflow(a, b, &r)) size_overflow(what);
  return r;
}
inline uint64_t add_checked(uint64_t a, uint64_t b, const std::string& what) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) size_overflow(what);
  return r;
}

// The element count of a shape (every dimension ≥ 0).
inline int64_t product_checked(std::initializer_list<int64_t> dims, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : dims) n = mul_checked(n, d, what);
  return n;
}

// A count as a size_t element count, also checked against what one allocation of `elem_bytes`
// elements can address (so `count * elem_bytes` below cannot wrap).
inline size_t elements_checked(int64_t count, size_t elem_bytes, const std::string& what) {
  if (count < 0) throw Error(what + " has a negative size (" + std::to_string(count) + ")");
  const uint64_t max = std::numeric_limits<int64_t>::max() / (elem_bytes ? elem_bytes : 1);
  if (static_cast<uint64_t>(count) > max) size_overflow(what);
  return static_cast<size_t>(count);
}

}  // namespace memra
