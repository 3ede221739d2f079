// memra prefill: run a prompt through the model (chunked), print a logits fingerprint, optionally
// write every position's logits, the decode state, and a greedy continuation.
#include <chrono>
#include <iostream>

#include <nlohmann/json.hpp>

#include "backend_option.h"
#include "command.h"
#include "core/error.h"
#include "core/hash.h"
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

struct PrefillOptions {
  std::string model_dir;
  std::string tokens;
  PromptInput prompt;
  int64_t chunk = 0;
  int64_t capacity = 0;
  std::string state_out;
  std::string logits_out;
  int64_t generate = 0;
  bool ignore_eos = false;
  bool json = false;
  uint64_t max_memory = 0;  // 0: the default share of this machine's memory
  std::string key;          // --key: tag the state file
  BackendChoice backend;
};

static void write_state_for_cli(const std::string& path, const Model& model, const Backend& backend,
                                const State& state, const std::optional<AuthKey>& key) {
  StateWriteOptions options;
  if (key) options.key = &*key;
  write_state_file(path, stream_snapshot(backend, state),
                   StateOrigin{model.fingerprint().hex(), backend.precision_class(), backend.qat()}, options);
}

static int run_prefill(const PrefillOptions& opt, const Context& ctx) {
  if (!opt.logits_out.empty()) check_logits_path(opt.logits_out);
  const std::optional<AuthKey> key = load_key(opt.key);
  Model model = Model::load(opt.model_dir);
  const uint64_t limit = effective_memory_limit(opt.max_memory);
  auto shape = [&](int64_t tokens) {  // the run over `tokens` prompt tokens
    RunShape s;
    s.device = realization(opt.backend.name).device;
    s.capacity = opt.capacity > 0 ? opt.capacity : tokens + opt.generate;
    s.chunk = opt.chunk > 0 ? std::min(opt.chunk, tokens) : tokens;
    s.chunk_logits = !opt.logits_out.empty();
    s.logits_rows = opt.logits_out.empty() ? 0 : tokens;
    s.live_copies = opt.state_out.empty() ? 0 : 1;
    s.live_position = tokens + opt.generate;
    return s;
  };
  if (opt.capacity > 0 && opt.capacity <= opt.generate)
    throw Error("--capacity " + std::to_string(opt.capacity) + " leaves no room for a prompt next to --generate " +
                    std::to_string(opt.generate),
                "drop --capacity or raise it");
  std::vector<int32_t> tokens =
      opt.tokens.empty()
          ? prompt_tokens(opt.prompt, "", opt.model_dir, PromptUse::kStart, true, ctx)
          : read_tokens_planned(opt.tokens, model, limit, shape, opt.capacity > 0 ? opt.capacity - opt.generate : kMaxCount, ctx);
  if (tokens.empty()) throw Error("token list " + opt.tokens + " is empty", "give at least one token id");
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t need = T + opt.generate;
  const int64_t capacity = opt.capacity > 0 ? opt.capacity : need;
  if (capacity < need)
    throw Error("--capacity " + std::to_string(capacity) + " is smaller than the " + std::to_string(need) +
                    " tokens this run needs",
                "drop --capacity or raise it");
  require_run_fits(model, limit, shape(T), "a prefill of " + std::to_string(T) + " tokens (capacity " + std::to_string(capacity) + ")");
  auto backend = make_backend(opt.backend, model);
  std::unique_ptr<State> state = backend->new_state(capacity);
  std::vector<float> logits;
  Progress progress("prefill", ctx.quiet);
  auto t0 = std::chrono::steady_clock::now();
  prefill(*backend, *state, tokens, opt.chunk, opt.logits_out.empty() ? nullptr : &logits,
          [&](int64_t done, int64_t total) { progress.update(done, total); });
  double prefill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.finish();
  const int64_t V = model.config().vocab_size;
  if (!opt.logits_out.empty()) write_logits(opt.logits_out, logits, T, V);
  const std::vector<float> last = backend->last_logits(*state);
  const Hash128 last_hash = xxh3_128(last.data(), last.size() * sizeof(float));
  // With `-o -` or `--logits -` that artifact owns stdout; the report (and a text continuation)
  // then go to stderr.
  std::ostream& out = opt.state_out == "-" || opt.logits_out == "-" ? std::cerr : std::cout;
  GeneratedText text(opt.prompt, opt.model_dir, opt.json, out);
  std::vector<int32_t> generated;
  const std::vector<int32_t> stop =
      opt.generate > 0 ? eos_stop_tokens(opt.ignore_eos, opt.model_dir, V) : std::vector<int32_t>{};
  if (opt.generate > 0) generated = generate_greedy(*backend, *state, opt.generate, nullptr, text.on_token(), stop);
  text.finish();
  if (const std::string eos = eos_stop_note(generated, opt.generate, "tokens"); !eos.empty()) note(ctx, eos);
  if (!opt.state_out.empty()) write_state_for_cli(opt.state_out, model, *backend, *state, key);
  if (opt.json) {
    nlohmann::json j = {{"model", opt.model_dir},
                        {"fingerprint", model.fingerprint().hex()},
                        {"backend", backend->precision_class()},
                        {"tokens", T},
                        {"chunk", opt.chunk > 0 ? opt.chunk : T},
                        {"capacity", capacity},
                        {"position", state->position()},
                        {"last_logits_xxh3", last_hash.hex()},
                        {"argmax", argmax(last)},
                        {"prefill_seconds", prefill_s},
                        {"generated", generated}};
    if (opt.generate > 0) j["finish_reason"] = finish_reason(generated, stop);
    if (auto t = text.text_of(generated)) j["text"] = *t;
    out << j.dump(2) << "\n";
  } else if (text.active() && opt.generate > 0) {  // the text was the result; the report is a note
    note(ctx, "prefill " + std::to_string(T) + " tokens in " + std::to_string(prefill_s) + " s; last logits xxh3 " +
                  last_hash.hex() + "; generated " + std::to_string(generated.size()) + " tokens");
  } else {
    out << "prefill " << T << " tokens (chunk " << (opt.chunk > 0 ? opt.chunk : T) << ", capacity " << capacity
        << ") in " << prefill_s << " s; last logits xxh3 " << last_hash.hex() << "\n";
    if (!generated.empty()) {
      for (size_t i = 0; i < generated.size(); ++i) out << (i ? " " : "") << generated[i];
      out << "\n";
    }
  }
  return kExitOk;
}

void setup_prefill(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<PrefillOptions>();
  auto* sub = app.add_subcommand("prefill", "Run a prompt through the model (chunked prefill), optionally continue greedily");
  sub->add_option("model", opt->model_dir, "Model folder (config.json + safetensors)")->required()->check(CLI::ExistingDirectory);
  auto* tokens = sub->add_option("--tokens", opt->tokens, "Prompt token ids: text (whitespace/comma separated) or .npy int32/int64; - = stdin");
  add_prompt_options(sub, tokens, opt->prompt);
  add_count(sub, "--chunk", opt->chunk, "Tokens per forward call (default: all in one call)", 1);
  add_count(sub, "--capacity", opt->capacity, "Tokens the decode state can hold (default: prompt + --generate)", 1);
  sub->add_option("-o,--output", opt->state_out, "Write the decode state as a hashed state file (- = stdout)");
  sub->add_option("--logits", opt->logits_out, "Write float32 logits [T, vocab] of every prompt position (.npy, or .safetensors)");
  add_count(sub, "--generate", opt->generate,
            "Greedy continuation: emit N tokens after the prompt (fewer when the model's end-of-sequence token comes first)",
            0);
  add_ignore_eos_option(sub, opt->ignore_eos);
  add_max_memory(sub, opt->max_memory);
  add_key_option(sub, opt->key, "Tag the -o state file with this key");
  add_backend_options(sub, opt->backend);
  sub->add_flag("--json", opt->json, "Print the report as JSON");
  sub->callback([opt, &ctx] {
    ctx.run = [opt, &ctx] {
      check_command_io({{{"--tokens", opt->tokens}, {"--key", opt->key}},
                        {opt->model_dir},
                        {},
                        {{"-o", opt->state_out}, {"--logits", opt->logits_out}}});
      return run_prefill(*opt, ctx);
    };
  });
}

}  // namespace memra::cli
