// XXH3-128 wrapper: known answers and streaming == one-shot.
#include <catch2/catch.hpp>

#include <string>

#include "core/hash.h"

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
