// The CPU reference engine: the result of a position does not depend on how the tokens were split
// into calls (chunk widths, decode vs prefill), bit for bit, for logits and every cache class.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "core/error.h"
#include "engine/engine.h"
#include "engine/rope.h"
#include "gate/class_diff.h"
#include "model/model.h"

using namespace memra;

namespace {

const Model& tiny_model(const char* name) {
  static std::map<std::string, std::unique_ptr<Model>> cache;
  auto& slot = cache[name];
  if (!slot) slot = std::make_unique<Model>(Model::load(std::string(MEMRA_FIXTURES) + "/" + name));
  return *slot;
}

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(2, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> t(n);
  for (auto& x : t) x = d(rng);
  return t;
}

// Names the first class whose bits differ ("" when all equal).
std::string first_class_difference(const ModelConfig& cfg, const DecodeState& a, const DecodeState& b) {
  std::string first;
  diff_classes(cache_classes(cfg, a), cache_classes(cfg, b), &first);
  return first;
}

}  // namespace

TEST_CASE("chunk widths give bit-identical logits and cache classes", "[cpu][engine]") {
  for (const char* name : {"tiny", "tiny-bf16"}) {
    const Model& model = tiny_model(name);
    const ModelConfig& cfg = model.config();
    auto backend = make_cpu_backend(model);
    const auto tokens = random_tokens(150, cfg.vocab_size, 1234);
    DecodeState ref = backend->new_state(200);
    std::vector<float> ref_logits;
    prefill(*backend, ref, tokens, 0, &ref_logits);
    for (int64_t width : {1, 2, 3, 7, 17, 32, 64}) {
      CAPTURE(name, width);
      DecodeState st = backend->new_state(200);
      std::vector<float> logits;
      prefill(*backend, st, tokens, width, &logits);
      CHECK(bits_equal(logits, ref_logits));
      CHECK(first_class_difference(cfg, st, ref) == "");
      CHECK(st.pos == 150);
    }
  }
}

TEST_CASE("decode is chunk width 1: prefill then decode equals one-shot", "[cpu][engine]") {
  const Model& model = tiny_model("tiny");
  auto backend = make_cpu_backend(model);
  const auto tokens = random_tokens(120, model.config().vocab_size, 99);
  DecodeState one = backend->new_state(120);
  std::vector<float> all;
  prefill(*backend, one, tokens, 0, &all);
  for (int64_t split : {1, 37, 66, 119}) {
    CAPTURE(split);
    DecodeState st = backend->new_state(120);
    std::vector<float> logits;
    prefill(*backend, st, std::span<const int32_t>(tokens).first(split), 0, &logits);
    for (int64_t t = split; t < 120; ++t) {
      auto row = decode_step(*backend, st, tokens[t]);
      logits.insert(logits.end(), row.begin(), row.end());
    }
    CHECK(bits_equal(logits, all));
    CHECK(first_class_difference(model.config(), st, one) == "");
  }
}

TEST_CASE("greedy generation continues from the last logits", "[cpu][engine]") {
  const Model& model = tiny_model("tiny");
  auto backend = make_cpu_backend(model);
  const auto prompt = random_tokens(30, model.config().vocab_size, 5);
  DecodeState a = backend->new_state(60);
  prefill(*backend, a, prompt, 8, nullptr);
  std::vector<float> steps;
  auto out = generate_greedy(*backend, a, 10, &steps);
  REQUIRE(out.size() == 10);
  CHECK(a.pos == 40);
  // The same chain by hand: each emitted token is the argmax of the previous row.
  DecodeState b = backend->new_state(60);
  std::vector<float> logits;
  prefill(*backend, b, prompt, 0, &logits);
  std::vector<float> last(logits.end() - model.config().vocab_size, logits.end());
  for (int i = 0; i < 10; ++i) {
    int32_t tok = argmax(last);
    CHECK(tok == out[i]);
    last = decode_step(*backend, b, tok);
  }
  CHECK(bits_equal(last, a.last_logits));
}

TEST_CASE("capacity and token ids are checked", "[cpu][engine]") {
  const Model& model = tiny_model("tiny");
  auto backend = make_cpu_backend(model);
  DecodeState st = backend->new_state(10);
  auto tokens = random_tokens(11, model.config().vocab_size, 1);
  CHECK_THROWS_AS(prefill(*backend, st, tokens, 0, nullptr), Error);
  CHECK(st.pos == 0);
  std::vector<int32_t> bad = {3, static_cast<int32_t>(model.config().vocab_size)};
  CHECK_THROWS_WITH(prefill(*backend, st, bad, 0, nullptr), Catch::Contains("outside the vocabulary"));
  CHECK_THROWS(backend->new_state(0));
}

TEST_CASE("argmax breaks ties by the lower index", "[cpu][engine]") {
  std::vector<float> row = {0.5f, 2.0f, 1.0f, 2.0f};
  CHECK(argmax(row) == 1);
}

TEST_CASE("YaRN inverse frequencies match docs/architecture.md's check values", "[cpu][rope]") {
  RopeParams p;
  p.type = "yarn";
  p.theta = 160000;
  p.factor = 16;
  p.original_max_position_embeddings = 65536;
  auto inv = rope_inv_freq(p, 64);
  REQUIRE(inv.size() == 32);
  CHECK(inv[0] == Approx(1.0).epsilon(1e-7));
  CHECK(inv[16] == Approx(2.265625e-3).epsilon(1e-6));
  CHECK(inv[24] == Approx(1.953125e-5).epsilon(1e-6));
  CHECK(inv[31] == Approx(5.680529e-7).epsilon(1e-5));
  RopeParams plain;
  plain.theta = 160000;
  CHECK(rope_inv_freq(plain, 64)[16] == Approx(2.5e-3).epsilon(1e-6));
}
