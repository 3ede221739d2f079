// XXH3-128 through xxHash's header-only build, portable here and AVX2 in hash_avx2.cpp (picked
// once per process from the CPU: same hashes, twice the speed on long inputs).
#include "core/hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <atomic>
#include <cstdio>

#include "core/hash_impl.h"

namespace memra {

namespace hash_impl {
namespace {
std::atomic<bool> portable_forced{false};
bool cpu_has_avx2() {
#if MEMRA_HASH_HAS_AVX2
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}
bool use_avx2() { return cpu_has_avx2() && !portable_forced.load(std::memory_order_relaxed); }
}  // namespace

const char* active() { return use_avx2() ? "avx2" : "portable"; }
void force_portable(bool on) { portable_forced.store(on, std::memory_order_relaxed); }
}  // namespace hash_impl

const uint8_t* xxh3_default_secret() {
  static_assert(sizeof(XXH3_kSecret) == kXxh3SecretBytes);
  return XXH3_kSecret;
}

std::string Hash128::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(high),
                static_cast<unsigned long long>(low));
  return buf;
}

bool Hash128::parse_hex(std::string_view text, Hash128* out) {
  if (text.size() != 32) return false;
  uint64_t parts[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    char c = text[i];
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else return false;
    parts[i / 16] = (parts[i / 16] << 4) | static_cast<uint64_t>(v);
  }
  out->high = parts[0];
  out->low = parts[1];
  return true;
}

Hash128 xxh3_128(const void* data, size_t size) {
#if MEMRA_HASH_HAS_AVX2
  if (hash_impl::use_avx2()) {
    Hash128 out;
    hash_impl::avx2_oneshot(data, size, &out.high, &out.low);
    return out;
  }
#endif
  XXH128_hash_t h = XXH3_128bits(data, size);
  return {h.high64, h.low64};
}

Hasher::Hasher() : state_(XXH3_createState()) { XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_)); }
Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }
void Hasher::update(const void* data, size_t size) {
#if MEMRA_HASH_HAS_AVX2
  if (hash_impl::use_avx2()) return hash_impl::avx2_update(state_, data, size);
#endif
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), data, size);
}
void Hasher::update_u64(uint64_t value) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(value >> (8 * i));
  update(b, 8);
}
Hash128 Hasher::digest() const {
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_));
  return {h.high64, h.low64};
}

}  // namespace memra
