// The documentation generator behind `memra generate`: walks the one CLI definition (the CLI11 app
// that main() builds) into a plain model, and renders that model as man pages (roff) and as bash,
// zsh and fish completions. Output is deterministic: no dates, paths or version strings, so the
// committed files only change when the CLI does.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace memra::cli {

// What a value of an option or positional is, for completion.
enum class ValueKind {
  kNone,    // a flag: takes no value
  kFile,    // a path (CLI11 TEXT, FILE or PATH types, ExistingFile checks)
  kDir,     // a folder (DIR types, ExistingDirectory checks)
  kChoice,  // one of `choices` (IsMember checks)
  kOther,   // a number or a name: nothing to complete
};

struct DocOption {
  std::vector<std::string> shorts;  // without the dash: "q"
  std::vector<std::string> longs;   // without the dashes: "quiet"
  std::string positional;           // the positional's name; empty for options
  std::string description;
  std::string value_name;  // placeholder shown in docs ("FILE", "INT"); empty for flags
  ValueKind kind = ValueKind::kNone;
  std::vector<std::string> choices;
  bool required = false;
  bool repeatable = false;
  std::string default_value;
  std::string env;
  bool takes_value() const { return kind != ValueKind::kNone; }
  std::vector<std::string> spellings() const;  // "-q", "--quiet"
};

struct DocCommand {
  std::vector<std::string> path;  // {} for memra itself, {"load"}, {"gate", "run"}
  std::string description;
  std::string footer;
  std::vector<DocOption> options;      // non-positional, in definition order
  std::vector<DocOption> positionals;  // in order
  std::vector<DocCommand> commands;    // visible subcommands, in definition order

  std::string words() const;  // "memra", "memra load"
  std::string page() const;   // "memra", "memra-load": the man page name
  std::string ident() const;  // "memra", "memra_load": safe in shell function names
};

// Walks the visible part of the CLI (hidden subcommands and options, group "", are left out).
// Throws Error when a name cannot be written safely into the generated shell code.
DocCommand describe_cli(CLI::App& root);

// Every command of the tree in depth-first definition order, the root first.
std::vector<const DocCommand*> all_commands(const DocCommand& root);

// The man page of one command (root: memra(1) with a COMMANDS section).
std::string render_man(const DocCommand& cmd, const DocCommand& root);
std::string render_bash(const DocCommand& root);
std::string render_zsh(const DocCommand& root);
std::string render_fish(const DocCommand& root);

}  // namespace memra::cli
