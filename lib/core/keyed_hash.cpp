// Keyed BLAKE2b-256 over libsodium (Debian libsodium-dev): a maintained, audited implementation
// rather than a hand-rolled MAC.
#include "core/keyed_hash.h"

#include <sodium.h>

#include <cctype>
#include <cstring>

#include "core/error.h"
#include "core/file_io.h"

namespace memra {

static_assert(sizeof(crypto_generichash_state) <= 384, "KeyedHasher::state_ is too small");
static_assert(crypto_generichash_KEYBYTES == 32, "AuthKey holds a 32-byte key");

namespace {

void init_sodium() {
  static const int ok = sodium_init();
  if (ok < 0) throw Error("cannot initialise libsodium");
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

AuthKey AuthKey::load(const std::string& path) {
  const std::string hint = "a key file holds 32 random bytes (head -c 32 /dev/urandom > FILE) or 64 hex digits";
  if (path == "-") throw Error("--key cannot be stdin", hint);
  std::string text = read_text_file(path, 4096);
  AuthKey key;
  if (text.size() == 32) {
    std::memcpy(key.bytes.data(), text.data(), 32);
    return key;
  }
  size_t b = 0, e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  if (e - b == 64) {
    bool ok = true;
    for (size_t i = 0; i < 32 && ok; ++i) {
      const int hi = hex_value(text[b + 2 * i]), lo = hex_value(text[b + 2 * i + 1]);
      ok = hi >= 0 && lo >= 0;
      key.bytes[i] = static_cast<uint8_t>(hi * 16 + lo);
    }
    if (ok) return key;
  }
  throw Error("key file " + path + " is not 32 bytes or 64 hex digits (" + std::to_string(text.size()) + " bytes)", hint);
}

KeyedHasher::KeyedHasher(const AuthKey& key) {
  init_sodium();
  crypto_generichash_init(reinterpret_cast<crypto_generichash_state*>(state_), key.bytes.data(), key.bytes.size(), 32);
}

KeyedHasher::~KeyedHasher() { sodium_memzero(state_, sizeof state_); }

void KeyedHasher::update(const void* data, size_t size) {
  crypto_generichash_update(reinterpret_cast<crypto_generichash_state*>(state_), static_cast<const unsigned char*>(data),
                            size);
}

void KeyedHasher::update_u64(uint64_t value) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(value >> (8 * i));
  update(b, 8);
}

std::string KeyedHasher::hex_digest() {
  unsigned char out[32];
  crypto_generichash_final(reinterpret_cast<crypto_generichash_state*>(state_), out, sizeof out);
  char hex[65];
  sodium_bin2hex(hex, sizeof hex, out, sizeof out);
  return hex;
}

bool tags_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace memra
