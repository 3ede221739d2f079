// The CPU reference engine: the result of a position does not depend on how the tokens were split
// into calls (chunk widths, decode vs prefill), bit for bit, for logits and every cache class.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "loader_test_util.h"
#include "state_test_util.h"
#include "core/error.h"
#include "core/hash.h"
#include "engine/cpu_backends.h"
#include "engine/engine.h"
#include "engine/rope.h"
#include "gate/class_diff.h"
#include "model/model.h"

using namespace memra;

using memra::test::random_tokens;

namespace {

const Model& tiny_model(const char* name) {
  static std::map<std::string, std::unique_ptr<Model>> cache;
  auto& slot = cache[name];
  if (!slot) slot = std::make_unique<Model>(Model::load(std::string(MEMRA_FIXTURES) + "/" + name));
  return *slot;
}

// Names the first class whose bits differ ("" when all equal).
std::string first_class_difference(const State& a, const State& b) {
  std::string first;
  diff_classes(a.export_classes(), b.export_classes(), &first);
  return first;
}

}  // namespace

TEST_CASE("chunk widths give bit-identical logits and cache classes", "[cpu][engine]") {
  for (const char* name : {"tiny", "tiny-bf16"}) {
    const Model& model = tiny_model(name);
    const ModelConfig& cfg = model.config();
    auto backend = make_cpu_backend(model);
    const auto tokens = random_tokens(150, cfg.vocab_size, 1234);
    auto ref = backend->new_state(200);
    std::vector<float> ref_logits;
    prefill(*backend, *ref, tokens, 0, &ref_logits);
    for (int64_t width : {1, 2, 3, 7, 17, 32, 64}) {
      CAPTURE(name, width);
      auto st = backend->new_state(200);
      std::vector<float> logits;
      prefill(*backend, *st, tokens, width, &logits);
      CHECK(bits_equal(logits, ref_logits));
      CHECK(first_class_difference(*st, *ref) == "");
      CHECK(st->position() == 150);
    }
  }
}

TEST_CASE("decode is chunk width 1: prefill then decode equals one-shot", "[cpu][engine]") {
  const Model& model = tiny_model("tiny");
  auto backend = make_cpu_backend(model);
  const auto tokens = random_tokens(120, model.config().vocab_size, 99);
  auto one = backend->new_state(120);
  std::vector<float> all;
  prefill(*backend, *one, tokens, 0, &all);
  for (int64_t split : {1, 37, 66, 119}) {
    CAPTURE(split);
    auto st = backend->new_state(120);
    std::vector<float> logits;
    prefill(*backend, *st, std::span<const int32_t>(tokens).first(split), 0, &logits);
    for (int64_t t = split; t < 120; ++t) {
      auto row = decode_step(*backend, *st, tokens[t]);
      logits.insert(logits.end(), row.begin(), row.end());
    }
    CHECK(bits_equal(logits, all));
    CHECK(first_class_difference(*st, *one) == "");
  }
}

TEST_CASE("greedy generation continues from the last logits", "[cpu][engine]") {
  const Model& model = tiny_model("tiny");
  auto backend = make_cpu_backend(model);
  const auto prompt = random_tokens(30, model.config().vocab_size, 5);
  auto a = backend->new_state(60);
  prefill(*backend, *a, prompt, 8, nullptr);
  std::vector<float> steps;
  auto out = generate_greedy(*backend, *a, 10, &steps);
  REQUIRE(out.size() == 10);
  CHECK(a->position() == 40);
  // The same chain by hand: each emitted token is the argmax of the previous row.
  auto b = backend->new_state(60);
  std::vector<float> logits;
  prefill(*backend, *b, prompt, 0, &logits);
  std::vector<float> last(logits.end() - model.config().vocab_size, logits.end());
  for (int i = 0; i < 10; ++i) {
    int32_t tok = argmax(last);
    CHECK(tok == out[i]);
    last = decode_step(*backend, *b, tok);
  }
  CHECK(bits_equal(last, backend->last_logits(*a)));
}

TEST_CASE("capacity and token ids are checked", "[cpu][engine]") {
  const Model& model = tiny_model("tiny");
  auto backend = make_cpu_backend(model);
  auto st = backend->new_state(10);
  auto tokens = random_tokens(11, model.config().vocab_size, 1);
  CHECK_THROWS_AS(prefill(*backend, *st, tokens, 0, nullptr), Error);
  CHECK(st->position() == 0);
  std::vector<int32_t> bad = {3, static_cast<int32_t>(model.config().vocab_size)};
  CHECK_THROWS_WITH(prefill(*backend, *st, bad, 0, nullptr), Catch::Contains("outside the vocabulary"));
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

TEST_CASE("the exact path is bit-identical to memra 0.1.0's (committed logits hashes)", "[cpu][engine][golden]") {
  // Logits [200, V] of the prompt 2 + (37 i mod 500), written by memra 0.1.0 (commit 2390a1b, before
  // the backend interface, the worker pool and the batched layer loop) and hashed with XXH3-128.
  const std::vector<std::pair<const char*, const char*>> golden = {
      {"tiny", "472702dfeaab3a4034c822397386aae1"}, {"tiny-bf16", "77469c2fc75311892125c584a7137996"}};
  std::vector<int32_t> prompt(200);
  for (int i = 0; i < 200; ++i) prompt[i] = 2 + (i * 37) % 500;
  for (const auto& [name, want] : golden) {
    CAPTURE(name);
    const Model& model = tiny_model(name);
    auto backend = make_backend("cpu", model);
    auto st = backend->new_state(200);
    std::vector<float> logits;
    prefill(*backend, *st, prompt, 0, &logits);
    CHECK(xxh3_128(logits.data(), logits.size() * sizeof(float)).hex() == want);
  }
}

TEST_CASE("a batch gives each sequence the bits it gets alone (exact path)", "[cpu][engine]") {
  const Model& model = tiny_model("tiny");
  const int64_t V = model.config().vocab_size;
  auto backend = make_backend("cpu", model);
  // Three sequences at different positions with different token counts, one with logits for every
  // row, one with the last row only, one a single decode token.
  const auto a_prompt = random_tokens(30, V, 1), a_next = random_tokens(5, V, 2);
  const auto b_tokens = random_tokens(17, V, 3);
  const auto c_prompt = random_tokens(66, V, 4), c_next = random_tokens(1, V, 5);
  auto run = [&](bool batched) {
    auto a = backend->new_state(80), b = backend->new_state(80), c = backend->new_state(80);
    prefill(*backend, *a, a_prompt, 0, nullptr);
    prefill(*backend, *c, c_prompt, 7, nullptr);
    std::vector<float> la(a_next.size() * V), lc(V);
    std::vector<SequenceStep> steps = {{a.get(), a_next, la.data(), nullptr},
                                       {b.get(), b_tokens, nullptr, nullptr},
                                       {c.get(), c_next, lc.data(), nullptr}};
    if (batched) backend->forward(steps);
    else
      for (const auto& s : steps) backend->forward(std::span<const SequenceStep>(&s, 1));
    std::vector<std::vector<float>> out = {la, backend->last_logits(*b), lc};
    std::vector<std::vector<CacheClass>> classes = {a->export_classes(), b->export_classes(), c->export_classes()};
    return std::make_pair(out, classes);
  };
  auto [alone_logits, alone_classes] = run(false);
  auto [batch_logits, batch_classes] = run(true);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(bits_equal(alone_logits[i], batch_logits[i]));
    CHECK(classes_bit_equal(alone_classes[i], batch_classes[i]));
  }
  SECTION("a state twice in one batch, or a bad token anywhere, is refused before any state moves") {
    auto a = backend->new_state(10), b = backend->new_state(10);
    const std::vector<int32_t> ok = {3}, bad = {static_cast<int32_t>(V)};
    std::vector<SequenceStep> twice = {{a.get(), ok, nullptr, nullptr}, {a.get(), ok, nullptr, nullptr}};
    CHECK_THROWS_AS(backend->forward(twice), Error);
    std::vector<SequenceStep> mixed = {{a.get(), ok, nullptr, nullptr}, {b.get(), bad, nullptr, nullptr}};
    CHECK_THROWS_WITH(backend->forward(mixed), Catch::Contains("outside the vocabulary"));
    CHECK(a->position() == 0);
    CHECK(b->position() == 0);
  }
}

TEST_CASE("cpu-fast is a second realization: close to the exact path, not equal to it", "[cpu][engine]") {
  for (const char* name : {"tiny", "tiny-bf16"}) {
    CAPTURE(name);
    const Model& model = tiny_model(name);
    auto exact = make_backend("cpu", model), fast = make_backend("cpu-fast", model);
    CHECK(fast->realization().name == "cpu-fast");
    CHECK_FALSE(fast->realization().exact);
    const auto tokens = random_tokens(120, model.config().vocab_size, 77);
    std::vector<float> le, lf;
    auto se = exact->new_state(120), sf = fast->new_state(120);
    prefill(*exact, *se, tokens, 0, &le);
    prefill(*fast, *sf, tokens, 0, &lf);
    REQUIRE(le.size() == lf.size());
    double max_abs = 0, max_ref = 0;
    for (size_t i = 0; i < le.size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(le[i]) - lf[i]));
      max_ref = std::max(max_ref, std::fabs(static_cast<double>(le[i])));
    }
    CHECK(max_abs > 0);  // a different arithmetic really drifts
    CHECK(max_abs / max_ref < fast->realization().parity_rel_to_max);
    // Its states are the exact path's classes (names, shapes, dtypes): files interchange.
    const auto ce = se->export_classes(), cf = sf->export_classes();
    REQUIRE(ce.size() == cf.size());
    for (size_t i = 0; i < ce.size(); ++i) CHECK((ce[i].name == cf[i].name && ce[i].shape == cf[i].shape));
  }
}

TEST_CASE("rewind keeping rows of a journaled forward: the state of running only them (exact path)", "[cpu][engine]") {
  // Speculative verify without a re-run: mark at P, run a journaled block of B tokens, rewind keeping
  // its first k rows; the state (every class, last_logits) equals a run of P + k tokens, and so do
  // the next 12 positions. Blocks close CSA windows (m = 4) and an HCA window (m = 16) at various
  // offsets, and B = 30 is longer than the window (24), so kept window rows come from the journal.
  const Model& model = tiny_model("tiny");
  auto backend = make_backend("cpu", model);
  const auto tokens = random_tokens(120, model.config().vocab_size, 37);
  for (int64_t P : {2, 13, 40}) {
    for (int64_t B : {8, 30}) {
      for (int64_t k : std::initializer_list<int64_t>{1, 3, 4, 7, B - 1}) {
        INFO("mark at " << P << ", block " << B << ", keep " << k);
        auto st = backend->new_state(120);
        prefill(*backend, *st, std::span<const int32_t>(tokens).first(P), 0, nullptr);
        const StateMark mark = st->mark();
        std::vector<int32_t> block(tokens.begin() + P, tokens.begin() + P + B);
        block[k] = (block[k] + 1) % static_cast<int32_t>(model.config().vocab_size);  // rejected from k on
        SequenceStep step{st.get(), block, nullptr, nullptr, true};
        backend->forward(std::span<const SequenceStep>(&step, 1));
        st->rewind(mark, k);
        CHECK(st->position() == P + k);
        auto ref = backend->new_state(120);
        prefill(*backend, *ref, std::span<const int32_t>(tokens).first(P + k), 0, nullptr);
        CHECK(bits_equal(backend->last_logits(*st), backend->last_logits(*ref)));
        CHECK(first_class_difference(*st, *ref) == "");
        std::vector<float> more, ref_more;
        prefill(*backend, *st, std::span<const int32_t>(tokens).subspan(P + k, 12), 0, &more);
        prefill(*backend, *ref, std::span<const int32_t>(tokens).subspan(P + k, 12), 0, &ref_more);
        CHECK(bits_equal(more, ref_more));
        CHECK(first_class_difference(*st, *ref) == "");
      }
    }
  }
  // Keeping rows needs the journal of the forward that ran from the mark, and nothing since.
  auto st = backend->new_state(60);
  prefill(*backend, *st, std::span<const int32_t>(tokens).first(10), 0, nullptr);
  const StateMark mark = st->mark();
  prefill(*backend, *st, std::span<const int32_t>(tokens).subspan(10, 5), 0, nullptr);  // no journal
  loader_test::require_error([&] { st->rewind(mark, 2); }, {"no journal"});
  st->rewind(mark);
  SequenceStep step{st.get(), std::span<const int32_t>(tokens).subspan(10, 5), nullptr, nullptr, true};
  backend->forward(std::span<const SequenceStep>(&step, 1));
  prefill(*backend, *st, std::span<const int32_t>(tokens).subspan(15, 1), 0, nullptr);  // drops the journal
  loader_test::require_error([&] { st->rewind(mark, 2); }, {"no journal"});
  CHECK_THROWS(st->rewind(mark, 7));  // more rows than ran since the mark
}

TEST_CASE("mark and rewind: a rejected block leaves no trace (exact path)", "[cpu][engine]") {
  // Speculative verify: mark at P, run an 8-token block, rewind, run the 3 accepted tokens; the
  // state and logits equal a run that never saw the rejected 5. Windows close inside the block (CSA
  // every 4) so pending rows, the carry and entries all have to come back; at P = 2 the block closes
  // the first CSA window, so the carry must go back to "no previous window" (−inf scores), which no
  // class of a state at 2 holds.
  const Model& model = tiny_model("tiny");
  auto backend = make_backend("cpu", model);
  const auto tokens = random_tokens(60, model.config().vocab_size, 31);
  for (int64_t P : {2, 13, 40}) {
    INFO("mark at " << P);
    auto st = backend->new_state(60);
    prefill(*backend, *st, std::span<const int32_t>(tokens).first(P), 0, nullptr);
    const StateMark mark = st->mark();
    // A mark holds what a later position can change, not the closed entries (they only grow).
    size_t full = 0;
    for (const auto& c : st->export_classes()) full += c.bytes.size();
    for (const auto& c : mark_classes_of(*mark.components.front())) {
      CHECK(c.name.find(".cmp") == std::string::npos);
      CHECK(c.name.find(".idxk") == std::string::npos);
    }
    if (P >= 40) CHECK(mark.bytes() < full);
    std::vector<int32_t> block(tokens.begin() + P, tokens.begin() + P + 8);
    block[3] = (block[3] + 1) % static_cast<int32_t>(model.config().vocab_size);  // rejected from here
    prefill(*backend, *st, block, 0, nullptr);
    CHECK(st->position() == P + 8);
    st->rewind(mark);
    CHECK(st->position() == P);
    std::vector<float> accepted;
    prefill(*backend, *st, std::span<const int32_t>(block).first(3), 0, &accepted);
    auto ref = backend->new_state(60);
    std::vector<float> ref_logits;
    prefill(*backend, *ref, std::span<const int32_t>(tokens).first(P + 3), 0, &ref_logits);
    CHECK(bits_equal(accepted, std::vector<float>(ref_logits.end() - accepted.size(), ref_logits.end())));
    CHECK(first_class_difference(*st, *ref) == "");
    // ... and stays so over the next positions (the entries past P's live rows were rewritten).
    std::vector<float> more, ref_more;
    prefill(*backend, *st, std::span<const int32_t>(tokens).subspan(P + 3, 12), 0, &more);
    prefill(*backend, *ref, std::span<const int32_t>(tokens).subspan(P + 3, 12), 0, &ref_more);
    CHECK(bits_equal(more, ref_more));
    CHECK(first_class_difference(*st, *ref) == "");
  }
  // A mark comes back only from its own position or a later one.
  auto st = backend->new_state(60);
  prefill(*backend, *st, std::span<const int32_t>(tokens).first(10), 0, nullptr);
  const StateMark mark = st->mark();
  auto other = backend->new_state(60);
  prefill(*backend, *other, std::span<const int32_t>(tokens).first(5), 0, nullptr);
  CHECK_THROWS(other->rewind(mark));
}
