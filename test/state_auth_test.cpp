// Integrity is not authenticity: a tampered state file whose XXH3 hashes were recomputed (what the
// error messages' expected hashes make easy) passes every XXH3 check, and is refused once a key is
// given; a file without the keyed tag, or tagged with another key, is refused too.
#include <catch2/catch.hpp>

#include <cstring>

#include "core/error.h"
#include "core/file_io.h"
#include "core/keyed_hash.h"
#include "loader_test_util.h"
#include "state/class_hash.h"
#include "state/snapshot.h"
#include "state/state_file.h"
#include "state_test_util.h"

using namespace memra;
using loader_test::require_error;
using loader_test::TempDir;
using loader_test::write_bytes;

namespace {

AuthKey key_of(uint8_t fill) {
  AuthKey k;
  k.bytes.fill(fill);
  return k;
}

std::string signed_state(const AuthKey* key) {
  const ModelConfig cfg = test::synthetic_config();
  const DecodeState s = test::random_state(cfg, 21, 30, 7);
  StateWriteOptions o;
  o.key = key;
  return serialize_state_file(test::snapshot_of(cfg, s), {std::string(32, 'b'), "cpu-f32-exact"}, o);
}

StateFile parse(const std::string& bytes, StateCheck check = StateCheck::kFull) {
  return StateFile::parse(InputBytes::from_buffer("f.st", std::vector<uint8_t>(bytes.begin(), bytes.end())), check);
}

void replace_once(std::string& s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  REQUIRE(from.size() == to.size());
  s.replace(at, from.size(), to);
}

// The forger's recipe: change a value, then recompute the class hash, the state hash and the
// metadata hash and write them over the old ones (same lengths, so the header stays canonical).
std::string forge(std::string bytes) {
  StateFile f = parse(bytes);
  uint64_t payload = 0;
  for (const auto& k : f.classes()) payload += k.nbytes;
  const size_t header = f.file_bytes() - payload;  // where the data section starts
  std::string forged = bytes;
  forged[header] ^= 0x01;  // the first byte of the first class's first value
  std::vector<Hash128> hashes;
  for (const auto& k : f.classes()) {
    const size_t off = header + static_cast<size_t>(k.data - f.classes()[0].data);
    hashes.push_back(class_hash({k.name, "F32", &k.shape, forged.data() + off, k.nbytes}));
  }
  std::map<std::string, std::string> md = f.metadata();
  replace_once(forged, "\"" + f.classes()[0].hash.hex() + "\"", "\"" + hashes[0].hex() + "\"");
  md["hash." + f.classes()[0].name] = hashes[0].hex();
  replace_once(forged, "\"" + f.state_hash().hex() + "\"", "\"" + state_hash(hashes).hex() + "\"");
  md["hash.state"] = state_hash(hashes).hex();
  replace_once(forged, "\"" + f.metadata().at(kMetadataHashKey) + "\"", "\"" + metadata_hash(md).hex() + "\"");
  return forged;
}

}  // namespace

TEST_CASE("keyed tag: a key holder's file verifies; another key, no tag or a forged file are refused", "[cpu][hardening]") {
  const AuthKey key = key_of(7), other = key_of(8);
  const std::string tagged = signed_state(&key);
  StateFile f = parse(tagged);
  CHECK(f.has_auth_tag());
  CHECK(f.metadata().at(kAuthTagKey).size() == 64);
  CHECK_NOTHROW(f.verify_auth(key));
  require_error([&] { f.verify_auth(other); }, {"keyed tag mismatch"}, kExitNegative);

  SECTION("a file written without a key is refused when a key is given") {
    StateFile plain = parse(signed_state(nullptr));
    CHECK_FALSE(plain.has_auth_tag());
    require_error([&] { plain.verify_auth(key); }, {"carries no keyed tag"}, kExitNegative);
  }
  SECTION("forged: tampered, then every XXH3 hash recomputed") {
    const std::string forged = forge(tagged);
    REQUIRE(forged != tagged);
    StateFile ff = parse(forged);  // every XXH3 check passes: this is what integrity cannot see
    CHECK(ff.payload_verified());
    require_error([&] { ff.verify_auth(key); }, {"keyed tag mismatch"}, kExitNegative);
    // The message never shows the tag the key would give (nothing to copy into the file).
    try {
      ff.verify_auth(key);
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find(f.metadata().at(kAuthTagKey)) == std::string::npos);
    }
  }
  SECTION("forged: the tag stripped (every hash recomputed) is a file without a tag") {
    StateFile stripped = parse(signed_state(nullptr));  // what stripping and re-hashing produces
    require_error([&] { stripped.verify_auth(key); }, {"carries no keyed tag"}, kExitNegative);
  }
  SECTION("the tag is checked for form when read") {
    std::string bad = tagged;
    std::map<std::string, std::string> md = f.metadata();
    replace_once(bad, md.at(kAuthTagKey), std::string(64, 'Z'));
    md[kAuthTagKey] = std::string(64, 'Z');
    replace_once(bad, md.at(kMetadataHashKey), metadata_hash(md).hex());  // consistent, but not a tag
    require_error([&] { parse(bad, StateCheck::kHeader); }, {kAuthTagKey, "64 lower-case hex"}, kExitNegative);
  }
  SECTION("the tag covers the header too: it differs between positions and keys") {
    CHECK(parse(signed_state(&other)).metadata().at(kAuthTagKey) != f.metadata().at(kAuthTagKey));
  }
}

TEST_CASE("keyed tag: the writer's streaming and in-memory paths give the same file", "[cpu][hardening]") {
  const AuthKey key = key_of(3);
  const ModelConfig cfg = test::synthetic_config();
  const HostSnapshot snap = test::snapshot_of(cfg, test::random_state(cfg, 40, 40, 9));
  StateWriteOptions o;
  o.key = &key;
  TempDir dir;
  write_state_file(dir.file("a.st"), snap, {std::string(32, 'b'), "cpu-f32-exact"}, o);
  CHECK(loader_test::read_bytes(dir.file("a.st")) == serialize_state_file(snap, {std::string(32, 'b'), "cpu-f32-exact"}, o));
  CHECK_NOTHROW(StateFile::open(dir.file("a.st")).verify_auth(key));
}

TEST_CASE("key files: 32 raw bytes or 64 hex digits, nothing else", "[cpu][hardening]") {
  TempDir dir;
  write_bytes(dir.file("raw"), std::string(32, '\x05'));
  CHECK(AuthKey::load(dir.file("raw")).bytes[31] == 5);
  write_bytes(dir.file("hex"), std::string(62, '0') + "ff\n");
  CHECK(AuthKey::load(dir.file("hex")).bytes[31] == 0xff);
  write_bytes(dir.file("short"), std::string(31, 'a'));
  require_error([&] { AuthKey::load(dir.file("short")); }, {"short", "not 32 bytes"});
  write_bytes(dir.file("badhex"), std::string(63, '0') + "g");
  require_error([&] { AuthKey::load(dir.file("badhex")); }, {"badhex"});
  require_error([] { AuthKey::load("-"); }, {"stdin"});
}
