// Parity orchestration: manifest-first validation, one traced one-shot forward, an incremental
// (decode) run, and stage-by-stage comparison.
#include "parity/parity_run.h"

#include <algorithm>

#include "core/checked.h"
#include "core/error.h"
#include "engine/memory_plan.h"
#include "engine/engine.h"

namespace memra {

static nlohmann::json validation_json(const DumpValidation& v) {
  nlohmann::json g = nlohmann::json::array(), a = nlohmann::json::array();
  for (const auto& c : v.geometry)
    g.push_back({{"field", c.field}, {"status", c.status}, {"config", c.config_value}, {"dump", c.dump_value}});
  for (const auto& c : v.arrays) a.push_back({{"name", c.name}, {"status", c.status}, {"detail", c.detail}});
  return {{"geometry", g}, {"arrays", a}};
}

ParityRun run_parity(const Model& model, const Backend& backend, const std::string& model_dir, const std::string& dump_dir,
                     const std::set<std::string>& stages) {
  for (const auto& s : stages)
    if (std::find(kStageFamilies.begin(), kStageFamilies.end(), s) == kStageFamilies.end())
      throw Error("unknown parity stage '" + s + "'", "stages are hidden, router, indexer, logits, logits_incremental");
  auto wanted = [&](const std::string& family) { return stages.empty() || stages.count(family) > 0; };
  const ModelConfig& cfg = model.config();
  ReferenceDump dump = ReferenceDump::open(dump_dir);
  ParityRun run;
  run.validation = dump.validate(cfg, stages);
  // A dump made with the QAT simulations compares only with a backend running them, and vice versa.
  if (dump.qat() != backend.qat()) {
    run.validation.refused = true;
    run.validation.reasons.push_back(dump.qat() ? "the dump was made with the QAT simulations (dump_reference.py --qat); add --qat"
                                                : "the backend runs the QAT simulations (--qat); the dump was made without them");
  }
  run.tolerance = tolerance_for(backend.realization(), dump.compute_dtype());
  const Tolerance& tol = run.tolerance;
  nlohmann::json& report = run.report;
  report = {{"schema", "memra.report/1"}, {"command", "parity"}, {"name", "parity"},
            {"model", model_dir},         {"dump", dump_dir},      {"fingerprint", model.fingerprint().hex()},
            {"precision_class", tol.precision_class},
            {"tolerance", {{"rel_to_max", tol.rel_to_max}, {"decision_band", tol.decision_band}}}};
  nlohmann::json compared = nlohmann::json::array();
  for (const auto& f : kStageFamilies)
    if (wanted(f)) compared.push_back(f);
  report["compared_stages"] = compared;
  report["validation"] = validation_json(run.validation);
  if (run.validation.refused) {
    run.result = "REFUSED";
    std::string regenerate = run.validation.regenerate;
    if (run.validation.geometry_disagrees) {
      // The dump is not broken, it belongs to another model: regenerating it would not help.
      const nlohmann::json& m = dump.manifest();
      const int64_t seed = m.contains("seed") && m["seed"].is_number_integer() ? m["seed"].get<int64_t>() : 1;
      regenerate = "\"$(tools/oracle/setup-venv.sh)\" tools/oracle/dump_reference.py " + model_dir + " --out DIR --tokens " +
                   std::to_string(dump.tokens()) + " --seed " + std::to_string(seed);
      run.hint = "this dump was made for another geometry: compare it with the model it was made from, or make a dump of " +
                 model_dir + " with: " + regenerate;
    } else {
      run.hint = "regenerate the dump: " + regenerate;
    }
    report["result"] = run.result;
    report["reasons"] = run.validation.reasons;
    report["regenerate"] = regenerate;
    report["hint"] = run.hint;
    return run;
  }

  const int64_t T = dump.tokens(), V = cfg.vocab_size;
  std::vector<int64_t> ids = dump.ints("tokens");
  for (int64_t t = 0; t < T; ++t)
    if (ids[t] < 0 || ids[t] >= V)
      throw Error("dump token " + std::to_string(ids[t]) + " at " + std::to_string(t) + " is outside the vocabulary");
  std::vector<int32_t> tokens(ids.begin(), ids.end());
  RunShape shape;  // the full pass with traces, then the incremental one
  shape.capacity = shape.chunk = T;
  shape.states = 2;
  shape.chunk_logits = true;
  shape.logits_rows = T;
  shape.device = backend.realization().device;
  shape.other_bytes = mul_checked(mul_checked(static_cast<uint64_t>(T), static_cast<uint64_t>(cfg.num_hidden_layers), "parity traces"),
                                  static_cast<uint64_t>(cfg.hc_mult * cfg.hidden_size + 2 * cfg.num_experts_per_tok + cfg.index_topk + 6) * sizeof(float),
                                  "parity traces");
  require_fits(plan_memory(cfg, shape, model_resident_bytes(model, shape.device)), default_memory_limit(),
               "parity over the dump's " + std::to_string(T) + " tokens");
  std::unique_ptr<State> state = backend.new_state(T);
  std::vector<float> logits(T * V);
  ForwardTrace trace;
  const SequenceStep step{state.get(), tokens, logits.data(), &trace};
  backend.forward(std::span<const SequenceStep>(&step, 1));

  // Decisions first: an in-band flip (a near-tie the two realizations legitimately break
  // differently) changes everything causally downstream of it, so values are compared only before
  // the first such position (docs/parity.md). Every decision the dump has takes part in finding
  // that position, also when --stages leaves it out of the report.
  struct ValueStage {
    std::string name;
    std::vector<float> got, want;
    int64_t row_width;   // values per position
    int64_t first_row;   // position of row 0 (logits_incremental starts at P)
    int64_t top1_width;  // > 0: report top-1 agreement over rows of this width
  };
  std::vector<ValueStage> values;
  std::vector<StageResult> decisions;  // every decision stage the dump has
  std::vector<bool> judged;            // … and whether it is one the run reports
  // The band of a row scales with the engine's traced scale (dumps carry no scale; both sides'
  // largest |score| agree to within the drift the band allows). Boundaries (a tie on both sides,
  // flip_in_band) come from the engine's trace and, where the dump carries them, the dump.
  auto add_decisions = [&](const std::string& family, const std::string& prefix, const std::string& sel, int64_t k) {
    if (!dump.has(prefix + sel)) return;  // validation refused this when the family is wanted
    const std::string margin = prefix + "margin";
    const std::vector<int64_t> ref = dump.ints(prefix + sel);
    decisions.push_back(compare_decisions(prefix + sel,
                                          {trace.arrays[prefix + sel], trace.arrays[margin], trace.arrays[prefix + "scale"],
                                           trace.arrays[prefix + "boundary"]},
                                          {std::vector<float>(ref.begin(), ref.end()),
                                           dump.has(margin) ? dump.f32(margin) : std::vector<float>{}, {},
                                           dump.optional_f32(prefix + "boundary")},
                                          k, tol.decision_band));
    judged.push_back(wanted(family));
  };
  const int64_t nD = cfg.hc_mult * cfg.hidden_size;
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
    const std::string L = std::to_string(l);
    if (wanted("hidden"))
      values.push_back({"hidden." + L, std::move(trace.arrays["hidden." + L]), dump.f32("hidden." + L), nD, 0, 0});
    add_decisions("router", "router." + L + ".", "experts", cfg.num_experts_per_tok);
    if (cfg.layer_types[l] == LayerKind::kCSA)
      add_decisions("indexer", "indexer." + L + ".", "selected", cfg.index_topk);
  }
  if (wanted("logits")) values.push_back({"logits", std::move(logits), dump.f32("logits"), V, 0, V});
  if (wanted("logits_incremental")) {
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

  const InBandCut cut = first_in_band_flip(decisions);
  const int64_t t0 = cut.position;
  if (t0 >= 0) {
    for (auto& d : decisions) restrict_decisions(d, cut);
    report["compared_before_position"] = t0;
  }
  auto& out = run.stages;
  for (auto& v : values) {
    const int64_t rows_total = static_cast<int64_t>(v.want.size()) / v.row_width;
    int64_t rows = rows_total;
    if (t0 >= 0) rows = std::clamp<int64_t>(t0 - v.first_row, 0, rows);
    if (rows != rows_total) {
      v.got.resize(rows * v.row_width);
      v.want.resize(rows * v.row_width);
    }
    StageResult r = compare_values(v.name, v.got, v.want, tol.rel_to_max, v.top1_width);
    r.rows = rows;
    r.rows_total = rows_total;
    out.push_back(std::move(r));
  }
  for (size_t i = 0; i < decisions.size(); ++i)
    if (judged[i]) out.push_back(decisions[i]);
  if (out.empty()) throw Error("parity: no stage to compare", "name at least one stage with --stages");
  // The floor: a stage that compared fewer than half its rows proves too little to PASS.
  bool any_fail = false, any_inconclusive = false;
  nlohmann::json sj = nlohmann::json::array();
  for (auto& s : out) {
    s.min_rows = min_rows_compared(s.rows_total);
    any_fail = any_fail || s.verdict() == "FAIL";
    any_inconclusive = any_inconclusive || s.verdict() == "INCONCLUSIVE";
    sj.push_back(s.to_json());
  }
  report["stages"] = sj;
  run.result = any_fail ? "FAIL" : any_inconclusive ? "INCONCLUSIVE" : "PASS";
  // The first failing stage in causal order (causal_rank): where to look first.
  const StageResult* first = nullptr;
  for (const auto& s : out)
    if (s.verdict() == "FAIL" && (!first || causal_rank(s.name) < causal_rank(first->name))) first = &s;
  if (first) {
    run.first_failing_stage = first->name;
    report["first_failing_stage"] = first->name;
  }
  report["result"] = run.result;
  return run;
}

}  // namespace memra
