// memra restore: verify a state file (every hash, the model fingerprint), restore it into a fresh
// state of any capacity ≥ its position, check that the restored state re-hashes to the file's
// hashes, then continue it: teacher-forced tokens, greedy steps, logits, a new state file.
#include <chrono>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "backend_option.h"
#include "command.h"
#include "core/error.h"
#include "core/hash.h"
#include "drafter/drafter_file.h"
#include "drafter/speculative.h"
#include "engine/engine.h"
#include "engine/memory_plan.h"
#include "eos_option.h"
#include "format/token_list.h"
#include "io_rules.h"
#include "model/model.h"
#include "options.h"
#include "progress.h"
#include "run_plan.h"
#include "prompt_input.h"
#include "state/state_file.h"

namespace memra::cli {

namespace {

struct RestoreOptions {
  std::string state;
  std::string model_dir;
  int64_t capacity = 0;
  std::string tokens;
  PromptInput prompt;
  int64_t chunk = 0;
  int64_t steps = 0;
  bool ignore_eos = false;
  std::string logits_out;
  std::string state_out;
  std::string drafter_dir;
  bool json = false;
  uint64_t max_memory = 0;  // 0: the default share of this machine's memory
  std::string key;          // --key: check STATE's keyed tag, tag the output
  BackendChoice backend;
};

int run_restore(const RestoreOptions& opt, Context& ctx) {
  if (opt.state == "-" && opt.tokens == "-") throw Error("STATE and --tokens cannot both be stdin");
  if (opt.state_out == "-" && opt.logits_out == "-") throw Error("-o - and --logits - cannot both be stdout");
  if (!opt.logits_out.empty()) check_logits_path(opt.logits_out);

  // Verification comes first: a corrupt state fails before the (possibly long) model load.
  const std::optional<AuthKey> key = load_key(opt.key);
  StateFile file = StateFile::open(opt.state, StateCheck::kFull);
  check_state_key(file, key, ctx);
  Model model = Model::load(opt.model_dir);
  const uint64_t limit = effective_memory_limit(opt.max_memory);
  auto shape = [&](int64_t tokens) {  // the run that restores and continues over `tokens` forced tokens
    RunShape s;
    s.device = realization(opt.backend.name).device;
    s.capacity = opt.capacity > 0 ? opt.capacity : std::max(file.capacity(), file.position() + tokens + opt.steps);
    s.chunk = std::max<int64_t>(opt.chunk > 0 ? std::min(opt.chunk, tokens) : tokens, 1);
    s.chunk_logits = !opt.logits_out.empty();
    s.logits_rows = opt.logits_out.empty() ? 0 : tokens + opt.steps;
    s.live_copies = opt.state_out.empty() ? 2 : 3;  // the file's classes, the verified re-hash, the output
    s.live_position = file.position() + tokens + opt.steps;
    return s;
  };
  std::vector<int32_t> tokens;
  if (!opt.tokens.empty())
    tokens = read_tokens_planned(opt.tokens, model, limit, shape,
                                 opt.capacity > 0 ? std::max<int64_t>(opt.capacity - file.position() - opt.steps, 0) : kMaxCount, ctx);
  else
    tokens = prompt_tokens(opt.prompt, "", opt.model_dir, PromptUse::kContinuation, false, ctx);
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t need = file.position() + T + opt.steps;
  const int64_t capacity = opt.capacity > 0 ? opt.capacity : std::max(file.capacity(), need);
  if (capacity < need)  // a usage error (exit 2), whether below the position or below what the run adds
    throw Error("--capacity " + std::to_string(capacity) + " cannot hold position " + std::to_string(file.position()) +
                    " + " + std::to_string(T) + " tokens + " + std::to_string(opt.steps) + " steps",
                "use --capacity " + std::to_string(need) + " or more, or drop it");
  if (capacity >= file.position())
    require_run_fits(model, limit, shape(T), "restoring " + file.path() + " into capacity " + std::to_string(capacity));
  report_nonfinite(file);

  auto backend = make_backend(opt.backend, model);
  if (backend->precision_class() != file.precision_class())
    note(ctx, "state was written by precision class " + file.precision_class() + ", continuing on " +
                  backend->precision_class());
  // With --drafter the state's drafter classes come back too, and every continued token feeds it.
  std::unique_ptr<DrafterWeights> drafter_weights;
  std::unique_ptr<Drafter> drafter;
  if (!opt.drafter_dir.empty()) {
    drafter_weights = std::make_unique<DrafterWeights>(DrafterWeights::load(opt.drafter_dir, &model));
    drafter = std::make_unique<Drafter>(*drafter_weights, model);
  }
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<State> state =
      drafter ? restore_state_file_with_drafter(file, *backend, model.fingerprint().hex(), capacity, *drafter)
              : restore_state_file(file, *backend, model.fingerprint().hex(), capacity);
  const double restore_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t restored_pos = state->position();

  const int64_t V = model.config().vocab_size;
  const bool want_logits = !opt.logits_out.empty();
  std::vector<float> logits;  // [T + steps, V]
  if (T > 0) {
    Progress progress("teacher-forcing", ctx.quiet);
    if (drafter)
      drafter->prefill(*backend, *state, tokens, opt.chunk, want_logits ? &logits : nullptr);
    else
      prefill(*backend, *state, tokens, opt.chunk, want_logits ? &logits : nullptr,
              [&](int64_t done, int64_t total) { progress.update(done, total); });
  }
  std::ostream& out = opt.state_out == "-" || opt.logits_out == "-" ? std::cerr : std::cout;
  GeneratedText text(opt.prompt, opt.model_dir, opt.json, out);
  std::vector<int32_t> generated;
  const std::vector<int32_t> stop = opt.steps > 0 ? eos_stop_tokens(opt.ignore_eos, opt.model_dir, V) : std::vector<int32_t>{};
  if (opt.steps > 0) {
    if (state->position() == 0) throw Error("greedy steps need a processed position", "give --tokens, or restore a state past position 0");
    std::vector<float> step_logits;
    generated = drafter ? generate_greedy_primed(*backend, *drafter, *state, opt.steps, want_logits ? &step_logits : nullptr, stop)
                        : generate_greedy(*backend, *state, opt.steps, want_logits ? &step_logits : nullptr, text.on_token(), stop);
    text.finish();
    logits.insert(logits.end(), step_logits.begin(), step_logits.end());
    if (const std::string eos = eos_stop_note(generated, opt.steps, "steps"); !eos.empty()) note(ctx, eos);
  }
  if (want_logits) write_logits(opt.logits_out, logits, T + static_cast<int64_t>(generated.size()), V);
  if (!opt.state_out.empty()) {
    StateWriteOptions options;
    if (key) options.key = &*key;
    if (drafter_weights) options.extra_metadata = drafter_metadata(*drafter_weights);
    write_state_file(opt.state_out, stream_snapshot(*backend, *state),
                     StateOrigin{model.fingerprint().hex(), backend->precision_class(), backend->qat()}, options);
  }

  const std::vector<float> last = backend->last_logits(*state);
  const Hash128 last_hash = xxh3_128(last.data(), last.size() * sizeof(float));
  if (opt.json) {
    nlohmann::json j = {{"state", file.path()},
                        {"model", opt.model_dir},
                        {"fingerprint", model.fingerprint().hex()},
                        {"backend", backend->precision_class()},
                        {"restored_position", restored_pos},
                        {"capacity", capacity},
                        {"classes_verified", file.classes().size()},
                        {"state_xxh3", file.state_hash().hex()},
                        {"restore_seconds", restore_s},
                        {"forced_tokens", T},
                        {"steps", opt.steps},
                        {"position", state->position()},
                        {"last_logits_xxh3", state->position() > 0 ? nlohmann::json(last_hash.hex()) : nlohmann::json(nullptr)},
                        {"generated", generated}};
    if (opt.steps > 0) j["finish_reason"] = finish_reason(generated, stop);
    if (auto t = text.text_of(generated)) j["text"] = *t;
    out << j.dump(2) << "\n";
  } else if (text.active() && opt.steps > 0) {  // the text was the result; the report is a note
    note(ctx, "restored " + file.path() + " at position " + std::to_string(restored_pos) + ", continued to position " +
                  std::to_string(state->position()) + "; last logits xxh3 " + last_hash.hex());
  } else {
    out << "restored " << file.path() << ": position " << restored_pos << ", capacity " << capacity << ", "
        << file.classes().size() << " classes verified (state xxh3-128 " << file.state_hash().hex() << ")\n";
    if (T > 0 || opt.steps > 0)
      out << "continued " << T << " forced + " << generated.size() << " greedy tokens to position " << state->position()
          << "; last logits xxh3 " << last_hash.hex() << "\n";
    if (!generated.empty()) {
      for (size_t i = 0; i < generated.size(); ++i) out << (i ? " " : "") << generated[i];
      out << "\n";
    }
  }
  return kExitOk;
}

}  // namespace

void setup_restore(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<RestoreOptions>();
  auto* sub = app.add_subcommand("restore", "Verify a state file, restore it (any capacity >= its position) and continue it");
  sub->footer(
      "Verifies every hash of STATE and that it was written from the model in MODEL_DIR (model\n"
      "fingerprint), restores it into a fresh state, re-hashes the restored classes against the file\n"
      "(verified restore), then teacher-forces --tokens and decodes --steps greedily.\n"
      "Default capacity: the file's, grown to position + tokens + steps when that is larger.\n"
      "Exit codes: 0 restored (and continued); 1 the state is corrupt, truncated or modified, or belongs\n"
      "to another model; 2 usage error (e.g. --capacity below the position plus what the run adds),\n"
      "unreadable file, bad model folder or token list, a state format major version this memra does\n"
      "not read.");
  sub->add_option("STATE", opt->state, "State file (- = stdin)")->required();
  sub->add_option("--model", opt->model_dir, "Model folder the state was written from")->required()->check(CLI::ExistingDirectory);
  add_count(sub, "--capacity", opt->capacity, "Tokens the restored state can hold (>= the state's position)", 1);
  add_prompt_options(sub, sub->add_option("--tokens", opt->tokens, "Teacher-force these token ids: text (whitespace/comma separated) or .npy; - = stdin"), opt->prompt);
  add_count(sub, "--chunk", opt->chunk, "Tokens per forward call when teacher-forcing (default: all in one call)", 1);
  add_count(sub, "--steps", opt->steps,
            "Then decode K tokens greedily and print them (fewer when the model's end-of-sequence token comes first)", 0);
  add_ignore_eos_option(sub, opt->ignore_eos);
  sub->add_option("--logits", opt->logits_out, "Write float32 logits [tokens + generated, vocab] (.npy, or .safetensors)");
  sub->add_option("-o,--output", opt->state_out, "Write the final state as a state file (- = stdout)");
  add_max_memory(sub, opt->max_memory);
  add_key_option(sub, opt->key, "Refuse STATE unless its keyed tag matches this key; tag the -o state");
  sub->add_option("--drafter", opt->drafter_dir, "Drafter folder the state was written with (brings its drafter state back)")
      ->check(CLI::ExistingDirectory);
  add_backend_options(sub, opt->backend);
  sub->add_flag("--json", opt->json, "Print the report as JSON");
  sub->callback([opt, &ctx] {
    ctx.run = [opt, &ctx] {
      check_command_io({{{"STATE", opt->state}, {"--tokens", opt->tokens}, {"--key", opt->key}},
                        {opt->model_dir},
                        {},
                        {{"-o", opt->state_out}, {"--logits", opt->logits_out}}});
      return run_restore(*opt, ctx);
    };
  });
}

}  // namespace memra::cli
