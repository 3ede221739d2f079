// Decision boundaries (docs/parity.md §4): each router/indexer row's boundary score (the k-th
// largest, where a tie sits) from the CPU engine's trace, through the decision log and through
// reference dumps (optional arrays: dumps made before them still read, their boundary unknown),
// and what the parity rule makes of a tie on both sides at one boundary.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "state_test_util.h"
#include "core/error.h"
#include "core/hash.h"
#include "engine/cpu_backends.h"
#include "engine/cpu_layer.h"
#include "engine/engine.h"
#include "format/json_guard.h"
#include "format/safetensors.h"
#include "loader_test_util.h"
#include "model/model.h"
#include "parity/decision_log.h"
#include "parity/dump.h"
#include "parity/parity_run.h"

using namespace memra;
using loader_test::require_error;
using loader_test::TempDir;

using memra::test::random_tokens;

namespace {

const Model& tiny() {
  static const Model m = Model::load(std::string(MEMRA_FIXTURES) + "/tiny");
  return m;
}

// The k-th and (k+1)-th largest of `v`, by a full sort (not the engine's selection code).
std::pair<float, float> kth(std::vector<float> v, int64_t k) {
  std::sort(v.begin(), v.end(), std::greater<float>());
  return {v[k - 1], v[k]};
}

// A trace of one call with one decision stage `P` (e.g. "indexer.1."): selections of width k,
// margins and, unless empty, boundaries.
ForwardTrace stage_trace(const std::string& P, const std::string& sel, std::vector<float> selected, std::vector<float> margin,
                         std::vector<float> boundary) {
  ForwardTrace t;
  t.arrays[P + sel] = std::move(selected);
  t.arrays[P + "margin"] = std::move(margin);
  if (!boundary.empty()) t.arrays[P + "boundary"] = std::move(boundary);
  return t;
}

const DecisionStage& stage(const DecisionLog& log, const std::string& name) {
  for (const auto& s : log.stages())
    if (s.name == name) return s;
  FAIL("no stage " << name);
  throw;
}

}  // namespace

TEST_CASE("the CPU router traces each row's boundary: the k-th of its own selection scores", "[cpu][parity][decisions]") {
  // The router of a learned layer, run on its own over random rows: the trace's boundary is the
  // k-th largest of the selection scores (score + bias) recomputed here, bit for bit, and agrees
  // with the traced margin and experts.
  const Model& model = tiny();
  const ModelConfig& cfg = model.config();
  const cpu::ModelWeights w(model);
  const int64_t l = 1, T = 12, D = cfg.hidden_size, E = cfg.n_routed_experts, k = cfg.num_experts_per_tok;
  REQUIRE(cfg.mlp_layer_types[l] == MlpKind::kLearned);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(T * D), out;
  for (float& v : x) v = nd(rng);
  const std::vector<int32_t> tokens = random_tokens(T, cfg.vocab_size, 9);
  ForwardTrace trace;
  cpu::moe(cpu::exact_arithmetic(), cfg, w.layers[l], l, tokens, x, out, &trace);
  const std::vector<float>& boundary = trace.arrays.at("router.1.boundary");
  const std::vector<float>& margin = trace.arrays.at("router.1.margin");
  const std::vector<float>& experts = trace.arrays.at("router.1.experts");
  REQUIRE(boundary.size() == static_cast<size_t>(T));
  CHECK(trace.shapes.at("router.1.boundary") == std::vector<int64_t>{T});
  std::vector<float> logits(T * E);
  cpu::exact_arithmetic().linear(x.data(), T, D, w.layers[l].gate, E, logits.data());
  for (int64_t t = 0; t < T; ++t) {
    CAPTURE(t);
    std::vector<float> sel(E);
    for (int64_t e = 0; e < E; ++e) {
      const float z = logits[t * E + e];
      const float score = cfg.scoring_func == "sigmoid" ? cpu::sigmoid(z) : std::sqrt(cpu::softplus(z));
      sel[e] = score + w.layers[l].gate_bias[e];
    }
    const auto [kth_score, next] = kth(sel, k);
    CHECK(boundary[t] == kth_score);
    CHECK(margin[t] == kth_score - next);
    for (int64_t i = 0; i < k; ++i) CHECK(sel[static_cast<int64_t>(experts[t * k + i])] >= boundary[t]);
  }
  // A hash layer has no selection scores: no boundary (nor margin).
  ForwardTrace hash;
  cpu::moe(cpu::exact_arithmetic(), cfg, w.layers[0], 0, tokens, x, out, &hash);
  CHECK_FALSE(hash.arrays.count("router.0.boundary"));
}

TEST_CASE("a CPU forward traces a boundary per row of every decision stage, and the decision log keeps them",
          "[cpu][parity][decisions]") {
  const Model& model = tiny();
  const ModelConfig& cfg = model.config();
  const int64_t T = 40;
  const auto tokens = random_tokens(T, cfg.vocab_size, 3);
  for (const char* name : {"cpu", "cpu-fast"}) {
    CAPTURE(name);
    auto backend = make_backend(name, model);
    auto state = backend->new_state(T);
    DecisionLog log(cfg);
    std::vector<ForwardTrace> traces;
    prefill(*backend, *state, tokens, 16, nullptr, {}, [&](const ForwardTrace& t) {
      traces.push_back(t);
      log.append(t);
    });
    REQUIRE(traces.size() == 3);  // chunks of 16, 16, 8
    for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
      const std::string L = std::to_string(l);
      std::vector<std::string> stages;
      if (cfg.layer_types[l] == LayerKind::kCSA) stages.push_back("indexer." + L + ".");
      if (cfg.mlp_layer_types[l] == MlpKind::kLearned) stages.push_back("router." + L + ".");
      for (const std::string& P : stages) {
        CAPTURE(P);
        // The log holds the calls' boundaries in order, one per row.
        std::vector<float> joined;
        for (const auto& t : traces) {
          const auto& b = t.arrays.at(P + "boundary");
          CHECK(b.size() == t.arrays.at(P + "margin").size());
          joined.insert(joined.end(), b.begin(), b.end());
        }
        const DecisionStage& s = stage(log, P + (P[0] == 'i' ? "selected" : "experts"));
        REQUIRE(s.rows.boundary.size() == static_cast<size_t>(T));
        for (int64_t t = 0; t < T; ++t) {
          CAPTURE(t);
          // NaN exactly where nothing is left out (margin inf: the first indexer rows see <= K entries).
          CHECK(std::isnan(s.rows.boundary[t]) == std::isinf(s.rows.margin[t]));
          if (!std::isnan(joined[t])) CHECK(s.rows.boundary[t] == joined[t]);
          if (!std::isnan(s.rows.boundary[t])) CHECK(std::fabs(s.rows.boundary[t]) <= s.rows.scale[t]);
        }
      }
    }
    // The same run compared with itself: no flip, boundaries carried through.
    for (const StageResult& r : compare_decision_logs(log, log, 1e-5)) CHECK(r.flips.empty());
  }
}

TEST_CASE("the decision log carries boundaries to the rule, and calls without one read as unknown", "[parity][decisions]") {
  const ModelConfig& cfg = tiny().config();
  REQUIRE(cfg.layer_types[1] == LayerKind::kCSA);
  const int64_t K = cfg.index_topk;  // 4
  const std::string P = "indexer.1.";
  // Two rows; row 1 is a tie at 0 on both sides that took different entries.
  const std::vector<float> ref_sel = {0, 1, 2, 3, 0, 1, 2, 3}, eng_sel = {0, 1, 2, 3, 0, 1, 2, 5};
  const std::vector<float> margin = {0.5f, 0.0f};
  auto judge = [&](const ForwardTrace& engine, const ForwardTrace& reference) {
    DecisionLog e(cfg), r(cfg);
    e.append(engine);
    r.append(reference);
    const auto results = compare_decision_logs(e, r, 1e-5);
    REQUIRE(results.size() == 1);
    return results[0];
  };
  SECTION("both sides traced the boundary at one value: IN-BAND") {
    const StageResult s = judge(stage_trace(P, "selected", eng_sel, margin, {0.25f, 0.0f}),
                                stage_trace(P, "selected", ref_sel, margin, {0.25f, 0.0f}));
    REQUIRE(s.flips.size() == 1);
    CHECK(s.flips[0].in_band);
    CHECK(s.flips[0].boundary == 0.0);
    CHECK(s.flips[0].engine_boundary == 0.0);
    CHECK(s.pass);
  }
  SECTION("one side from before boundaries (a trace without one): OUT-OF-BAND") {
    const StageResult s = judge(stage_trace(P, "selected", eng_sel, margin, {0.25f, 0.0f}),
                                stage_trace(P, "selected", ref_sel, margin, {}));
    REQUIRE(s.flips.size() == 1);
    CHECK_FALSE(s.flips[0].in_band);
    CHECK(std::isnan(s.flips[0].boundary));
    CHECK_FALSE(s.pass);
  }
  SECTION("calls with and without boundaries: the log keeps one per row, NaN where unknown") {
    DecisionLog log(cfg);
    log.append(stage_trace(P, "selected", std::vector<float>(2 * K, 0), {1, 1}, {}));
    CHECK(stage(log, P + "selected").rows.boundary.empty());  // none recorded yet: none at all
    log.append(stage_trace(P, "selected", std::vector<float>(K, 0), {1}, {0.5f}));
    log.append(stage_trace(P, "selected", std::vector<float>(K, 0), {1}, {}));
    const auto& b = stage(log, P + "selected").rows.boundary;
    REQUIRE(b.size() == 4);
    CHECK(std::isnan(b[0]));
    CHECK(std::isnan(b[1]));
    CHECK(b[2] == 0.5f);
    CHECK(std::isnan(b[3]));
  }
  SECTION("a trace whose boundary is not one value per row is an error") {
    DecisionLog log(cfg);
    require_error([&] { log.append(stage_trace(P, "selected", std::vector<float>(2 * K, 0), {1, 1}, {0.5f, 0.5f, 0.5f})); },
                  {"trace of indexer.1.selected", "3 boundary scores for 2 rows"});
    require_error([&] { log.append(stage_trace(P, "selected", {}, {}, {0.5f})); },
                  {"trace of indexer.1.selected", "1 boundary scores for 0 rows"});
  }
}

namespace {

// A copy of models/tiny/dump in `dir` with `extra` arrays (F32) added to the data file and the
// manifest (shape `shape` in the manifest, the array's own in the file; xxh3 of its bytes).
struct ExtraArray {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};
void write_dump_with(const TempDir& dir, const std::vector<ExtraArray>& extra) {
  const std::string src = std::string(MEMRA_FIXTURES) + "/tiny/dump";
  const SafetensorsFile in = SafetensorsFile::open(src + "/arrays.safetensors");
  nlohmann::json m = read_json_file(src + "/manifest.json", 16u << 20);
  SafetensorsWriter w;
  for (const TensorView& t : in.tensors()) w.add(t.name, t.dtype, t.shape, t.data, t.nbytes);
  for (const ExtraArray& a : extra) {
    w.add(a.name, DType::kF32, {static_cast<int64_t>(a.values.size())}, a.values.data(), a.values.size() * sizeof(float));
    m["arrays"][a.name] = {{"dtype", "F32"}, {"shape", a.shape}, {"xxh3", xxh3_128(a.values.data(), a.values.size() * 4).hex()}};
  }
  w.write(dir.file("arrays.safetensors"));
  m["data_file"] = "arrays.safetensors";
  loader_test::write_bytes(dir.file("manifest.json"), m.dump(1));
}

const ArrayCheck* array_check(const DumpValidation& v, const std::string& name) {
  for (const auto& a : v.arrays)
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace

TEST_CASE("reference dumps may carry boundaries: round trip, older dumps without them, hostile shapes", "[parity][dump]") {
  const Model& model = tiny();
  const ModelConfig& cfg = model.config();
  const std::string old_dir = std::string(MEMRA_FIXTURES) + "/tiny/dump";
  const ReferenceDump old_dump = ReferenceDump::open(old_dir);
  const int64_t T = old_dump.tokens();
  const auto optional = optional_dump_shapes(cfg, T);
  CHECK(optional.count("indexer.1.boundary"));
  CHECK(optional.count("router.1.boundary"));
  CHECK_FALSE(optional.count("router.0.boundary"));  // a hash layer
  CHECK_FALSE(optional.count("indexer.2.boundary"));  // HCA: no indexer

  SECTION("a dump made before boundaries validates and reads, its boundaries unknown") {
    const DumpValidation v = old_dump.validate(cfg);
    CHECK_FALSE(v.refused);
    CHECK(array_check(v, "indexer.1.boundary") == nullptr);  // not listed as missing or unexpected
    CHECK(old_dump.optional_f32("indexer.1.boundary").empty());
  }
  SECTION("a dump with every boundary: validated, read back as written, and parity uses them") {
    TempDir dir;
    std::vector<ExtraArray> extra;
    for (const auto& [name, shape] : optional) {
      std::vector<float> v(T);
      for (int64_t t = 0; t < T; ++t) v[t] = 0.001f * static_cast<float>(t) + (name[0] == 'i' ? 0.5f : 0.25f);
      extra.push_back({name, shape, v});
    }
    write_dump_with(dir, extra);
    const ReferenceDump d = ReferenceDump::open(dir.path.string());
    const DumpValidation v = d.validate(cfg);
    CHECK(v.reasons.empty());
    CHECK_FALSE(v.refused);
    for (const ExtraArray& a : extra) {
      CAPTURE(a.name);
      REQUIRE(array_check(v, a.name) != nullptr);
      CHECK(array_check(v, a.name)->status == "ok");
      CHECK(d.optional_f32(a.name) == a.values);
    }
    auto backend = make_cpu_backend(model);
    const ParityRun run = run_parity(model, *backend, std::string(MEMRA_FIXTURES) + "/tiny", dir.path.string(),
                                     {"router", "indexer"});
    CHECK(run.result == "PASS");
  }
  SECTION("a boundary whose length is not the dump's rows is REFUSED, naming it") {
    TempDir dir;
    write_dump_with(dir, {{"indexer.1.boundary", {T + 1}, std::vector<float>(T + 1, 0.0f)}});
    const DumpValidation v = ReferenceDump::open(dir.path.string()).validate(cfg);
    CHECK(v.refused);
    REQUIRE(array_check(v, "indexer.1.boundary") != nullptr);
    CHECK(array_check(v, "indexer.1.boundary")->status == "DISAGREE");
    bool named = false;
    for (const auto& r : v.reasons)
      named = named || (r.find("indexer.1.boundary") != std::string::npos &&
                        r.find("config predicts [" + std::to_string(T) + "]") != std::string::npos);
    CHECK(named);
  }
  SECTION("a boundary whose manifest claims the right shape over a shorter array is REFUSED") {
    TempDir dir;
    write_dump_with(dir, {{"router.3.boundary", {T}, std::vector<float>(T - 1, 0.0f)}});
    const DumpValidation v = ReferenceDump::open(dir.path.string()).validate(cfg);
    CHECK(v.refused);
    REQUIRE(array_check(v, "router.3.boundary") != nullptr);
    CHECK(array_check(v, "router.3.boundary")->status == "DISAGREE");
  }
}
