// Decode state allocation and cache-class packing: names, shapes and order of the live classes,
// the window ring exported oldest first, and bit-exact round trips into any capacity ≥ position.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "core/error.h"
#include "engine/decode_state.h"
#include "state/snapshot.h"
#include "state_test_util.h"

using namespace memra;
using memra::test::synthetic_config;

namespace {

template <class Classes>
std::map<std::string, std::vector<int64_t>> shapes_of(const Classes& classes) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& c : classes) out[c.name] = c.shape;
  return out;
}

}  // namespace

TEST_CASE("make_decode_state allocates the planned buffers", "[cpu][state]") {
  const ModelConfig cfg = synthetic_config();  // d 8, W 16, di 4, CSA m 4, HCA m 16
  DecodeState s = make_decode_state(cfg, 70);
  CHECK(s.pos == 0);
  CHECK(s.capacity == 70);
  REQUIRE(s.layers.size() == 4);
  CHECK(s.layers[0].window.size() == 16 * 8);
  CHECK(s.layers[0].compressor.entries.empty());
  SECTION("CSA: c = 2, indexer of width di, prev rows start at kv 0 and score -inf") {
    const CompressorState& c = s.layers[1].compressor;
    CHECK(c.ratio == 4);
    CHECK(c.overlap == 2);
    CHECK(c.width == 8);
    CHECK(c.pend_kv.size() == 4 * 16);
    CHECK(c.prev_kv.size() == 4 * 8);
    CHECK(c.entries.size() == (70 / 4) * 8);
    CHECK(std::isinf(c.prev_score[0]));
    CHECK(c.prev_score[0] < 0);
    CHECK(s.layers[1].indexer.width == 4);
    CHECK(s.layers[1].indexer.entries.size() == (70 / 4) * 4);
  }
  SECTION("HCA: c = 1, no prev") {
    const CompressorState& c = s.layers[2].compressor;
    CHECK(c.ratio == 16);
    CHECK(c.overlap == 1);
    CHECK(c.pend_kv.size() == 16 * 8);
    CHECK(c.prev_kv.empty());
    CHECK(c.entries.size() == (70 / 16) * 8);
    CHECK(s.layers[2].indexer.entries.empty());
  }
  SECTION("capacity below 1 is an error") { CHECK_THROWS_AS(make_decode_state(cfg, 0), Error); }
}

TEST_CASE("trunk_layout names and shapes", "[cpu][state]") {
  const ModelConfig cfg = synthetic_config();
  SECTION("position 0 has no classes") { CHECK(trunk_layout(cfg, 0).empty()); }
  SECTION("position 3 (< m, < W): open windows only, no prev, no entries") {
    auto s = shapes_of(trunk_layout(cfg, 3));
    CHECK(s["layers.0.window"] == std::vector<int64_t>{3, 8});
    CHECK(s["layers.1.csa.pend_kv"] == std::vector<int64_t>{3, 16});
    CHECK(s["layers.1.csa.idx_pend_score"] == std::vector<int64_t>{3, 8});
    CHECK(s["layers.2.hca.pend_kv"] == std::vector<int64_t>{3, 8});
    CHECK(s["last_logits"] == std::vector<int64_t>{32});
    CHECK(s.count("layers.1.csa.cmp") == 0);
    CHECK(s.count("layers.1.csa.prev_kv") == 0);
    CHECK(s.count("layers.2.hca.cmp") == 0);
  }
  SECTION("position 8 (pos % m = 0): entries and prev, no pend") {
    auto s = shapes_of(trunk_layout(cfg, 8));
    CHECK(s["layers.1.csa.cmp"] == std::vector<int64_t>{2, 8});
    CHECK(s["layers.1.csa.prev_kv"] == std::vector<int64_t>{4, 8});
    CHECK(s["layers.1.csa.idxk"] == std::vector<int64_t>{2, 4});
    CHECK(s["layers.1.csa.idx_prev_score"] == std::vector<int64_t>{4, 4});
    CHECK(s.count("layers.1.csa.pend_kv") == 0);
    CHECK(s["layers.2.hca.pend_score"] == std::vector<int64_t>{8, 8});
  }
  SECTION("position 66 (wrapped window, pos % m != 0)") {
    auto classes = trunk_layout(cfg, 66);
    auto s = shapes_of(classes);
    CHECK(s["layers.0.window"] == std::vector<int64_t>{16, 8});
    CHECK(s["layers.1.csa.cmp"] == std::vector<int64_t>{16, 8});
    CHECK(s["layers.1.csa.pend_kv"] == std::vector<int64_t>{2, 16});
    CHECK(s["layers.2.hca.cmp"] == std::vector<int64_t>{4, 8});
    CHECK(s["layers.2.hca.pend_kv"] == std::vector<int64_t>{2, 8});
    // Stable order: per layer window first, CSA main before indexer, last_logits last.
    std::vector<std::string> names;
    for (const auto& c : classes) names.push_back(c.name);
    const std::vector<std::string> want = {
        "layers.0.window",
        "layers.1.window", "layers.1.csa.cmp", "layers.1.csa.pend_kv", "layers.1.csa.pend_score",
        "layers.1.csa.prev_kv", "layers.1.csa.prev_score", "layers.1.csa.idxk", "layers.1.csa.idx_pend_kv",
        "layers.1.csa.idx_pend_score", "layers.1.csa.idx_prev_kv", "layers.1.csa.idx_prev_score",
        "layers.2.window", "layers.2.hca.cmp", "layers.2.hca.pend_kv", "layers.2.hca.pend_score",
        "layers.3.window", "layers.3.csa.cmp", "layers.3.csa.pend_kv", "layers.3.csa.pend_score",
        "layers.3.csa.prev_kv", "layers.3.csa.prev_score", "layers.3.csa.idxk", "layers.3.csa.idx_pend_kv",
        "layers.3.csa.idx_pend_score", "layers.3.csa.idx_prev_kv", "layers.3.csa.idx_prev_score",
        "last_logits"};
    CHECK(names == want);
    for (const auto& c : classes) CHECK(c.dtype == DType::kF32);
  }
}

TEST_CASE("cache_classes exports live values only with the window oldest first", "[cpu][state]") {
  const ModelConfig cfg = synthetic_config();
  const int64_t W = cfg.sliding_window, d = cfg.head_dim;
  for (int64_t pos : {5, 16, 37}) {
    DYNAMIC_SECTION("position " << pos) {
      DecodeState s = memra::test::random_state(cfg, pos, 64, 7);
      // Mark every ring slot with the position it holds (slot = position % W).
      for (int64_t p = std::max<int64_t>(0, pos - W); p < pos; ++p)
        for (int64_t j = 0; j < d; ++j) s.layers[0].window[(p % W) * d + j] = static_cast<float>(p);
      auto classes = cache_classes(cfg, s);
      REQUIRE(classes.front().name == "layers.0.window");
      const auto& win = classes.front();
      REQUIRE(win.shape[0] == std::min(pos, W));
      for (int64_t i = 0; i < win.shape[0]; ++i) CHECK(win.f32()[i * d] == static_cast<float>(pos - win.shape[0] + i));
      // Entries rows 0..pos/m-1 and pend rows 0..pos%m-1 are copied as they are.
      for (const auto& c : classes) {
        if (c.name == "layers.1.csa.cmp")
          CHECK(std::equal(c.f32().begin(), c.f32().end(), s.layers[1].compressor.entries.begin()));
        if (c.name == "layers.1.csa.idx_pend_kv")
          CHECK(std::equal(c.f32().begin(), c.f32().end(), s.layers[1].indexer.pend_kv.begin()));
      }
    }
  }
  SECTION("a state that does not fit the config is an error") {
    DecodeState s = memra::test::random_state(cfg, 5, 64, 1);
    s.layers.pop_back();
    CHECK_THROWS_AS(cache_classes(cfg, s), Error);
    DecodeState t = memra::test::random_state(cfg, 5, 64, 1);
    t.last_logits.clear();
    CHECK_THROWS_AS(cache_classes(cfg, t), Error);
  }
}

TEST_CASE("snapshot and restore round trip bit-exactly into any capacity >= position", "[cpu][state]") {
  for (const ModelConfig& cfg : {synthetic_config(), memra::test::synthetic_config_b(), synthetic_config(4, 5, 2, 9)}) {
    for (int64_t pos : {0, 1, 3, 4, 7, 15, 16, 17, 20, 33, 66, 80}) {
      DYNAMIC_SECTION("layers " << cfg.num_hidden_layers << " W " << cfg.sliding_window << " position " << pos) {
        const memra::test::HostStateBackend backend(cfg);
        auto sa = memra::test::random_backend_state(backend, pos, 80, 1000 + pos);
        const DecodeState& a = cpu_state(*sa, cfg).trunk().host;
        HostSnapshot host = snapshot_state(*sa);
        CHECK(host.pos == pos);
        CHECK(host.capacity == 80);
        size_t live = 0;
        for (const auto& c : trunk_layout(cfg, pos)) {
          size_t n = 1;
          for (int64_t dim : c.shape) n *= static_cast<size_t>(dim);
          live += n * 4;
        }
        CHECK(host.bytes() == live);
        for (int64_t cap : {std::max<int64_t>(pos, 1), pos + 97, int64_t{500}}) {
          auto sb = restore_state(backend, host, cap);
          const DecodeState& b = cpu_state(*sb, cfg).trunk().host;
          CHECK(sb->capacity() == cap);
          CHECK(b.capacity == cap);
          CHECK(b.pos == pos);
          CHECK(classes_bit_equal(cache_classes(cfg, a), cache_classes(cfg, b)));
          // Live ring slots hold the same rows at the same slots (the engine reads slot = p % W).
          const int64_t W = cfg.sliding_window, d = cfg.head_dim;
          for (int64_t p = std::max<int64_t>(0, pos - W); p < pos; ++p)
            for (size_t l = 0; l < a.layers.size(); ++l)
              CHECK(std::equal(a.layers[l].window.begin() + (p % W) * d, a.layers[l].window.begin() + (p % W + 1) * d,
                               b.layers[l].window.begin() + (p % W) * d));
        }
        if (pos > 0) {
          try {
            restore_state(backend, host, pos - 1);
            FAIL("capacity below the position was accepted");
          } catch (const Error& e) {
            CHECK(e.exit_code() == kExitNegative);
          }
        }
      }
    }
  }
}

TEST_CASE("decode_state_from_classes refuses classes that do not match the position", "[cpu][state]") {
  const ModelConfig cfg = synthetic_config();
  DecodeState a = memra::test::random_state(cfg, 10, 40, 3);
  auto classes = cache_classes(cfg, a);
  SECTION("wrong position") { CHECK_THROWS_AS(decode_state_from_classes(cfg, 11, 40, classes), Error); }
  SECTION("missing class") {
    classes.pop_back();
    CHECK_THROWS_WITH(decode_state_from_classes(cfg, 10, 40, classes), Catch::Contains("last_logits"));
  }
  SECTION("wrong shape") {
    classes[0].shape = {9, 8};
    CHECK_THROWS_WITH(decode_state_from_classes(cfg, 10, 40, classes), Catch::Contains("layers.0.window"));
  }
  SECTION("wrong value count") {
    classes[1].bytes.pop_back();
    CHECK_THROWS_AS(decode_state_from_classes(cfg, 10, 40, classes), Error);
  }
}

TEST_CASE("trunk_class_specs maps every class to the buffer its name says", "[cpu][decode_state]") {
  // Every realization copies a class from/to the buffer its part names (kernels/device_state.cpp
  // reads nothing else): a wrong part moves the wrong bytes, or none.
  const memra::ModelConfig cfg = memra::ModelConfig::load(std::string(MEMRA_FIXTURES) + "/tiny");
  using memra::TrunkPart;
  auto ends_with = [](const std::string& s, const std::string& t) {
    return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
  };
  int checked = 0;
  for (int64_t pos : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{21}, int64_t{130}}) {
    for (const memra::TrunkClassSpec& s : memra::trunk_class_specs(cfg, pos)) {
      INFO(s.name << " at " << pos);
      TrunkPart want;
      if (s.name == "last_logits") want = TrunkPart::kLastLogits;
      else if (ends_with(s.name, ".window")) want = TrunkPart::kWindow;
      else if (ends_with(s.name, ".cmp") || ends_with(s.name, ".idxk")) want = TrunkPart::kEntries;
      else if (ends_with(s.name, "pend_kv")) want = TrunkPart::kPendKv;
      else if (ends_with(s.name, "pend_score")) want = TrunkPart::kPendScore;
      else if (ends_with(s.name, "prev_kv")) want = TrunkPart::kPrevKv;
      else want = TrunkPart::kPrevScore;
      CHECK(s.part == want);
      CHECK((s.layer < 0) == (s.name == "last_logits"));
      CHECK(s.indexer == (s.name.find(".idx") != std::string::npos));
      ++checked;
    }
  }
  CHECK(checked > 50);
}
