// Parity orchestration: manifest-first validation, one traced one-shot forward, an incremental
// (decode) run, and stage-by-stage comparison.
#include "parity/parity_run.h"

#include <algorithm>

#include "core/error.h"
#include "engine/engine.h"

namespace memra {

static nlohmann::json validation_json(const DumpValidation& v) {
  nlohmann::json g = nlohmann::json::array(), a = nlohmann::json::array();
  for (const auto& c : v.geometry)
    g.push_back({{"field", c.field}, {"status", c.status}, {"config", c.config_value}, {"dump", c.dump_value}});
  for (const auto& c : v.arrays) a.push_back({{"name", c.name}, {"status", c.status}, {"detail", c.detail}});
  return {{"geometry", g}, {"arrays", a}};
}

ParityRun run_parity(const Model& model, const Backend& backend, const std::string& model_dir, const std::string& dump_dir) {
  const ModelConfig& cfg = model.config();
  ReferenceDump dump = ReferenceDump::open(dump_dir);
  ParityRun run;
  run.validation = dump.validate(cfg);
  run.tolerance = tolerance_for(backend.realization(), dump.compute_dtype());
  const Tolerance& tol = run.tolerance;
  nlohmann::json& report = run.report;
  report = {{"schema", "memra.report/1"}, {"command", "parity"}, {"name", "parity"},
            {"model", model_dir},         {"dump", dump_dir},      {"fingerprint", model.fingerprint().hex()},
            {"precision_class", tol.precision_class},
            {"tolerance", {{"rel_to_max", tol.rel_to_max}, {"decision_band", tol.decision_band}}}};
  report["validation"] = validation_json(run.validation);
  if (run.validation.refused) {
    run.result = "REFUSED";
    report["result"] = run.result;
    report["reasons"] = run.validation.reasons;
    report["regenerate"] = run.validation.regenerate;
    return run;
  }

  const int64_t T = dump.tokens(), V = cfg.vocab_size;
  std::vector<int64_t> ids = dump.ints("tokens");
  for (int64_t t = 0; t < T; ++t)
    if (ids[t] < 0 || ids[t] >= V)
      throw Error("dump token " + std::to_string(ids[t]) + " at " + std::to_string(t) + " is outside the vocabulary");
  std::vector<int32_t> tokens(ids.begin(), ids.end());
  std::unique_ptr<State> state = backend.new_state(T);
  std::vector<float> logits(T * V);
  ForwardTrace trace;
  const SequenceStep step{state.get(), tokens, logits.data(), &trace};
  backend.forward(std::span<const SequenceStep>(&step, 1));

  // Decisions first: an in-band flip (a near-tie the two realizations legitimately break
  // differently) changes everything causally downstream of it, so values are compared only before
  // the first such position (docs/bands.md, "Parity tolerances").
  struct ValueStage {
    std::string name;
    std::vector<float> got, want;
    int64_t row_width;   // values per position
    int64_t first_row;   // position of row 0 (logits_incremental starts at P)
    int64_t top1_width;  // > 0: report top-1 agreement over rows of this width
  };
  std::vector<ValueStage> values;
  std::vector<StageResult> decisions;
  const int64_t nD = cfg.hc_mult * cfg.hidden_size;
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
    const std::string L = std::to_string(l);
    if (dump.has("hidden." + L))
      values.push_back({"hidden." + L, std::move(trace.arrays["hidden." + L]), dump.f32("hidden." + L), nD, 0, 0});
    const std::string re = "router." + L + ".experts", rm = "router." + L + ".margin";
    if (dump.has(re))
      decisions.push_back(compare_decisions(re, trace.arrays[re], dump.ints(re), cfg.num_experts_per_tok,
                                            dump.has(rm) ? dump.f32(rm) : std::vector<float>{}, tol.decision_band));
    const std::string is = "indexer." + L + ".selected", im = "indexer." + L + ".margin";
    if (dump.has(is))
      decisions.push_back(compare_decisions(is, trace.arrays[is], dump.ints(is), cfg.index_topk,
                                            dump.has(im) ? dump.f32(im) : std::vector<float>{}, tol.decision_band));
  }
  values.push_back({"logits", std::move(logits), dump.f32("logits"), V, 0, V});
  if (dump.has("logits_incremental") && dump.incremental_prefix() > 0) {
    const int64_t P = dump.incremental_prefix();
    std::unique_ptr<State> inc = backend.new_state(T);
    prefill(backend, *inc, std::span<const int32_t>(tokens).first(P), 0, nullptr);
    std::vector<float> rows;
    for (int64_t t = P; t < T; ++t) {
      std::vector<float> row = decode_step(backend, *inc, tokens[t]);
      rows.insert(rows.end(), row.begin(), row.end());
    }
    values.push_back({"logits_incremental", std::move(rows), dump.f32("logits_incremental"), V, P, V});
  }

  const int64_t t0 = first_in_band_flip(decisions);
  if (t0 >= 0) {
    for (auto& d : decisions) restrict_decisions(d, t0);
    report["compared_before_position"] = t0;
  }
  auto& stages = run.stages;
  for (auto& v : values) {
    int64_t rows = static_cast<int64_t>(v.want.size()) / v.row_width;
    if (t0 >= 0) rows = std::clamp<int64_t>(t0 - v.first_row, 0, rows);
    if (rows * v.row_width != static_cast<int64_t>(v.want.size())) {
      v.got.resize(rows * v.row_width);
      v.want.resize(rows * v.row_width);
    }
    StageResult r = compare_values(v.name, v.got, v.want, tol.rel_to_max, v.top1_width);
    r.rows = rows;
    stages.push_back(std::move(r));
  }
  stages.insert(stages.end(), decisions.begin(), decisions.end());
  bool all_pass = true;
  nlohmann::json sj = nlohmann::json::array();
  for (const auto& s : stages) {
    all_pass = all_pass && s.pass;
    sj.push_back(s.to_json());
  }
  report["stages"] = sj;
  run.result = all_pass ? "PASS" : "FAIL";
  report["result"] = run.result;
  return run;
}

}  // namespace memra
