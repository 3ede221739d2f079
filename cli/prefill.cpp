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
#include "format/token_list.h"
#include "model/model.h"
#include "progress.h"
#include "state/state_file.h"

namespace memra::cli {

struct PrefillOptions {
  std::string model_dir;
  std::string tokens;
  int64_t chunk = 0;
  int64_t capacity = 0;
  std::string state_out;
  std::string logits_out;
  int64_t generate = 0;
  bool json = false;
  BackendChoice backend;
};

static void write_state_for_cli(const std::string& path, const Model& model, const Backend& backend,
                                const State& state) {
  write_state_file(path, snapshot_state(state), StateOrigin{model.fingerprint().hex(), backend.precision_class()});
}

static int run_prefill(const PrefillOptions& opt, const Context& ctx) {
  Model model = Model::load(opt.model_dir);
  std::vector<int32_t> tokens = read_token_list(opt.tokens);
  if (tokens.empty()) throw Error("token list " + opt.tokens + " is empty", "give at least one token id");
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t need = T + opt.generate;
  const int64_t capacity = opt.capacity > 0 ? opt.capacity : need;
  if (capacity < need)
    throw Error("--capacity " + std::to_string(capacity) + " is smaller than the " + std::to_string(need) +
                    " tokens this run needs",
                "drop --capacity or raise it");
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
  std::vector<int32_t> generated;
  if (opt.generate > 0) generated = generate_greedy(*backend, *state, opt.generate);
  if (!opt.state_out.empty()) write_state_for_cli(opt.state_out, model, *backend, *state);

  // With `-o -` the state owns stdout; the report then goes to stderr.
  std::ostream& out = opt.state_out == "-" ? std::cerr : std::cout;
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
    out << j.dump(2) << "\n";
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
  sub->add_option("--tokens", opt->tokens, "Prompt token ids: text (whitespace/comma separated) or .npy int32/int64; - = stdin")
      ->required();
  sub->add_option("--chunk", opt->chunk, "Tokens per forward call (default: all in one call)")->check(CLI::NonNegativeNumber);
  sub->add_option("--capacity", opt->capacity, "Tokens the decode state can hold (default: prompt + --generate)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("-o,--output", opt->state_out, "Write the decode state as a hashed state file (- = stdout)");
  sub->add_option("--logits", opt->logits_out, "Write float32 logits [T, vocab] of every prompt position (.npy, or .safetensors)");
  sub->add_option("--generate", opt->generate, "Greedy continuation: emit N tokens after the prompt")->check(CLI::NonNegativeNumber);
  add_backend_options(sub, opt->backend);
  sub->add_flag("--json", opt->json, "Print the report as JSON");
  sub->callback([opt, &ctx] { ctx.run = [opt, &ctx] { return run_prefill(*opt, ctx); }; });
}

}  // namespace memra::cli
