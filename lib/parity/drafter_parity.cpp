// Drafter parity orchestration (see drafter_parity.h).
#include "parity/drafter_parity.h"

#include <algorithm>

#include "core/error.h"
#include "drafter/dflash_forward.h"
#include "drafter/dspark_forward.h"
#include "drafter/markov.h"
#include "engine/cpu_ops.h"

namespace memra {

namespace {

nlohmann::json validation_json(const DumpValidation& v) {
  nlohmann::json g = nlohmann::json::array(), a = nlohmann::json::array();
  for (const auto& c : v.geometry)
    g.push_back({{"field", c.field}, {"status", c.status}, {"config", c.config_value}, {"dump", c.dump_value}});
  for (const auto& c : v.arrays) a.push_back({{"name", c.name}, {"status", c.status}, {"detail", c.detail}});
  return {{"geometry", g}, {"arrays", a}};
}

std::vector<float> rows_of(const std::vector<float>& x, int64_t first, int64_t count, int64_t width) {
  return {x.begin() + first * width, x.begin() + (first + count) * width};
}

template <typename T>
std::vector<float> as_floats(const std::vector<T>& v) {
  return {v.begin(), v.end()};
}

// A value stage, with the DSpark stage whose router decisions it depends on (-1: none).
struct ValueStage {
  std::string name;
  std::vector<float> got, want;
  int64_t top1_width;
  int64_t after_stage;
};

}  // namespace

DrafterParityRun run_drafter_parity(const DrafterWeights& dw, const std::string& dump_dir, const Model* trunk) {
  const DrafterConfig& c = dw.config();
  DrafterDump dump = DrafterDump::open(dump_dir);
  DrafterParityRun run;
  run.validation = dump.validate(c);
  if (trunk) {
    const ModelConfig& tc = trunk->config();
    if (tc.vocab_size != c.vocab_size || tc.hidden_size != c.hidden_size)
      run.validation.reasons.push_back("the trunk's vocab/hidden " + std::to_string(tc.vocab_size) + "/" +
                                       std::to_string(tc.hidden_size) + " differ from the drafter's " +
                                       std::to_string(c.vocab_size) + "/" + std::to_string(c.hidden_size));
    for (int64_t j : c.tap_layer_inputs)
      if (j >= tc.num_hidden_layers)
        run.validation.reasons.push_back("the drafter taps the input of trunk layer " + std::to_string(j) +
                                         "; the trunk has " + std::to_string(tc.num_hidden_layers) + " layers");
    run.validation.refused = !run.validation.reasons.empty();
  }
  run.tolerance = tolerance_for(realization("cpu"), dump.compute_dtype());
  const Tolerance& tol = run.tolerance;
  nlohmann::json& report = run.report;
  report = {{"schema", "memra.report/1"}, {"command", "parity"}, {"name", "parity-drafter"},
            {"model", dw.dir()},          {"drafter", dw.dir()},  {"family", drafter_family_name(c.family)},
            {"dump", dump_dir},           {"fingerprint", dw.fingerprint().hex()},
            {"precision_class", tol.precision_class},
            {"tolerance", {{"rel_to_max", tol.rel_to_max}, {"decision_band", tol.decision_band}}}};
  if (trunk) {
    report["trunk"] = trunk->dir();
    report["trunk_fingerprint"] = trunk->fingerprint().hex();
  }
  report["validation"] = validation_json(run.validation);
  if (run.validation.refused) {
    run.result = "REFUSED";
    report["result"] = run.result;
    report["reasons"] = run.validation.reasons;
    report["regenerate"] = run.validation.regenerate;
    return run;
  }
  const Harvest harvest = *run.validation.harvest;
  // The stage families this comparison covers (manifests/report.schema.json, compared_stages).
  std::vector<std::string> compared = {"ctx_features"};
  if (c.family == DrafterFamily::kDspark) compared.insert(compared.end(), {"ring", "router"});
  compared.insert(compared.end(), {"hidden", "prenorm", "final"});
  if (trunk) compared.insert(compared.end(), {"embeddings", "draft_logits"});
  if (c.has_markov()) compared.push_back("markov");
  compared.push_back("draft_tokens");
  if (c.confidence) compared.push_back("confidence");
  report["compared_stages"] = compared;
  report["harvest"] = harvest_name(harvest);
  report["harvest_source"] = run.validation.harvest_source;
  report["ctx"] = run.validation.ctx;

  const int64_t ctx = run.validation.ctx, b = c.block_size, D = c.hidden_size, V = c.vocab_size;
  const int64_t nd = harvest_drafts(harvest, b), r0 = harvest_first_row(harvest);
  const std::vector<float> taps = dump.f32("taps"), emb = dump.f32("block_embeddings");
  const std::vector<int64_t> block_ids = dump.ints("block_ids");
  for (int64_t id : block_ids)
    if (id < 0 || id >= V)
      throw Error("dump block id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(V) + ")",
                  "regenerate the dump: " + run.validation.regenerate);
  const int64_t anchor = block_ids[0];

  std::vector<StageResult> decisions;  // in order; router stages carry their stage index
  std::vector<int64_t> decision_stage;
  std::vector<ValueStage> values;
  std::vector<int64_t> expect_ids(b, c.noise_token_id);
  expect_ids[0] = anchor;
  decisions.push_back(compare_decisions("block_ids", {as_floats(expect_ids)}, {as_floats(block_ids)}, 1, tol.decision_band));
  decision_stage.push_back(-1);

  std::vector<float> ctx_features(ctx * D), prenorm, final;
  const std::string last_stage = std::to_string(c.num_layers - 1);
  if (c.family == DrafterFamily::kDspark) {
    DsparkWeights w(dw);
    dspark_main_x(w, taps.data(), ctx, ctx_features.data());
    values.push_back({"ctx_features", ctx_features, dump.f32("ctx_features"), 0, -1});
    DsparkRings rings = make_dspark_rings(c);
    dspark_ring_append(w, rings, ctx_features.data(), ctx);
    for (int64_t s = 0; s < c.num_layers; ++s) {
      const std::string S = "stage." + std::to_string(s) + ".";
      values.push_back({S + "ring", dspark_ring_window(c, rings, s), dump.f32(S + "ring"), 0, -1});
    }
    ForwardTrace trace;
    DsparkBlock blk = dspark_block(w, rings, emb.data(), b, &trace);
    for (int64_t s = 0; s < c.num_layers; ++s) {
      const std::string S = "stage." + std::to_string(s) + ".";
      decisions.push_back(compare_decisions(S + "router.experts",
                                            {trace.arrays[S + "router.experts"], trace.arrays[S + "router.margin"], {}},
                                            {as_floats(dump.ints(S + "router.experts")), dump.f32(S + "router.margin"), {}},
                                            c.num_experts_per_tok, tol.decision_band));
      decision_stage.push_back(s);
      values.push_back({S + "hidden", std::move(trace.arrays[S + "hidden"]), dump.f32(S + "hidden"), 0, s});
    }
    prenorm = std::move(blk.prenorm);
    final = std::move(blk.final);
  } else {
    DflashWeights w(dw);
    dflash_ctx_features(w, taps.data(), ctx, ctx_features.data());
    values.push_back({"ctx_features", ctx_features, dump.f32("ctx_features"), 0, -1});
    DflashContext context = make_dflash_context(c);
    dflash_context_append(w, context, ctx_features.data(), ctx);
    ForwardTrace trace;
    DflashBlock blk = dflash_block(w, context, emb.data(), b, &trace);
    for (int64_t l = 0; l < c.num_layers; ++l) {
      const std::string L = "layer." + std::to_string(l) + ".hidden";
      values.push_back({L, std::move(trace.arrays[L]), dump.f32(L), 0, -1});
    }
    prenorm = std::move(blk.prenorm);
    final = std::move(blk.final);
  }
  const int64_t after_all = c.family == DrafterFamily::kDspark ? c.num_layers - 1 : -1;
  values.push_back({"prenorm", prenorm, dump.f32("prenorm"), 0, after_all});
  values.push_back({"final", final, dump.f32("final"), 0, after_all});
  if (trunk) {
    const float* embed = trunk->f32("embed.weight");
    std::vector<float> got(b * D);
    for (int64_t t = 0; t < b; ++t) std::copy(embed + block_ids[t] * D, embed + (block_ids[t] + 1) * D, got.begin() + t * D);
    values.push_back({"block_embeddings", got, emb, 0, -1});
    std::vector<float> logits(nd * V);
    cpu::linear(final.data() + r0 * D, nd, D, trunk->f32("head.weight"), V, logits.data());
    values.push_back({"draft_logits", logits, dump.f32("base_logits"), V, after_all});
  }

  // Heads: the Markov chain over the dump's base logits isolates it from the LM head.
  const DrafterHeads heads = DrafterHeads::bind(dw);
  const std::vector<float> base = dump.f32("base_logits");
  std::vector<int32_t> drafts;
  if (c.has_markov()) {
    MarkovChain chain = markov_chain(heads, base, nd, static_cast<int32_t>(anchor));
    decisions.push_back(compare_decisions("markov_tokens", {as_floats(chain.tokens)}, {as_floats(dump.ints("markov_tokens"))}, 1,
                                          tol.decision_band));
    decision_stage.push_back(-1);
    values.push_back({"markov_logits", chain.logits, dump.f32("markov_logits"), V, -1});
    drafts = std::move(chain.tokens);
  } else {
    drafts = argmax_rows(base, nd, V);
  }
  decisions.push_back(compare_decisions("draft_tokens", {as_floats(drafts)}, {as_floats(dump.ints("draft_tokens"))}, 1, tol.decision_band));
  decision_stage.push_back(-1);
  if (c.confidence) {
    std::vector<int32_t> prev(nd);
    prev[0] = static_cast<int32_t>(anchor);
    for (int64_t k = 1; k < nd; ++k) prev[k] = drafts[k - 1];
    const std::vector<float>& hidden = c.confidence_input == "prenorm" ? prenorm : final;
    values.push_back({"confidence", confidence_logits(heads, rows_of(hidden, r0, nd, D), prev), dump.f32("confidence"), 0,
                      after_all});
  }

  // An in-band router flip at stage s legitimately changes everything computed after it.
  int64_t flip_stage = -1;
  for (size_t i = 0; i < decisions.size(); ++i)
    for (const Flip& f : decisions[i].flips)
      if (f.in_band && decision_stage[i] >= 0 && (flip_stage < 0 || decision_stage[i] < flip_stage))
        flip_stage = decision_stage[i];
  for (auto& v : values) {
    if (flip_stage >= 0 && v.after_stage >= flip_stage) {
      run.skipped.push_back(v.name + " (after an in-band router flip at stage " + std::to_string(flip_stage) + ")");
      continue;
    }
    StageResult r = compare_values(v.name, v.got, v.want, tol.rel_to_max, v.top1_width);
    r.rows = v.top1_width > 0 ? static_cast<int64_t>(v.want.size()) / v.top1_width : 0;
    run.stages.push_back(std::move(r));
  }
  for (size_t i = 0; i < decisions.size(); ++i)
    if (flip_stage < 0 || decision_stage[i] <= flip_stage) run.stages.push_back(decisions[i]);
  if (!run.skipped.empty()) report["skipped"] = run.skipped;
  bool all_pass = true;
  nlohmann::json sj = nlohmann::json::array();
  for (const auto& s : run.stages) {
    all_pass = all_pass && s.pass;
    sj.push_back(s.to_json());
  }
  report["stages"] = sj;
  run.result = all_pass ? "PASS" : "FAIL";
  report["result"] = run.result;
  return run;
}

}  // namespace memra
