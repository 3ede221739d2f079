// Shared frame of the subcommands: each cli/<name>.cpp defines one setup_<name>() that adds its
// CLI11 subcommand and, when selected, stores the function that runs it in the context.
#pragma once
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace memra::cli {

struct Context {
  CLI::App* root = nullptr;     // the whole CLI definition (generate walks it)
  std::function<int()> run;     // set by the selected subcommand's callback; returns the exit code
  bool quiet = false;           // -q: no progress or notes on stderr
};

// Builds the whole CLI definition. Used by main() and by the doc generator's freshness test.
void build_app(CLI::App& app, Context& ctx);

void setup_load(CLI::App& app, Context& ctx);
void setup_prefill(CLI::App& app, Context& ctx);
void setup_snapshot(CLI::App& app, Context& ctx);
void setup_restore(CLI::App& app, Context& ctx);
void setup_draft(CLI::App& app, Context& ctx);
void setup_parity(CLI::App& app, Context& ctx);
void setup_gate(CLI::App& app, Context& ctx);
void setup_generate(CLI::App& app, Context& ctx);
void setup_devices(CLI::App& app, Context& ctx);
void setup_tokenize(CLI::App& app, Context& ctx);

// Writes one line `memra: note: ...` to stderr unless quiet.
void note(const Context& ctx, const std::string& text);

}  // namespace memra::cli
