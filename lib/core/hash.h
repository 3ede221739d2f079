// XXH3-128 hashing: the one hash kind memra writes (per tensor, per class, whole model/state).
// Printed as 32 lower-case hex digits, high 64 bits first (xxhsum's canonical big-endian form).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace memra {

struct Hash128 {
  uint64_t high = 0;
  uint64_t low = 0;
  bool operator==(const Hash128&) const = default;
  std::string hex() const;
  static bool parse_hex(std::string_view text, Hash128* out);  // false on malformed input
};

Hash128 xxh3_128(const void* data, size_t size);

// XXH3's default secret (kXxh3SecretBytes): the key every memra hash uses, for a hash made away from
// this code (the CUDA state classes, hashed on their device: kernels/class_hash.cu).
inline constexpr size_t kXxh3SecretBytes = 192;
const uint8_t* xxh3_default_secret();

// Streaming XXH3-128; equal to the one-shot hash of the concatenated updates.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  void update_u64(uint64_t value);  // little-endian, for lengths and counts
  Hash128 digest() const;

 private:
  void* state_;
};

}  // namespace memra
