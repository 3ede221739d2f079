// The in-process snapshot API (snapshot_state, restore_state, bytes()) and the
// layers built on it: verified file restore with a fake fingerprint, class diffs with ULP
// distances, state hash manifests.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "state/state_diff.h"
#include "state/state_file.h"
#include "state/state_manifest.h"
#include "state_test_util.h"

using namespace memra;
using memra::test::synthetic_config;

namespace {

const StateOrigin kOrigin{"00112233445566778899aabbccddeeff", "cpu-f32-exact"};

StateFile parse_bytes(const std::string& data) {
  const std::string path = std::filesystem::temp_directory_path() / ("memra_snapshot_test_" + std::to_string(::getpid()));
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
  }
  StateFile out = StateFile::open(path);
  std::filesystem::remove(path);
  return out;
}

}  // namespace

TEST_CASE("host snapshot: bytes() counts live values only", "[cpu][state]") {
  const ModelConfig cfg = synthetic_config();  // d 8, W 16, di 4, V 32
  DecodeState s = memra::test::random_state(cfg, 5, 1000, 1);
  HostSnapshot host = memra::test::snapshot_of(cfg, s);
  // pos 5: windows 4·[5,8]; per CSA layer (×2): cmp [1,8], pend 2·[1,16], prev 2·[4,8], idxk [1,4],
  // idx pend 2·[1,8], idx prev 2·[4,4]; HCA pend 2·[5,8]; logits [32].
  const size_t floats = 4 * 5 * 8 + 2 * (8 + 2 * 16 + 2 * 32 + 4 + 2 * 8 + 2 * 16) + 2 * 5 * 8 + 32;
  CHECK(host.bytes() == floats * 4);
  CHECK(host.capacity == 1000);
  SECTION("the capacity tail is not part of a snapshot: a huge capacity costs nothing") {
    DecodeState big = memra::test::random_state(cfg, 5, 100000, 1);
    CHECK(memra::test::snapshot_of(cfg, big).bytes() == host.bytes());
  }
}

TEST_CASE("verified file restore", "[cpu][state]") {
  const ModelConfig cfg = synthetic_config();
  DecodeState a = memra::test::random_state(cfg, 42, 50, 8);
  StateFile f = parse_bytes(serialize_state_file(memra::test::snapshot_of(cfg, a), kOrigin));
  const memra::test::HostStateBackend backend(cfg);
  SECTION("into a larger capacity, bit-identical") {
    auto b = restore_state_file(f, backend, kOrigin.model_fingerprint, 50 + 97);
    CHECK(b->capacity() == 147);
    CHECK(classes_bit_equal(cache_classes(cfg, a), b->export_classes()));
  }
  SECTION("into exactly the position") {
    CHECK(restore_state_file(f, backend, kOrigin.model_fingerprint, 42)->capacity() == 42);
  }
  SECTION("capacity below the position: exit 1") {
    try {
      restore_state_file(f, backend, kOrigin.model_fingerprint, 41);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitNegative);
      CHECK_THAT(e.what(), Catch::Contains("smaller than the state's position 42"));
    }
  }
  SECTION("another fingerprint: exit 1") {
    try {
      restore_state_file(f, backend, "ffffffffffffffffffffffffffffffff", 60);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitNegative);
      CHECK_THAT(e.what(), Catch::Contains("belongs to model"));
    }
  }
  SECTION("same fingerprint but other geometry: exit 1 naming the class") {
    try {
      const ModelConfig other = synthetic_config(8, 20);
      restore_state_file(f, memra::test::HostStateBackend(other), kOrigin.model_fingerprint, 60);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitNegative);
      CHECK_THAT(e.what(), Catch::Contains("layers.0.window"));
    }
  }
}

TEST_CASE("ulp distance", "[cpu][state]") {
  CHECK(ulp_distance(1.0f, 1.0f) == 0);
  CHECK(ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)) == 1);
  CHECK(ulp_distance(-1.0f, std::nextafter(-1.0f, -2.0f)) == 1);
  CHECK(ulp_distance(0.0f, -0.0f) == 1);
  CHECK(ulp_distance(std::nextafter(0.0f, 1.0f), std::nextafter(0.0f, -1.0f)) == 3);
  CHECK(ulp_distance(1.0f, 2.0f) == (1u << 23));
}

TEST_CASE("state diff reports the first differing element of each class", "[cpu][state]") {
  const ModelConfig cfg = synthetic_config();
  DecodeState a = memra::test::random_state(cfg, 30, 40, 2);
  DecodeState b = a;
  // layers.1.csa.cmp is [7, 8]: change row 3, column 5 by 2 ulp and one more element later.
  float& v = b.layers[1].compressor.entries[3 * 8 + 5];
  const float before = v;
  v = std::nextafter(std::nextafter(v, INFINITY), INFINITY);
  b.layers[1].compressor.entries[6 * 8 + 1] += 1.0f;
  StateFile fa = parse_bytes(serialize_state_file(memra::test::snapshot_of(cfg, a), kOrigin));
  StateFile fb = parse_bytes(serialize_state_file(memra::test::snapshot_of(cfg, b), kOrigin));
  StateDiff d = diff_states(fa, fb);
  CHECK_FALSE(d.identical());
  REQUIRE(d.classes.size() == 1);
  const ClassDifference& c = d.classes[0];
  CHECK(c.name == "layers.1.csa.cmp");
  CHECK(c.kind == "values");
  CHECK(c.first_flat == 3 * 8 + 5);
  CHECK(c.first_index == std::vector<int64_t>{3, 5});
  CHECK(c.value_a == before);
  CHECK(c.ulps == 2);
  CHECK(c.differing == 2);
  CHECK(c.max_ulps >= 2);
  CHECK(d.identical_classes == fa.classes().size() - 1);
  CHECK(d.to_json()["differing_classes"][0]["first_index"] == nlohmann::json({3, 5}));

  SECTION("identical states, other capacity: identical with a note") {
    const memra::test::HostStateBackend backend(cfg);
    auto c2 = restore_state(backend, memra::test::snapshot_of(cfg, a), 99);
    StateDiff same = diff_states(fa, parse_bytes(serialize_state_file(snapshot_state(*c2), kOrigin)));
    CHECK(same.identical());
    REQUIRE(same.notes.size() == 1);
    CHECK_THAT(same.notes[0], Catch::Contains("capacity"));
  }
  SECTION("other positions: different, with class sets that differ") {
    DecodeState later = memra::test::random_state(cfg, 31, 40, 2);
    StateDiff other = diff_states(fa, parse_bytes(serialize_state_file(memra::test::snapshot_of(cfg, later), kOrigin)));
    CHECK_FALSE(other.identical());
    REQUIRE_FALSE(other.identity.empty());
    CHECK_THAT(other.identity[0], Catch::Contains("position"));
  }
}

TEST_CASE("state hash manifests", "[cpu][state]") {
  const ModelConfig cfg = synthetic_config();
  StateFile f = parse_bytes(serialize_state_file(memra::test::snapshot_of(cfg, memra::test::random_state(cfg, 9, 20, 4)), kOrigin));
  const std::string text = state_manifest_text(f);
  SECTION("one line per class, then the state line") {
    CHECK(text.rfind("xxh3-128  " + f.classes()[0].hash.hex() + "  layers.0.window\n", 0) == 0);
    CHECK_THAT(text, Catch::EndsWith("xxh3-128  " + f.state_hash().hex() + "  state\n"));
  }
  SECTION("checks against itself") { CHECK(check_state_manifest(f, parse_manifest(text, "m")).passed()); }
  SECTION("a changed hash is a MISMATCH, a dropped line UNLISTED, an extra line MISSING") {
    std::string t = text;
    const size_t at = t.find(f.classes()[1].hash.hex());
    t[at] = t[at] == '0' ? '1' : '0';
    ManifestCheck c = check_state_manifest(f, parse_manifest(t + "xxh3-128  " + std::string(32, 'a') + "  layers.9.window\n", "m"));
    CHECK(c.mismatch == 1);
    CHECK(c.missing == 1);
    CHECK_FALSE(c.passed());
    std::string dropped = text.substr(text.find('\n') + 1);
    CHECK(check_state_manifest(f, parse_manifest(dropped, "m")).unlisted == 1);
  }
  SECTION("a malformed manifest is a usage error (exit 2)") {
    try {
      parse_manifest("xxh3-128  nothex  state\n", "m");
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitError);
    }
  }
}
