// XXH3-128 wrapper: known answers and streaming == one-shot.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/hash.h"
#include "core/hash_impl.h"

using memra::Hash128;

TEST_CASE("xxh3-128 known answers", "[cpu][hash]") {
  // Reference values from xxhsum -H2 (XXH128) of "" and "abc".
  CHECK(memra::xxh3_128("", 0).hex() == "99aa06d3014798d86001c324468d497f");
  CHECK(memra::xxh3_128("abc", 3).hex() == "06b05ab6733a618578af5f94892f3950");
}

TEST_CASE("streaming hash equals one-shot", "[cpu][hash]") {
  std::string data;
  for (int i = 0; i < 10000; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  memra::Hasher h;
  h.update(data.data(), 1234);
  h.update(data.data() + 1234, data.size() - 1234);
  CHECK(h.digest() == memra::xxh3_128(data.data(), data.size()));
}

TEST_CASE("hex round trip and malformed hex", "[cpu][hash]") {
  Hash128 a = memra::xxh3_128("memra", 5), b;
  REQUIRE(Hash128::parse_hex(a.hex(), &b));
  CHECK(a == b);
  CHECK_FALSE(Hash128::parse_hex("xyz", &b));
  CHECK_FALSE(Hash128::parse_hex(std::string(32, 'g'), &b));
}

TEST_CASE("the AVX2 and portable builds of XXH3 give the same hashes", "[cpu][hash]") {
  if (std::string(memra::hash_impl::active()) != "avx2") {
    WARN("skipped: this CPU has no AVX2, only the portable build runs (" << memra::hash_impl::active() << ")");
    return;
  }
  std::mt19937_64 rng(std::random_device{}());
  std::vector<unsigned char> data(600000 + 64);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  struct ForcePortable {  // restores the AVX2 build even when a CHECK throws
    ~ForcePortable() { memra::hash_impl::force_portable(false); }
  } restore;
  for (int round = 0; round < 40; ++round) {
    // Lengths around the stripe (64), block (1024) and internal buffer (256) sizes and long inputs,
    // from unaligned starts, streamed in random pieces.
    const size_t len = round < 20 ? rng() % 2100 : rng() % 600000;
    const unsigned char* p = data.data() + rng() % 64;
    std::vector<size_t> cuts;
    for (size_t at = 0; at < len;) {
      at = std::min(len, at + 1 + rng() % 5000);
      cuts.push_back(at);
    }
    Hash128 oneshot[2], streamed[2];
    for (int portable = 0; portable < 2; ++portable) {
      memra::hash_impl::force_portable(portable == 1);
      oneshot[portable] = memra::xxh3_128(p, len);
      memra::Hasher h;
      size_t from = 0;
      for (size_t to : cuts) h.update(p + from, to - from), from = to;
      streamed[portable] = h.digest();
    }
    INFO("length " << len << ", " << cuts.size() << " pieces");
    CHECK(oneshot[0] == oneshot[1]);
    CHECK(streamed[0] == streamed[1]);
    CHECK(streamed[0] == oneshot[0]);
  }
}
