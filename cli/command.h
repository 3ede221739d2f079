// Shared frame of the subcommands: each cli/<name>.cpp defines one setup_<name>() that adds its
// CLI11 subcommand and, when selected, stores the function that runs it in the context.
#pragma once
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include <optional>

#include "core/keyed_hash.h"

namespace memra {
class StateFile;
}

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
void setup_bench(CLI::App& app, Context& ctx);
void setup_tokenize(CLI::App& app, Context& ctx);

// Writes one line `memra: note: ...` to stderr unless quiet.
void note(const Context& ctx, const std::string& text);
// Writes one line `memra: warning: ...` to stderr (even with -q).
void warn(const std::string& text);
// Warns about every class of `file` that holds NaN or Inf (state/state_file.h nonfinite_classes).
void report_nonfinite(const StateFile& file);
// --key FILE: the key for state files' keyed tag (empty path: none).
std::optional<AuthKey> load_key(const std::string& path);
// With a key: checks `file`'s keyed tag (negative Error when missing or wrong). Without: a note
// when the file carries a tag nobody checked.
void check_state_key(const StateFile& file, const std::optional<AuthKey>& key, const Context& ctx);
void add_key_option(CLI::App* app, std::string& path, const std::string& what);

}  // namespace memra::cli
