// memra parity MODEL DUMP: manifest-first trunk parity against an oracle dump (docs/parity.md). The
// geometry the dump was computed under is checked field by field before any value is compared
// (REFUSED, exit 1, on any disagreement or a missing array or compute dtype, with what to do about
// it); then every stage is compared: per-layer hc streams, router and indexer decisions (flips
// judged by both sides' margins), logits with top-1 agreement, and the incremental (decode)
// logits, each with the rows it compared. ALL PASS → exit 0; a stage below its floor of compared
// rows → INCONCLUSIVE, exit 1.
// With --drafter DIR: drafter parity (lib/parity/drafter_parity.h) against a drafter dump; the
// trunk folder is then optional (it adds the embedding and LM-head stages).
#include <iostream>
#include <set>

#include "backend_option.h"
#include "command.h"
#include "core/error.h"
#include "drafter/drafter_weights.h"
#include "engine/engine.h"
#include "model/model.h"
#include "parity/drafter_parity.h"
#include "parity/parity_run.h"

namespace memra::cli {

struct ParityOptions {
  std::string model_dir;
  std::string dump_dir;
  std::vector<std::string> stages;
  std::string drafter_dir;
  bool json = false;
  bool verbose = false;
  BackendChoice backend;
};

static void print_geometry_summary(const DumpValidation& v) {
  int agree = 0;
  std::string absent;
  for (const auto& g : v.geometry) {
    if (g.status == "agree") ++agree;
    if (g.status == "absent") absent += " " + g.field;
  }
  std::cout << "[parity] geometry: " << agree << " fields agree";
  if (!absent.empty()) std::cout << ", absent (optional):" << absent;
}

static int run_drafter_parity_command(const ParityOptions& opt, const Context& ctx) {
  DrafterWeights drafter = DrafterWeights::load(opt.drafter_dir);
  std::unique_ptr<Model> trunk;
  if (!opt.model_dir.empty()) trunk = std::make_unique<Model>(Model::load(opt.model_dir));
  note(ctx, "comparing " + opt.dump_dir + " with the " + drafter_family_name(drafter.config().family) + " drafter " +
                opt.drafter_dir + (trunk ? " and the trunk " + opt.model_dir : std::string(" (no trunk: the embedding and LM-head stages are left out)")));
  DrafterParityRun run = run_drafter_parity(drafter, opt.dump_dir, trunk.get());
  if (opt.json) {
    std::cout << run.report.dump(2) << "\n";
  } else if (run.result == "REFUSED") {
    const auto& reasons = run.validation.reasons;
    std::cout << "[parity] REFUSED " << reasons.front() << "\n";
    for (size_t i = 1; i < reasons.size(); ++i) std::cout << "  also: " << reasons[i] << "\n";
    std::cout << "  regenerate: " << run.validation.regenerate << "\n";
  } else {
    print_geometry_summary(run.validation);
    std::cout << "\n[parity] harvest " << harvest_name(*run.validation.harvest) << " (from the "
              << run.validation.harvest_source << "), ctx " << run.validation.ctx << "\n";
    for (const auto& s : run.skipped) std::cout << "[parity] not compared: " << s << "\n";
    std::cout << "[parity] precision class " << run.tolerance.precision_class << ", tolerance rel_to_max "
              << run.tolerance.rel_to_max << "\n";
    for (const auto& s : run.stages) std::cout << "  " << s.line() << "\n";
    std::cout << (run.result == "PASS" ? "[parity] ALL PASS" : "[parity] FAIL") << "\n";
  }
  return run.result == "PASS" ? kExitOk : kExitNegative;
}

static int run_parity_command(const ParityOptions& opt, const Context& ctx) {
  if (!opt.drafter_dir.empty()) return run_drafter_parity_command(opt, ctx);
  Model model = Model::load(opt.model_dir);
  auto backend = make_backend(opt.backend, model);
  note(ctx, "comparing " + opt.dump_dir + " on the " + backend->name() + " backend");
  const std::set<std::string> stages(opt.stages.begin(), opt.stages.end());
  ParityRun run = run_parity(model, *backend, opt.model_dir, opt.dump_dir, stages);
  if (opt.json) {
    std::cout << run.report.dump(2) << "\n";
  } else if (run.result == "REFUSED") {
    const auto& reasons = run.validation.reasons;
    std::cout << "[parity] REFUSED " << reasons.front() << "\n";
    for (size_t i = 1; i < reasons.size(); ++i) std::cout << "  also: " << reasons[i] << "\n";
    std::cout << "  hint: " << run.hint << "\n";
  } else {
    int agree = 0;
    std::string absent;
    for (const auto& g : run.validation.geometry) {
      if (g.status == "agree") ++agree;
      if (g.status == "absent") absent += " " + g.field;
    }
    std::cout << "[parity] geometry: " << agree << " fields agree";
    if (!absent.empty()) std::cout << ", absent (optional):" << absent;
    if (!stages.empty()) std::cout << "\n[parity] stages narrowed by --stages to: " << run.report["compared_stages"].dump();
    if (run.report.contains("compared_before_position"))
      std::cout << "\n[parity] in-band decision flip at position " << run.report["compared_before_position"].get<int64_t>()
                << ": values are compared on the positions before it";
    std::cout << "\n[parity] precision class " << run.tolerance.precision_class << ", tolerance rel_to_max "
              << run.tolerance.rel_to_max << "\n";
    for (const auto& s : run.stages)
      if (opt.verbose || s.verdict() != "PASS" || (s.kind == "values" && s.name.rfind("logits", 0) == 0) || !s.flips.empty())
        std::cout << "  " << s.line() << "\n";
    if (!opt.verbose) std::cout << "  (" << run.stages.size() << " stages; -v lists every stage)\n";
    if (run.result == "PASS") std::cout << "[parity] ALL PASS\n";
    else if (run.result == "INCONCLUSIVE")
      std::cout << "[parity] INCONCLUSIVE: a stage compared fewer rows than its floor (half its rows); nothing failed, "
                   "but too little was compared to pass\n";
    else std::cout << "[parity] FAIL (first failing stage in causal order: " << run.first_failing_stage << ")\n";
  }
  return run.result == "PASS" ? kExitOk : kExitNegative;
}

void setup_parity(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<ParityOptions>();
  auto* sub = app.add_subcommand("parity", "Compare the engine with an oracle dump, manifest first (REFUSED on geometry mismatch)");
  sub->add_option("model", opt->model_dir, "Model folder (the authority); with --drafter, the trunk (optional)")
      ->check(CLI::ExistingDirectory);
  sub->add_option("dump", opt->dump_dir, "Reference dump folder (manifest.json + arrays)");
  sub->add_option("--drafter", opt->drafter_dir,
                  "Drafter folder (the authority): compare a drafter dump (tools/oracle/dump_drafter.py) instead")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--stages", opt->stages,
                  "Compare only these stage families (comma list of hidden, router, indexer, logits, logits_incremental); "
                  "default all, and a dump lacking any of them is REFUSED")
      ->delimiter(',')
      ->check(CLI::IsMember({"hidden", "router", "indexer", "logits", "logits_incremental"}));
  add_backend_options(sub, opt->backend);
  sub->add_flag("--json", opt->json, "Print the report as JSON (manifests/report.schema.json)");
  sub->add_flag("-v,--verbose", opt->verbose, "List every stage, not only failures and logits");
  sub->footer("Usage: memra parity MODEL DUMP | memra parity [TRUNK] --drafter DIR DUMP.\n"
              "Exit status: 0 ALL PASS, 1 FAIL, INCONCLUSIVE or REFUSED, 2 error.");
  sub->callback([opt, &ctx] {
    // With --drafter a single positional is the dump (the trunk is optional).
    if (!opt->drafter_dir.empty() && opt->dump_dir.empty()) std::swap(opt->model_dir, opt->dump_dir);
    if (opt->dump_dir.empty())
      throw CLI::ValidationError("parity", opt->drafter_dir.empty() ? "give MODEL and DUMP" : "give the DUMP folder");
    ctx.run = [opt, &ctx] { return run_parity_command(*opt, ctx); };
  });
}

}  // namespace memra::cli
