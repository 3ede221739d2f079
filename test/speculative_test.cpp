// Drafters as state components and lossless speculative decoding on the CPU: the drafter's classes
// round-trip through the state (restore brings back identical proposals), drafter priming is chunk
// invariant, and greedy speculative decoding emits exactly plain greedy's tokens with a final state
// (trunk + drafter) bit-identical to plain greedy's, for block sizes 2..16, both harvest
// conventions, across the tiny trunk's window wraps (W 24) and compression boundaries (m 4, 16).
#include "drafter/speculative.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <random>

#include "drafter/drafter.h"
#include "engine/engine.h"
#include "loader_test_util.h"

using namespace memra;
using loader_test::require_error;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& rel) {
  fs::path p = fs::path(MEMRA_FIXTURES) / rel;
  INFO("committed fixture " << p.string() << " is missing");
  REQUIRE(fs::is_directory(p));
  return p.string();
}

struct Pair {
  Model trunk;
  DrafterWeights weights;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Drafter> drafter;
  Pair(const std::string& drafter_name)
      : trunk(Model::load(fixture("tiny"))), weights(DrafterWeights::load(fixture("drafters/" + drafter_name))) {
    backend = make_backend("cpu", trunk);
    drafter = std::make_unique<Drafter>(weights, trunk);
  }
  // A state with the drafter attached, primed by a prefill of `prompt`.
  std::unique_ptr<State> primed(const std::vector<int32_t>& prompt, int64_t capacity, int64_t chunk = 0) const {
    auto s = backend->new_state(capacity);
    drafter->attach(*s);
    drafter->prefill(*backend, *s, prompt, chunk);
    return s;
  }
};

std::vector<int32_t> prompt_of(int64_t n, uint32_t seed, int64_t V) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(2, static_cast<int32_t>(V) - 1);
  std::vector<int32_t> p(n);
  for (auto& t : p) t = d(rng);
  return p;
}

bool same_proposal(const Proposal& a, const Proposal& b) {
  return a.position == b.position && a.anchor == b.anchor && a.tokens == b.tokens && a.confidence == b.confidence;
}

}  // namespace

TEST_CASE("drafter state: classes named by the table, chunk-invariant priming, restore gives identical proposals",
          "[drafter][speculative][cpu]") {
  for (const char* name : {"tiny-dspark", "tiny-dflash-trained"}) {
    INFO(name);
    Pair p(name);
    const DrafterConfig& c = p.drafter->config();
    const auto prompt = prompt_of(40, 3, c.vocab_size);
    auto one = p.primed(prompt, 64);
    auto chunked = p.primed(prompt, 64, 7);
    const auto classes = one->export_classes();
    CHECK(classes_bit_equal(classes, chunked->export_classes()));
    std::vector<CacheClass> drafter_classes;
    for (const auto& cls : classes)
      if (cls.name.rfind("drafter.", 0) == 0) drafter_classes.push_back(cls);
    const auto lay = drafter_layout(c, 40);
    REQUIRE(drafter_classes.size() == lay.size());
    REQUIRE(!lay.empty());
    for (size_t i = 0; i < lay.size(); ++i) {
      CHECK(drafter_classes[i].name == lay[i].name);
      CHECK(drafter_classes[i].shape == lay[i].shape);
    }
    if (c.family == DrafterFamily::kDspark)
      CHECK(lay[0].shape == std::vector<int64_t>{*c.sliding_window, c.head_dim});  // a ring: min(W, pos) entries
    else
      CHECK(lay[0].shape[0] == 40);

    // Restore into a fresh state (larger capacity): identical classes and proposals with captures.
    auto back = state_from_classes(*p.backend, 40, 80, classes, [&](State& s) { p.drafter->attach(s); });
    CHECK(classes_bit_equal(back->export_classes(), classes));
    const DraftShape shape = p.drafter->shape();
    DraftCapture ca, cb;
    const int32_t anchor = argmax(p.backend->last_logits(*one));
    const Proposal pa = p.drafter->propose(*one, anchor, shape, &ca);
    const Proposal pb = p.drafter->propose(*back, anchor, shape, &cb);
    CHECK(same_proposal(pa, pb));
    CHECK(ca.final == cb.final);
    CHECK(ca.base_logits == cb.base_logits);
    CHECK(ca.markov_logits == cb.markov_logits);
    CHECK(static_cast<int64_t>(pa.tokens.size()) == shape.drafts());
    CHECK(pa.confidence.size() == (c.confidence ? pa.tokens.size() : 0u));
    // Proposing leaves the state as it was.
    CHECK(classes_bit_equal(one->export_classes(), classes));

    // A state without the drafter refuses its classes by name; a drafter class of the wrong shape is named.
    require_error([&] { state_from_classes(*p.backend, 40, 80, classes); }, {"belongs to a drafter"}, kExitNegative);
    auto bad = classes;
    for (auto& cls : bad)
      if (cls.name == lay[0].name) {
        cls.shape[0] -= 1;
        cls.bytes.resize(cls.bytes.size() -
                         c.head_dim * sizeof(float) * (c.family == DrafterFamily::kDspark ? 1 : c.num_key_value_heads));
      }
    require_error([&] { state_from_classes(*p.backend, 40, 80, bad, [&](State& s) { p.drafter->attach(s); }); },
                  {lay[0].name}, kExitNegative);
    // Attaching to a state past position 0 is refused (the drafter would miss those positions' taps).
    auto late = p.backend->new_state(8);
    prefill(*p.backend, *late, std::vector<int32_t>{5, 6}, 0, nullptr);
    require_error([&] { p.drafter->attach(*late); }, {"position 0"});
  }
}

TEST_CASE("speculative decoding is lossless: plain greedy's tokens and state, block sizes 2..16, both harvests",
          "[drafter][speculative][cpu]") {
  // 16 prompt tokens + 104 steps: the trunk's window (24) wraps several times and the compressors
  // (m = 4 and 16) close windows at positions that land inside verified blocks.
  const int64_t steps = 104;
  for (const char* name : {"tiny-dspark", "tiny-dflash-trained"}) {
    Pair p(name);
    const auto prompt = prompt_of(16, 11, p.drafter->config().vocab_size);
    auto ref = p.primed(prompt, 128);
    const std::vector<int32_t> greedy = generate_greedy_primed(*p.backend, *p.drafter, *ref, steps);
    const auto ref_classes = ref->export_classes();
    for (Rollback rb : {Rollback::kKeep, Rollback::kRerun})
    for (Harvest h : {Harvest::kDspark, Harvest::kDflash})
      for (int64_t b : {2, 3, 5, 8, 16}) {
        INFO(name << " rollback " << rollback_name(rb) << " harvest " << harvest_name(h) << " block " << b);
        auto st = p.primed(prompt, 128);
        SpeculativeStats stats;
        const auto got =
            generate_speculative(*p.backend, *p.drafter, *st, steps, p.drafter->shape(b, h), &stats, {}, rb);
        CHECK(got == greedy);
        CHECK(st->position() == ref->position());
        CHECK(classes_bit_equal(st->export_classes(), ref_classes));
        CHECK(stats.tokens == steps);
        CHECK(stats.rounds == static_cast<int64_t>(stats.accepted.size()));
        CHECK(stats.rollbacks > 0);  // the loop's rollback path ran
        // What each round ran through the trunk (bench/compare.py charges memra's loop by these):
        // the verifies' rows, plus with kRerun, per rollback, the committed rows it re-ran (kKeep
        // keeps them from the verify's journal: no second forward).
        int64_t reruns = 0, rerun_rows = 0;
        for (size_t k = 0; k < stats.rerun_histogram.size(); ++k)
          reruns += stats.rerun_histogram[k], rerun_rows += static_cast<int64_t>(k) * stats.rerun_histogram[k];
        CHECK(stats.rerun_histogram.size() == static_cast<size_t>(stats.drafts + 1));
        CHECK(stats.rerun_histogram[0] == 0);
        CHECK(reruns == stats.rollbacks);
        CHECK(stats.rollback == rb);
        CHECK(stats.trunk_rows == stats.verify_rows + (rb == Rollback::kRerun ? rerun_rows : 0));
        CHECK(stats.verify_rows <= stats.rounds * (stats.drafts + 1));
        CHECK(stats.verify_rows > stats.rounds);  // drafts were verified beside the anchors
        // The mark leaves out the closed entries (and a DFlash drafter's context): below the state's size.
        size_t full = 0;
        for (const auto& c : st->export_classes()) full += c.bytes.size();
        CHECK(stats.mark_bytes > 0);
        CHECK(static_cast<size_t>(stats.mark_bytes) < full);
      }
  }
}

TEST_CASE("speculative decoding: refusals", "[drafter][speculative][cpu]") {
  Pair p("tiny-dspark");
  const auto prompt = prompt_of(8, 5, p.drafter->config().vocab_size);
  auto st = p.primed(prompt, 16);
  require_error([&] { generate_speculative(*p.backend, *p.drafter, *st, 9, p.drafter->shape()); }, {"capacity"});
  auto fast = make_backend("cpu-fast", p.trunk);
  auto fs_state = fast->new_state(32);
  p.drafter->attach(*fs_state);
  p.drafter->prefill(*fast, *fs_state, prompt, 0);
  require_error([&] { generate_speculative(*fast, *p.drafter, *fs_state, 4, p.drafter->shape()); }, {"exact"});
  auto bare = p.backend->new_state(32);
  prefill(*p.backend, *bare, prompt, 0, nullptr);
  require_error([&] { generate_speculative(*p.backend, *p.drafter, *bare, 4, p.drafter->shape()); }, {"no drafter"});
  require_error([&] { p.drafter->shape(1, Harvest::kDflash); }, {"no drafts"});
}

TEST_CASE("speculative decoding stops at an end-of-sequence token exactly as plain greedy does",
          "[drafter][speculative][eos][cpu]") {
  // Every one of the first 24 greedy tokens in turn as the stop id: wherever it falls (the anchor,
  // inside an accepted run of drafts, the bonus), speculative decoding emits plain greedy's tokens
  // up to its first occurrence, that token included and fed, and ends in plain greedy's state.
  Pair p("tiny-dspark-trained");
  std::vector<int32_t> prompt;  // models/prompt.txt's ids 2, 4, ..., 140: a varied continuation
  for (int32_t t = 2; t <= 140; t += 2) prompt.push_back(t);
  auto ref = p.primed(prompt, 128);
  const std::vector<int32_t> greedy = generate_greedy_primed(*p.backend, *p.drafter, *ref, 40);
  int64_t truncated = 0, cases = 0;  // stops that cut a verified block short; stop ids tried
  for (size_t k = 0; k < 24; ++k) {
    const std::vector<int32_t> stop{greedy[k]};
    const size_t first = static_cast<size_t>(std::find(greedy.begin(), greedy.end(), greedy[k]) - greedy.begin());
    if (first != k) continue;
    ++cases;
    const std::vector<int32_t> want(greedy.begin(), greedy.begin() + static_cast<std::ptrdiff_t>(k) + 1);
    auto plain = p.primed(prompt, 128);
    CHECK(generate_greedy_primed(*p.backend, *p.drafter, *plain, 40, nullptr, stop) == want);
    CHECK(plain->position() == static_cast<int64_t>(prompt.size() + k + 1));
    auto trunk_only = p.backend->new_state(128);
    prefill(*p.backend, *trunk_only, prompt, 0, nullptr);
    CHECK(generate_greedy(*p.backend, *trunk_only, 40, nullptr, {}, stop) == want);
    for (int64_t b : {2, 5, 8}) {
      INFO("stop token " << greedy[k] << " at " << k << ", block " << b);
      auto st = p.primed(prompt, 128);
      SpeculativeStats stats;
      const auto got = generate_speculative(*p.backend, *p.drafter, *st, 40, p.drafter->shape(b), &stats, stop);
      CHECK(got == want);
      CHECK(classes_bit_equal(st->export_classes(), plain->export_classes()));
      // Earlier rounds committed acc + 1 each; the last committed the rest: fewer than it verified
      // means the stop token cut accepted drafts off.
      int64_t last_commit = static_cast<int64_t>(got.size());
      for (size_t r = 0; r + 1 < stats.accepted.size(); ++r) last_commit -= stats.accepted[r] + 1;
      if (!stats.accepted.empty() && stats.accepted.back() + 1 > last_commit) ++truncated;
    }
  }
  CHECK(cases >= 12);
  CHECK(truncated > 0);  // some stop fell inside an accepted block (the trimmed-commit path ran)
}
