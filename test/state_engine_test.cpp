// State files against the real CPU engine on the tiny-a fixture: a state restored into a larger
// capacity continues bit-identically to an uninterrupted run; chunk widths give identical state
// files; different tokens are found by the diff; another model's state is refused.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "engine/cpu_backends.h"
#include "engine/engine.h"
#include "format/safetensors.h"
#include "model/model.h"
#include "state/state_diff.h"
#include "state/state_file.h"
#include "state_test_util.h"

using namespace memra;

namespace {

std::string fixture(const std::string& name) {
  return (std::filesystem::path(MEMRA_SOURCE_DIR) / "test" / "fixtures" / name).string();
}

const Model& tiny_a() {
  static const Model m = Model::load(fixture("tiny-a"));
  return m;
}

std::vector<int32_t> fixture_tokens(const std::string& name) {
  SafetensorsFile f = SafetensorsFile::open(fixture(name) + "/reference.safetensors");
  std::vector<int32_t> out;
  for (int64_t t : tensor_to_i64(f.get("tokens"))) out.push_back(static_cast<int32_t>(t));
  return out;
}

StateOrigin origin_of(const Model& m, const Backend& b) { return {m.fingerprint().hex(), b.precision_class()}; }

StateFile parse_bytes(const std::string& data) {
  const std::string path = std::filesystem::temp_directory_path() / ("memra_state_engine_" + std::to_string(::getpid()));
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
  }
  StateFile out = StateFile::open(path);
  std::filesystem::remove(path);
  return out;
}

std::string state_bytes(const Model& m, const Backend& b, const State& s) {
  return serialize_state_file(snapshot_state(s), origin_of(m, b));
}

}  // namespace

TEST_CASE("restore into a larger capacity continues bit-identically", "[cpu][state][engine]") {
  const Model& model = tiny_a();
  auto backend = make_cpu_backend(model);
  const std::vector<int32_t> tokens = fixture_tokens("tiny-a");
  REQUIRE(tokens.size() >= 116);
  const std::span<const int32_t> prompt(tokens.data(), 66), next(tokens.data() + 66, 50);

  // Uninterrupted: 116 tokens in one run.
  auto whole = backend->new_state(116);
  std::vector<float> whole_logits;
  prefill(*backend, *whole, std::span<const int32_t>(tokens.data(), 116), 0, &whole_logits);

  // Interrupted: 66 tokens → state file A.
  auto a = backend->new_state(66);
  prefill(*backend, *a, prompt, 0, nullptr);
  const StateFile file = parse_bytes(state_bytes(model, *backend, *a));
  const int64_t V = model.config().vocab_size;

  for (int64_t capacity : {int64_t{66 + 97}, int64_t{116}}) {
    DYNAMIC_SECTION("capacity " << capacity) {
      auto b = restore_state_file(file, *backend, model.fingerprint().hex(), capacity);
      CHECK(b->capacity() == capacity);
      std::vector<float> logits;
      prefill(*backend, *b, next, 0, &logits);
      REQUIRE(logits.size() == static_cast<size_t>(50 * V));
      CHECK(std::memcmp(logits.data(), whole_logits.data() + 66 * V, logits.size() * sizeof(float)) == 0);
      CHECK(classes_bit_equal(b->export_classes(), whole->export_classes()));
      // And a greedy continuation from both agrees.
      auto w2 = backend->new_state(200);
      prefill(*backend, *w2, std::span<const int32_t>(tokens.data(), 116), 0, nullptr);
      if (capacity >= 116 + 5) {
        CHECK(generate_greedy(*backend, *b, 5) == generate_greedy(*backend, *w2, 5));
      }
    }
  }
  SECTION("the in-process snapshot round trips the same way") {
    HostSnapshot host = snapshot_state(*a);
    CHECK(host.bytes() > 0);
    auto b = restore_state(*backend, host, 66 + 97);
    std::vector<float> logits;
    prefill(*backend, *b, next, 7, &logits);
    CHECK(std::memcmp(logits.data(), whole_logits.data() + 66 * V, logits.size() * sizeof(float)) == 0);
  }
  SECTION("capacity below the position is refused") {
    try {
      restore_state_file(file, *backend, model.fingerprint().hex(), 65);
      FAIL("capacity 65 accepted for a state at 66");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitNegative);
    }
  }
  SECTION("another model's state is refused") {
    const Model other = Model::load(fixture("tiny-b"));
    try {
      restore_state_file(file, *make_cpu_backend(other), other.fingerprint().hex(), 200);
      FAIL("tiny-a state accepted for tiny-b");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitNegative);
      CHECK_THAT(e.what(), Catch::Contains("belongs to model"));
    }
  }
}

TEST_CASE("chunk widths give identical state files and other tokens differ", "[cpu][state][engine]") {
  const Model& model = tiny_a();
  auto backend = make_cpu_backend(model);
  const std::vector<int32_t> tokens = fixture_tokens("tiny-a");
  const std::span<const int32_t> prompt(tokens.data(), 66);
  std::string first;
  for (int64_t chunk : {0, 1, 5, 16, 66}) {
    auto s = backend->new_state(100);
    prefill(*backend, *s, prompt, chunk, nullptr);
    const std::string bytes = state_bytes(model, *backend, *s);
    if (first.empty()) first = bytes;
    else CHECK(bytes == first);
  }
  StateFile a = parse_bytes(first);
  SECTION("diff of identical states is empty") { CHECK(diff_states(a, parse_bytes(first)).identical()); }
  SECTION("one changed token makes a difference, found class by class") {
    std::vector<int32_t> changed(prompt.begin(), prompt.end());
    changed[60] = (changed[60] + 1) % static_cast<int32_t>(model.config().vocab_size);
    auto s = backend->new_state(100);
    prefill(*backend, *s, changed, 0, nullptr);
    StateDiff d = diff_states(a, parse_bytes(state_bytes(model, *backend, *s)));
    CHECK_FALSE(d.identical());
    REQUIRE_FALSE(d.classes.empty());
    CHECK(d.classes.front().kind == "values");
    CHECK(d.classes.front().differing > 0);
    // Layer 0's window holds position 60's kv: it must be among the differing classes.
    bool window0 = false;
    for (const auto& c : d.classes) window0 |= c.name == "layers.0.window";
    CHECK(window0);
  }
}

TEST_CASE("a state file written by memra 0.1.0 (format 1.0) still verifies and restores", "[cpu][state][golden]") {
  // test/data/state-v1.0-tiny-pos45.mst: `memra prefill models/tiny -o … --capacity 60` by memra 0.1.0
  // (commit 2390a1b, before state components) over the prompt 2 + (37 i mod 500), i < 45.
  const Model model = Model::load(std::string(MEMRA_FIXTURES) + "/tiny");
  auto backend = make_cpu_backend(model);
  StateFile file = StateFile::open(std::string(MEMRA_TEST_DATA) + "/state-v1.0-tiny-pos45.mst");
  CHECK(file.version() == "1.0");
  CHECK(file.precision_class() == "cpu-f32-exact");
  auto restored = restore_state_file(file, *backend, model.fingerprint().hex(), 60);
  std::vector<int32_t> prompt(45);
  for (int i = 0; i < 45; ++i) prompt[i] = 2 + (i * 37) % 500;
  auto fresh = backend->new_state(60);
  prefill(*backend, *fresh, prompt, 0, nullptr);
  CHECK(classes_bit_equal(restored->export_classes(), fresh->export_classes()));
  // Written again by this memra, a trunk-only state is still a 1.0 file with the same state hash.
  const std::string again = serialize_state_file(snapshot_state(*fresh), {model.fingerprint().hex(), "cpu-f32-exact"});
  StateFile back = parse_bytes(again);
  CHECK(back.version() == "1.0");
  CHECK(back.state_hash() == file.state_hash());
  CHECK(generate_greedy(*backend, *restored, 3) == generate_greedy(*backend, *fresh, 3));
}
