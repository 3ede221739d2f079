// memra draft: a drafter paired with the model. Primes the drafter from a prompt (--tokens) or a
// state file that carries drafter state (--state), then either proposes one block (--propose) or
// generates speculatively (--steps) and compares with plain greedy decoding on the same
// realization: tokens (must be identical), tau, acceptance by position, drafts/s, tokens/s of both,
// speed-up. -o writes the final state, drafter included.
#include <cmath>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backend_option.h"
#include "command.h"
#include "options.h"
#include "core/error.h"
#include "drafter/drafter_file.h"
#include "drafter/speculative_compare.h"
#include "engine/engine.h"
#include "eos_option.h"
#include "format/token_list.h"
#include "model/model.h"
#include "progress.h"

namespace memra::cli {

namespace {

struct DraftOptions {
  std::string model_dir;
  std::string drafter_dir;
  std::string tokens;
  std::string state;
  int64_t steps = 64;
  bool ignore_eos = false;
  int64_t block_size = 0;
  std::string harvest;
  std::string rollback = "keep";
  bool propose = false;
  int64_t runs = 1;
  int64_t chunk = 0;
  int64_t capacity = 0;
  std::string state_out;
  bool json = false;
  BackendChoice backend;
};

std::string join(const std::vector<int32_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s;
}

std::string fixed(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

int run_draft(const DraftOptions& opt, Context& ctx) {
  if (opt.tokens.empty() && opt.state.empty())
    throw Error("give --tokens or --state", "memra draft MODEL [--drafter DIR] --tokens 1,2,3");
  if (opt.state == "-" && opt.tokens == "-") throw Error("--state and --tokens cannot both be stdin");
  std::optional<Harvest> harvest;
  if (!opt.harvest.empty()) harvest = parse_harvest(opt.harvest);  // the option's check admits only known names

  std::unique_ptr<StateFile> file;
  if (!opt.state.empty()) file = std::make_unique<StateFile>(StateFile::open(opt.state, StateCheck::kFull));
  Model model = Model::load(opt.model_dir);
  // Without --drafter: the model's own DSpark drafter (its mtp.* tensors), refused when it has none.
  const std::string drafter_dir = opt.drafter_dir.empty() ? opt.model_dir : opt.drafter_dir;
  DrafterWeights weights = DrafterWeights::load(drafter_dir, &model);
  Drafter drafter(weights, model);
  const DraftShape shape = drafter.shape(opt.block_size, harvest);
  std::vector<int32_t> tokens;
  if (!opt.tokens.empty()) tokens = read_token_list(opt.tokens);
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t start_pos = (file ? file->position() : 0) + T;
  const int64_t steps = opt.propose ? 0 : opt.steps;
  const int64_t need = start_pos + steps;
  const int64_t capacity = std::max({opt.capacity, need, file ? file->capacity() : int64_t{1}});
  if (opt.capacity > 0 && opt.capacity < need)
    throw Error("--capacity " + std::to_string(opt.capacity) + " cannot hold " + std::to_string(need) + " tokens",
                "use --capacity " + std::to_string(need) + " or more, or drop it");

  auto backend = make_backend(opt.backend, model);
  std::unique_ptr<State> state;
  if (file) {
    state = restore_state_file_with_drafter(*file, *backend, model.fingerprint().hex(), capacity, drafter);
  } else {
    state = backend->new_state(capacity);
    drafter.attach(*state);
  }
  if (T > 0) {
    Progress progress("prefill", ctx.quiet);
    drafter.prefill(*backend, *state, tokens, opt.chunk);
  }
  if (state->position() == 0) throw Error("the drafter needs a processed position", "give --tokens");

  std::ostream& out = opt.state_out == "-" ? std::cerr : std::cout;
  nlohmann::json j = {{"model", opt.model_dir},
                      {"drafter", drafter_dir},
                      {"family", drafter_family_name(drafter.config().family)},
                      {"drafter_fingerprint", weights.fingerprint().hex()},
                      {"backend", backend->name()},
                      {"harvest", harvest_name(shape.harvest)},
                      {"block_size", shape.block_size},
                      {"drafts_per_round", shape.drafts()},
                      {"start_position", state->position()}};
  int rc = kExitOk;
  if (opt.propose) {
    const int32_t anchor = argmax(backend->last_logits(*state));
    const Proposal p = drafter.propose(*state, anchor, shape);
    std::vector<double> conf;
    for (float c : p.confidence) conf.push_back(1.0 / (1.0 + std::exp(-static_cast<double>(c))));
    j["anchor"] = p.anchor;
    j["position"] = p.position;
    j["drafts"] = p.tokens;
    j["confidence_logits"] = p.confidence;
    j["confidence"] = conf;
    if (opt.json) {
      out << j.dump(2) << "\n";
    } else {
      out << "proposal at position " << p.position << " from anchor " << p.anchor << " (" << harvest_name(shape.harvest)
          << " harvest, block " << shape.block_size << "): " << join(p.tokens) << "\n";
      if (!conf.empty()) {
        out << "confidence:";
        for (double c : conf) out << " " << fixed(c, 3);
        out << "\n";
      }
    }
  } else {
    const std::vector<int32_t> stop = eos_stop_tokens(opt.ignore_eos, opt.model_dir, model.config().vocab_size);
    const SpeculativeComparison cmp = compare_speculative(*backend, drafter, *state, steps, shape, opt.runs, stop,
                                                         opt.rollback == "rerun" ? Rollback::kRerun : Rollback::kKeep);
    const SpeculativeStats& st = cmp.stats;
    const int64_t emitted = static_cast<int64_t>(cmp.speculative.size());
    const double drafts_per_s = st.propose_s > 0 ? static_cast<double>(st.rounds * st.drafts) / st.propose_s : 0.0;
    j["steps"] = steps;
    j["runs"] = opt.runs;
    j["tokens"] = cmp.speculative;
    j["finish_reason"] = finish_reason(cmp.speculative, stop);
    j["identical_to_greedy"] = cmp.identical;
    j["first_difference"] = cmp.first_difference;
    j["rounds"] = st.rounds;
    j["tau"] = st.tau();
    j["acceptance_by_position"] = st.acceptance_by_position();
    j["accepted_histogram"] = st.histogram;
    j["rollback"] = rollback_name(st.rollback);
    j["rollbacks"] = st.rollbacks;
    j["rerun_rows_histogram"] = st.rerun_histogram;  // [k]: rollbacks that kept (or re-ran) k committed rows
    j["verify_rows"] = st.verify_rows;
    j["trunk_rows"] = st.trunk_rows;
    j["drafts_per_s"] = drafts_per_s;
    j["mark_bytes"] = st.mark_bytes;
    j["seconds"] = {{"propose", st.propose_s}, {"mark", st.mark_s}, {"verify", st.verify_s}, {"rollback", st.rollback_s},
                    {"feed", st.feed_s}};
    j["speculative_seconds"] = cmp.speculative_s;
    j["greedy_seconds"] = cmp.greedy_s;
    j["speculative_tokens_per_s"] = cmp.speculative_tokens_per_s();
    j["greedy_tokens_per_s"] = cmp.greedy_tokens_per_s();
    j["speedup"] = cmp.speedup();
    if (!opt.state_out.empty()) {
      StateWriteOptions wo;
      wo.extra_metadata = drafter_metadata(weights);
      write_state_file(opt.state_out, snapshot_state(*cmp.final_state),
                       StateOrigin{model.fingerprint().hex(), backend->precision_class()}, wo);
    }
    if (opt.json) {
      out << j.dump(2) << "\n";
    } else {
      out << join(cmp.speculative) << "\n";
      out << "speculative: " << emitted << " tokens in " << st.rounds << " rounds, tau " << fixed(st.tau(), 3) << " ("
          << drafter_family_name(drafter.config().family) << ", " << harvest_name(shape.harvest) << " harvest, block "
          << shape.block_size << ", " << shape.drafts() << " drafts/round, " << st.rollbacks << " rollbacks ("
          << rollback_name(st.rollback) << "))"
          << (emitted < steps ? "; stopped at end-of-sequence token " + std::to_string(cmp.speculative.back()) : "")
          << "\n";
      out << "acceptance by position:";
      for (double a : st.acceptance_by_position()) out << " " << fixed(a, 3);
      out << "\n";
      out << "drafts/s " << fixed(drafts_per_s, 0) << "; tokens/s speculative "
          << fixed(cmp.speculative_tokens_per_s(), 1) << ", plain greedy " << fixed(cmp.greedy_tokens_per_s(), 1)
          << " (" << backend->name() << ", median of " << opt.runs << "); speed-up " << fixed(cmp.speedup(), 2)
          << "x\n";
      out << (cmp.identical ? "lossless: identical to plain greedy"
                            : "MISMATCH: differs from plain greedy at token " + std::to_string(cmp.first_difference))
          << "\n";
    }
    if (!cmp.identical) rc = kExitNegative;
  }
  if (opt.propose && !opt.state_out.empty()) {
    StateWriteOptions wo;
    wo.extra_metadata = drafter_metadata(weights);
    write_state_file(opt.state_out, snapshot_state(*state),
                     StateOrigin{model.fingerprint().hex(), backend->precision_class()}, wo);
  }
  return rc;
}

}  // namespace

void setup_draft(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<DraftOptions>();
  auto* sub = app.add_subcommand(
      "draft", "Speculative decoding with a drafter: propose a block, or generate and compare with plain greedy");
  sub->footer(
      "The drafter is --drafter's, or without it MODEL's own DSpark drafter: the mtp.* tensors and\n"
      "dspark_* fields of a released checkpoint (refused, naming what is missing, when it has none).\n"
      "Primes the drafter from --tokens (a prompt) or from --state (a state file written with the\n"
      "drafter attached, then --tokens continue it). --propose prints one block; otherwise --steps\n"
      "tokens are generated speculatively (exact realizations only: rejected drafts are rolled back)\n"
      "and plain greedy decoding runs from the same state: the tokens must be identical.\n"
      "Exit codes: 0 done (identical tokens); 1 speculative output differs from plain greedy, or the\n"
      "state file is corrupt, for another model or drafter, or holds no drafter state; 2 usage error.");
  sub->add_option("model", opt->model_dir, "Model folder (the trunk)")->required()->check(CLI::ExistingDirectory);
  sub->add_option("--drafter", opt->drafter_dir,
                  "Drafter folder (config.json + model.safetensors), or a model folder whose checkpoint carries its "
                  "own DSpark drafter (default: MODEL's own)")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--tokens", opt->tokens, "Prompt token ids: text (whitespace/comma separated) or .npy; - = stdin");
  sub->add_option("--state", opt->state,
                  "Start from this state file (written with the drafter: memra draft -o); - = stdin");
  add_count(sub, "--steps", opt->steps,
            "Tokens to generate speculatively (default 64; fewer when the model's end-of-sequence token comes first)", 0,
            1 << 20);
  add_ignore_eos_option(sub, opt->ignore_eos);
  sub->add_flag("--propose", opt->propose, "Propose one block from the state and print it (no generation)");
  add_count(sub, "--block-size", opt->block_size, "Block size b (default: the drafter's)", 1, 4096);
  sub->add_option("--harvest", opt->harvest, "Harvest convention when the drafter config names none, or to override it")
      ->check(CLI::IsMember({"dflash", "dspark"}));
  sub->add_option("--rollback", opt->rollback,
                  "After rejected drafts: keep the verify's committed rows (keep, default) or run them again (rerun)")
      ->check(CLI::IsMember({"keep", "rerun"}));
  add_count(sub, "--runs", opt->runs, "Interleaved timing runs of both decodings (median reported)", 1, 100);
  add_count(sub, "--chunk", opt->chunk, "Tokens per forward call when priming (default: all in one call)", 1);
  add_count(sub, "--capacity", opt->capacity, "Tokens the state can hold (default: start + --steps)", 1);
  sub->add_option("-o,--output", opt->state_out,
                  "Write the final state, drafter included, as a state file (- = stdout)");
  add_backend_options(sub, opt->backend);
  sub->add_flag("--json", opt->json, "Print the report as JSON");
  sub->callback([opt, &ctx] { ctx.run = [opt, &ctx] { return run_draft(*opt, ctx); }; });
}

}  // namespace memra::cli
