// Gates catch what they exist to catch: each one passes on the exact engine and fails, with
// evidence, on a deliberately broken realization or artifact.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "engine/cpu_backends.h"
#include "engine/cpu_state.h"
#include "engine/engine.h"
#include "format/npy.h"
#include "format/token_list.h"
#include "gate/band.h"
#include "gate/artifact_gates.h"
#include "gate/trunk_gates.h"
#include "model/model.h"
#include "state/snapshot.h"
#include "state/state_file.h"

using namespace memra;

namespace {

const Model& tiny() {
  static Model m = Model::load(std::string(MEMRA_FIXTURES) + "/tiny");
  return m;
}

// The exact CPU backend with a forward of the test's own: the planted bugs below derive from it.
class WrappedCpuBackend : public Backend {
 public:
  explicit WrappedCpuBackend(const Model& m) : inner_(make_cpu_backend(m)) {}
  const RealizationInfo& realization() const override { return inner_->realization(); }
  const ModelConfig& config() const override { return inner_->config(); }
  std::unique_ptr<State> new_state(int64_t capacity) const override { return inner_->new_state(capacity); }
  std::vector<float> last_logits(const State& st) const override { return inner_->last_logits(st); }

 protected:
  std::unique_ptr<Backend> inner_;
};

// A realization with a planted bug: `perturb` decides, per call, whether to nudge the logits.
class BrokenBackend final : public WrappedCpuBackend {
 public:
  using Rule = std::function<float(const State&, int64_t tokens)>;  // added to logit argmax-neighbour
  BrokenBackend(const Model& m, Rule rule) : WrappedCpuBackend(m), rule_(std::move(rule)) {}
  void forward(std::span<const SequenceStep> batch) const override {
    for (const SequenceStep& step : batch) {
      const float delta = rule_(*step.state, static_cast<int64_t>(step.tokens.size()));
      inner_->forward(std::span<const SequenceStep>(&step, 1));
      if (delta == 0) continue;
      const int64_t V = vocab_size();
      // Push the runner-up of the last row above the leader by `delta` (a decision-changing bug).
      auto bump = [&](float* row) {
        int32_t top = argmax(std::span<const float>(row, V));
        int32_t second = top == 0 ? 1 : 0;
        for (int64_t j = 0; j < V; ++j)
          if (j != top && row[j] > row[second]) second = static_cast<int32_t>(j);
        row[second] = row[top] + delta;
      };
      bump(cpu_state(*step.state, config()).trunk().host.last_logits.data());
      if (step.logits) bump(step.logits + (step.tokens.size() - 1) * V);
    }
  }

 private:
  Rule rule_;
};

TrunkGateOptions short_options() {
  TrunkGateOptions o;
  o.prompt = 30;
  o.warm = 6;
  o.continuation = 5;
  o.steps = 6;
  return o;
}

}  // namespace

TEST_CASE("trunk gates pass on the exact CPU engine", "[cpu][gate]") {
  auto backend = make_cpu_backend(tiny());
  auto o = short_options();
  CHECK(gate_restore_roundtrip(tiny(), *backend, o).verdict == Verdict::kPass);
  CHECK(gate_chunk_invariance(tiny(), *backend, o).verdict == Verdict::kPass);
  auto fast = make_backend("cpu-fast", tiny());
  auto sem = gate_chunk_semantics(tiny(), *fast, *backend, o);
  CHECK(sem.verdict == Verdict::kPass);
  CHECK(sem.line().find("0_out_of_band") != std::string::npos);
  CHECK(sem.line().find("two_realizations=true") != std::string::npos);
  CHECK(sem.line().find("initial_logits_maxabs=0 ") == std::string::npos);  // a real drift was measured
  SECTION("one realization against itself is reported as chunk invariance, not semantics") {
    auto same = gate_chunk_semantics(tiny(), *backend, *backend, o);
    CHECK(same.line().find("two_realizations=false") != std::string::npos);
    REQUIRE_FALSE(same.notes.empty());
    CHECK_THAT(same.notes.back(), Catch::Contains("chunk invariance"));
  }
}

TEST_CASE("the restore gate catches a capacity-dependent bug", "[cpu][gate]") {
  auto o = short_options();
  const int64_t small = o.prompt + o.warm + o.continuation + 1;
  BrokenBackend broken(tiny(), [small](const State& st, int64_t) { return st.capacity() > small ? 1e-3f : 0.0f; });
  GateResult g = gate_restore_roundtrip(tiny(), broken, o);
  CHECK(g.verdict == Verdict::kFail);
  CHECK_THAT(g.evidence, Catch::Contains("logits differ at continuation step 0"));
}

TEST_CASE("the chunk-invariance gate catches a width-dependent bug", "[cpu][gate]") {
  BrokenBackend broken(tiny(), [](const State&, int64_t t) { return t > 1 ? 1e-3f : 0.0f; });
  GateResult g = gate_chunk_invariance(tiny(), broken, short_options());
  CHECK(g.verdict == Verdict::kFail);
  CHECK_THAT(g.evidence, Catch::Contains("logits of width 64 differ"));
}

TEST_CASE("chunk semantics classifies disagreements against the band", "[cpu][gate]") {
  auto exact = make_cpu_backend(tiny());
  SECTION("a flip with a margin far outside the band fails") {
    BrokenBackend broken(tiny(), [](const State&, int64_t t) { return t == 1 ? 0.5f : 0.0f; });
    GateResult g = gate_chunk_semantics(tiny(), *exact, broken, short_options());
    CHECK(g.verdict == Verdict::kFail);
    CHECK_THAT(g.evidence, Catch::Contains("OUT-OF-BAND"));
  }
  SECTION("a flip within the band is reported IN-BAND and passes") {
    // The monolithic side has a near-tie (runner-up 1e-6 below the top); the chunked side's bug
    // flips exactly that pair.
    BrokenBackend near_tie(tiny(), [](const State&, int64_t) { return -1e-6f; });
    BrokenBackend broken(tiny(), [](const State&, int64_t) { return 1e-6f; });
    GateResult g = gate_chunk_semantics(tiny(), near_tie, broken, short_options());
    CHECK(g.verdict == Verdict::kPass);
    REQUIRE_FALSE(g.notes.empty());
    CHECK_THAT(g.notes.front(), Catch::Contains("IN-BAND"));
  }
}

// A realization whose router of layer 1 picks another expert at one decode position, with a
// selection margin of `margin` at that row, and whose logits there lead with a runner-up 0.5 above
// the top (the flip's consequence, far outside any band).
class DecisionFlipBackend final : public WrappedCpuBackend {
 public:
  DecisionFlipBackend(const Model& m, int64_t at, float margin) : WrappedCpuBackend(m), at_(at), margin_(margin) {}
  void forward(std::span<const SequenceStep> batch) const override {
    for (const SequenceStep& step : batch) {
      const bool here = step.state->position() == at_ && step.tokens.size() == 1;
      inner_->forward(std::span<const SequenceStep>(&step, 1));
      if (!here) continue;
      if (step.trace) {
        auto& ex = step.trace->arrays.at("router.1.experts");  // [1, k] ascending
        for (int32_t e = 0; e < 8; ++e)
          if (std::find(ex.begin(), ex.end(), static_cast<float>(e)) == ex.end()) {
            ex[0] = static_cast<float>(e);
            break;
          }
        step.trace->arrays.at("router.1.margin")[0] = margin_;
      }
      float* row = cpu_state(*step.state, config()).trunk().host.last_logits.data();
      const int32_t top = argmax(std::span<const float>(row, vocab_size()));
      row[top == 0 ? 1 : 0] = row[top] + 0.5f;
      if (step.logits) std::memcpy(step.logits, row, sizeof(float) * vocab_size());
    }
  }

 private:
  int64_t at_;
  float margin_;
};

TEST_CASE("chunk semantics judges router and indexer decisions, and re-anchors after an in-band flip", "[cpu][gate]") {
  auto exact = make_cpu_backend(tiny());
  const TrunkGateOptions o = short_options();
  const int64_t at = o.prompt + 2;  // the decode position of step 3
  SECTION("a near-tie decision flip explains the disagreement after it, and later steps are judged again") {
    DecisionFlipBackend flip(tiny(), at, 1e-7f);
    GateResult g = gate_chunk_semantics(tiny(), flip, *exact, o);
    CHECK(g.verdict == Verdict::kPass);
    CHECK(g.line().find("decision_flips=1_in_band,0_out_of_band") != std::string::npos);
    CHECK(g.line().find("after_decision_flip=1") != std::string::npos);
    CHECK(g.line().find("reanchored=1") != std::string::npos);
    CHECK(g.line().find("teacher_forced=6:5_agree,0_in_band,0_out_of_band") != std::string::npos);
    bool noted = false;
    for (const auto& n : g.notes) noted = noted || n.find("in-band decision flip in router.1.experts at position " + std::to_string(at)) == 0;
    CHECK(noted);
  }
  SECTION("a decision flip with a clear margin fails, whatever the logits") {
    DecisionFlipBackend flip(tiny(), at, 0.5f);
    GateResult g = gate_chunk_semantics(tiny(), flip, *exact, o);
    CHECK(g.verdict == Verdict::kFail);
    CHECK_THAT(g.evidence, Catch::Contains("decision flip in router.1.experts at position " + std::to_string(at)));
    CHECK_THAT(g.evidence, Catch::Contains("OUT-OF-BAND"));
  }
}

TEST_CASE("the equal gate names the one flipped element of a re-hashed state", "[cpu][gate]") {
  auto backend = make_cpu_backend(tiny());
  auto st = backend->new_state(40);
  std::vector<int32_t> prompt(37);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(5 + 7 * i);
  prefill(*backend, *st, prompt, 0, nullptr);
  HostSnapshot snap = snapshot_state(*st);
  const auto dir = std::filesystem::temp_directory_path();
  const std::string a = (dir / "memra-gate-test-a.mst").string(), b = (dir / "memra-gate-test-b.mst").string();
  StateOrigin origin{tiny().fingerprint().hex(), backend->precision_class()};
  write_state_file(a, snap, origin);
  CHECK(gate_equal(a, a).verdict == Verdict::kPass);
  // Flip one element of one class, then write a valid (re-hashed) file.
  auto& cls = snap.classes[3];
  uint32_t bits;
  std::memcpy(&bits, &cls.bytes[5 * 4], 4);
  bits ^= 1u;
  std::memcpy(&cls.bytes[5 * 4], &bits, 4);
  write_state_file(b, snap, origin);
  GateResult g = gate_equal(a, b);
  CHECK(g.verdict == Verdict::kFail);
  CHECK_THAT(g.evidence, Catch::Contains("class " + cls.name + " element 5"));
  CHECK_THAT(g.evidence, Catch::Contains("ulp=1"));
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

TEST_CASE("the band passes honest realization pairs and fails noise at 10x their drift", "[cpu][gate]") {
  // cpu vs cpu-fast on the same prompt: the honest f32 pair. Then B = A + noise at 10× each row's
  // measured drift: values over the band, FAIL (docs/bands.md).
  const Model& model = tiny();
  const int64_t V = model.config().vocab_size;
  std::vector<int32_t> prompt(120);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(2 + (i * 53) % (V - 2));
  auto logits_of = [&](const char* name) {
    auto backend = make_backend(name, model);
    auto st = backend->new_state(120);
    std::vector<float> l;
    prefill(*backend, *st, prompt, 0, &l);
    return l;
  };
  const std::vector<float> a = logits_of("cpu"), b = logits_of("cpu-fast");
  std::vector<float> noisy = a;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t t = 0; t < 120; ++t) {
    float drift = 0;
    for (int64_t j = 0; j < V; ++j) drift = std::max(drift, std::fabs(a[t * V + j] - b[t * V + j]));
    for (int64_t j = 0; j < V; ++j) noisy[t * V + j] = a[t * V + j] + 10 * drift * u(rng);
  }
  const auto dir = std::filesystem::temp_directory_path();
  const std::string pa = (dir / "memra-band-a.npy").string(), pb = (dir / "memra-band-b.npy").string(),
                    pn = (dir / "memra-band-n.npy").string();
  write_logits(pa, a, 120, V);
  write_logits(pb, b, 120, V);
  write_logits(pn, noisy, 120, V);
  const Realization ra = realization_for("cpu", model.config(), 120), rb = realization_for("cpu-fast", model.config(), 120);
  CHECK(ra.depth == 4 * model.config().hidden_size);  // one reduction chain: the mHC mix over n·D
  GateResult honest = gate_band(pa, pb, ra, rb);
  CHECK(honest.verdict == Verdict::kPass);
  GateResult noise = gate_band(pa, pn, ra, rb);
  CHECK(noise.verdict == Verdict::kFail);
  CHECK_THAT(noise.evidence, Catch::Contains("exceeds the band"));
  for (const auto& p : {pa, pb, pn}) std::filesystem::remove(p);
}
