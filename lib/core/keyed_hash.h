// Keyed BLAKE2b-256 (libsodium crypto_generichash with a 32-byte key): the authenticity check of
// state files. XXH3 hashes catch accidents; anyone can recompute them after changing a file. A
// keyed hash can only be recomputed by whoever holds the key, so a file that matches its keyed tag
// was written by a key holder and not modified since.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace memra {

struct AuthKey {
  std::array<uint8_t, 32> bytes{};
  // A key file: exactly 32 raw bytes, or 64 hex digits (surrounding whitespace allowed). Anything
  // else is an Error naming the file. E.g. `head -c 32 /dev/urandom > state.key`.
  static AuthKey load(const std::string& path);
};

// Streaming keyed BLAKE2b-256.
class KeyedHasher {
 public:
  explicit KeyedHasher(const AuthKey& key);
  ~KeyedHasher();
  KeyedHasher(const KeyedHasher&) = delete;
  KeyedHasher& operator=(const KeyedHasher&) = delete;
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  void update_u64(uint64_t value);  // little-endian
  std::string hex_digest();         // 64 lower-case hex digits; ends the stream

 private:
  alignas(64) unsigned char state_[384];  // crypto_generichash_state (checked in the .cpp)
};

// Constant-time equality of two tags (no early exit that would time a forger's guesses).
bool tags_equal(std::string_view a, std::string_view b);

}  // namespace memra
