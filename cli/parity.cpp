// memra parity MODEL DUMP: manifest-first trunk parity against an oracle dump. The geometry the
// dump was computed under is checked field by field before any value is compared (REFUSED, exit 1,
// on any disagreement, with the command that regenerates the dump); then every stage is compared:
// per-layer hc streams, router and indexer decisions (flips judged by the reference's margin),
// logits with top-1 agreement, and the incremental (decode) logits. ALL PASS → exit 0.
#include <iostream>

#include <nlohmann/json.hpp>

#include "command.h"
#include "core/error.h"
#include "engine/engine.h"
#include "model/model.h"
#include "parity/compare.h"
#include "parity/dump.h"
#include "progress.h"

namespace memra::cli {

struct ParityOptions {
  std::string model_dir;
  std::string dump_dir;
  bool json = false;
  bool verbose = false;
};

static nlohmann::json validation_json(const DumpValidation& v) {
  nlohmann::json g = nlohmann::json::array(), a = nlohmann::json::array();
  for (const auto& c : v.geometry)
    g.push_back({{"field", c.field}, {"status", c.status}, {"config", c.config_value}, {"dump", c.dump_value}});
  for (const auto& c : v.arrays) a.push_back({{"name", c.name}, {"status", c.status}, {"detail", c.detail}});
  return {{"geometry", g}, {"arrays", a}};
}

static int run_parity(const ParityOptions& opt, const Context& ctx) {
  Model model = Model::load(opt.model_dir);
  const ModelConfig& cfg = model.config();
  ReferenceDump dump = ReferenceDump::open(opt.dump_dir);
  DumpValidation v = dump.validate(cfg);
  auto backend = make_cpu_backend(model);
  const Tolerance tol = tolerance_for(backend->precision_class(), dump.compute_dtype());

  nlohmann::json report = {{"schema", "memra.report/1"}, {"command", "parity"}, {"name", "parity"},
                           {"model", opt.model_dir},     {"dump", opt.dump_dir},  {"fingerprint", model.fingerprint().hex()},
                           {"precision_class", tol.precision_class},
                           {"tolerance", {{"rel_to_max", tol.rel_to_max}, {"decision_band", tol.decision_band}}}};
  report["validation"] = validation_json(v);
  int absent = 0, agree = 0;
  for (const auto& g : v.geometry) {
    if (g.status == "absent") ++absent;
    if (g.status == "agree") ++agree;
  }
  if (v.refused) {
    report["result"] = "REFUSED";
    report["reasons"] = v.reasons;
    report["regenerate"] = v.regenerate;
    if (opt.json) {
      std::cout << report.dump(2) << "\n";
    } else {
      std::cout << "[parity] REFUSED " << v.reasons.front() << "\n";
      for (size_t i = 1; i < v.reasons.size(); ++i) std::cout << "  also: " << v.reasons[i] << "\n";
      std::cout << "  regenerate: " << v.regenerate << "\n";
    }
    return kExitNegative;
  }

  // Values: one-shot forward with a trace of every stage.
  const int64_t T = dump.tokens(), V = cfg.vocab_size;
  std::vector<int64_t> ids = dump.ints("tokens");
  std::vector<int32_t> tokens(ids.begin(), ids.end());
  for (int64_t t = 0; t < T; ++t)
    if (ids[t] < 0 || ids[t] >= V) throw Error("dump token " + std::to_string(ids[t]) + " at " + std::to_string(t) + " is outside the vocabulary");
  DecodeState state = backend->new_state(T);
  std::vector<float> logits(T * V);
  ForwardTrace trace;
  note(ctx, "running " + std::to_string(T) + " tokens on " + backend->name());
  backend->forward(state, tokens, logits.data(), &trace);

  std::vector<StageResult> stages;
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
    const std::string L = std::to_string(l);
    if (dump.has("hidden." + L)) stages.push_back(compare_values("hidden." + L, trace.arrays["hidden." + L], dump.f32("hidden." + L), tol.rel_to_max));
    const std::string re = "router." + L + ".experts", rm = "router." + L + ".margin";
    if (dump.has(re))
      stages.push_back(compare_decisions(re, trace.arrays[re], dump.ints(re), cfg.num_experts_per_tok,
                                         dump.has(rm) ? dump.f32(rm) : std::vector<float>{}, tol.decision_band));
    const std::string is = "indexer." + L + ".selected", im = "indexer." + L + ".margin";
    if (dump.has(is))
      stages.push_back(compare_decisions(is, trace.arrays[is], dump.ints(is), cfg.index_topk,
                                         dump.has(im) ? dump.f32(im) : std::vector<float>{}, tol.decision_band));
  }
  stages.push_back(compare_values("logits", logits, dump.f32("logits"), tol.rel_to_max, V));
  if (dump.has("logits_incremental") && dump.incremental_prefix() > 0) {
    const int64_t P = dump.incremental_prefix();
    DecodeState inc = backend->new_state(T);
    prefill(*backend, inc, std::span<const int32_t>(tokens).first(P), 0, nullptr);
    std::vector<float> rows;
    Progress progress("decode", ctx.quiet);
    for (int64_t t = P; t < T; ++t) {
      std::vector<float> row = decode_step(*backend, inc, tokens[t]);
      rows.insert(rows.end(), row.begin(), row.end());
      progress.update(t - P + 1, T - P);
    }
    progress.finish();
    stages.push_back(compare_values("logits_incremental", rows, dump.f32("logits_incremental"), tol.rel_to_max, V));
  }

  bool all_pass = true;
  nlohmann::json sj = nlohmann::json::array();
  for (const auto& s : stages) {
    all_pass = all_pass && s.pass;
    sj.push_back(s.to_json());
  }
  report["stages"] = sj;
  report["result"] = all_pass ? "PASS" : "FAIL";
  if (opt.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << "[parity] geometry: " << agree << " fields agree";
    if (absent) {
      std::cout << ", absent (optional):";
      for (const auto& g : v.geometry)
        if (g.status == "absent") std::cout << " " << g.field;
    }
    std::cout << "\n[parity] precision class " << tol.precision_class << ", tolerance rel_to_max " << tol.rel_to_max << "\n";
    for (const auto& s : stages)
      if (opt.verbose || !s.pass || (s.kind == "values" && s.name.rfind("logits", 0) == 0) || !s.flips.empty())
        std::cout << "  " << s.line() << "\n";
    if (!opt.verbose) std::cout << "  (" << stages.size() << " stages; -v lists every stage)\n";
    std::cout << (all_pass ? "[parity] ALL PASS" : "[parity] FAIL") << "\n";
  }
  return all_pass ? kExitOk : kExitNegative;
}

void setup_parity(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<ParityOptions>();
  auto* sub = app.add_subcommand("parity", "Compare the engine with an oracle dump, manifest first (REFUSED on geometry mismatch)");
  sub->add_option("model", opt->model_dir, "Model folder (the authority)")->required()->check(CLI::ExistingDirectory);
  sub->add_option("dump", opt->dump_dir, "Reference dump folder (manifest.json + arrays)")->required();
  sub->add_flag("--json", opt->json, "Print the report as JSON (manifests/report.schema.json)");
  sub->add_flag("-v,--verbose", opt->verbose, "List every stage, not only failures and logits");
  sub->footer("Exit status: 0 ALL PASS, 1 FAIL or REFUSED, 2 error.");
  sub->callback([opt, &ctx] { ctx.run = [opt, &ctx] { return run_parity(*opt, ctx); }; });
}

}  // namespace memra::cli
