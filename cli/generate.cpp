// memra generate (hidden): writes the man pages and shell completions from the CLI definition, so
// docs cannot drift from the options (test/shell/docs_fresh.sh compares them with the committed
// man/ and completions/; tools/regen-docs.sh refreshes those).
//   memra generate man [--command WORDS] [--out FILE|-]
//   memra generate bash|zsh|fish [--out FILE|-]
//   memra generate all --dir ROOT     (ROOT/man/*.1, ROOT/completions/{memra.bash,_memra,memra.fish})
//   memra generate options [--out FILE|-]   (commands and their numeric options as JSON, for tests)
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "docs.h"
#include "options.h"

namespace memra::cli {

namespace {

struct GenerateOptions {
  std::string what;
  std::string out = "-";
  std::string dir;
  std::string command = "memra";
};

void emit(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
  } else {
    write_file_atomic(path, text);
  }
}

const DocCommand& find_command(const DocCommand& root, const std::string& words) {
  for (const DocCommand* cmd : all_commands(root))
    if (cmd->words() == words || cmd->page() == words || (!cmd->path.empty() && "memra " + words == cmd->words()))
      return *cmd;
  throw Error("no visible command '" + words + "' to document", "give the command as it is typed, e.g. --command load");
}

// Writes every page and completion file under root; removes memra*.1 pages no command has any more.
int generate_all(const DocCommand& doc, const std::string& root, const Context& ctx) {
  namespace fs = std::filesystem;
  fs::path man = fs::path(root) / "man";
  fs::path completions = fs::path(root) / "completions";
  std::error_code ec;
  for (const fs::path& dir : {man, completions}) {
    fs::create_directories(dir, ec);
    if (ec) throw Error("cannot create folder " + dir.string() + ": " + ec.message());
  }
  std::set<std::string> pages;
  for (const DocCommand* cmd : all_commands(doc)) {
    std::string name = cmd->page() + ".1";
    emit((man / name).string(), render_man(*cmd, doc));
    pages.insert(name);
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(man, ec)) {
    std::string name = entry.path().filename().string();
    bool ours = name.rfind("memra", 0) == 0 && entry.path().extension() == ".1";
    if (ours && !pages.count(name) && entry.is_regular_file()) {
      fs::remove(entry.path(), ec);
      if (ec) throw Error("cannot remove stale page " + entry.path().string() + ": " + ec.message());
      note(ctx, "removed stale page " + entry.path().string());
    }
  }
  if (ec) throw Error("cannot list folder " + man.string() + ": " + ec.message());
  emit((completions / "memra.bash").string(), render_bash(doc));
  emit((completions / "_memra").string(), render_zsh(doc));
  emit((completions / "memra.fish").string(), render_fish(doc));
  note(ctx, "wrote " + std::to_string(pages.size()) + " man pages and 3 completion files under " + root);
  return kExitOk;
}

// `memra generate options`: every runnable command with its positionals, required options and
// numeric options (with the ranges declared in cli/options.h), as JSON for shell.cli_numbers,
// which tries each numeric option at 0, -1, 2^31, 2^62 and 2^64-1. New commands and options are
// covered without touching the test. "untyped" lists number-typed options declared without a range.
std::string options_json(CLI::App& root) {
  std::vector<std::string> untyped;
  const std::vector<NumericOption> numeric = numeric_options(root, &untyped);
  nlohmann::json commands = nlohmann::json::array();
  std::vector<std::pair<CLI::App*, std::string>> stack{{&root, "memra"}};
  while (!stack.empty()) {
    auto [app, words] = stack.back();
    stack.pop_back();
    auto subs = app->get_subcommands([](CLI::App*) { return true; });
    for (auto it = subs.rbegin(); it != subs.rend(); ++it)
      if ((*it)->get_name() != "generate") stack.push_back({*it, words + " " + (*it)->get_name()});
    if (!subs.empty() || app == &root) continue;  // only leaves run something
    nlohmann::json c = {{"words", words}, {"positionals", nlohmann::json::array()}, {"required", nlohmann::json::array()},
                        {"numeric", nlohmann::json::array()}};
    for (CLI::Option* opt : app->get_options()) {
      if (!opt->nonpositional()) c["positionals"].push_back({{"name", opt->get_name(true)}, {"required", opt->get_required()}});
      else if (opt->get_required()) c["required"].push_back("--" + opt->get_lnames().front());
    }
    for (const NumericOption& n : numeric)
      if (n.command == words) c["numeric"].push_back({{"name", n.name}, {"kind", n.kind}, {"min", n.min}, {"max", n.max}});
    commands.push_back(c);
  }
  return nlohmann::json({{"commands", commands}, {"untyped", untyped}}).dump(1) + "\n";
}

int run_generate(const GenerateOptions& opt, const Context& ctx) {
  if (opt.what == "options") {
    emit(opt.out, options_json(*ctx.root));
    return kExitOk;
  }
  DocCommand doc = describe_cli(*ctx.root);
  if (opt.what == "all") {
    if (opt.dir.empty()) throw Error("memra generate all needs --dir ROOT", "e.g. memra generate all --dir .");
    if (opt.out != "-") throw Error("--out does not apply to 'all'", "use --dir ROOT");
    return generate_all(doc, opt.dir, ctx);
  }
  if (!opt.dir.empty()) throw Error("--dir applies only to 'all'", "use --out FILE for one file");
  if (opt.command != "memra" && opt.what != "man") throw Error("--command applies only to 'man'");
  std::string text;
  if (opt.what == "man") text = render_man(find_command(doc, opt.command), doc);
  else if (opt.what == "bash") text = render_bash(doc);
  else if (opt.what == "zsh") text = render_zsh(doc);
  else text = render_fish(doc);
  emit(opt.out, text);
  return kExitOk;
}

}  // namespace

void setup_generate(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<GenerateOptions>();
  auto* sub = app.add_subcommand("generate", "Write the man pages and shell completions from the CLI definition");
  sub->group("");  // hidden: a tool for maintainers, not part of the documented interface
  sub->add_option("what", opt->what, "What to write")
      ->required()
      ->check(CLI::IsMember({"man", "bash", "zsh", "fish", "all", "options"}));
  sub->add_option("-o,--out", opt->out, "Output file for one page or completion (- is stdout)")->type_name("FILE");
  sub->add_option("--dir", opt->dir, "Root folder for 'all': writes ROOT/man and ROOT/completions")->type_name("DIR");
  sub->add_option("--command", opt->command, "The command whose man page to write (default: memra)")
      ->type_name("WORDS");
  sub->callback([opt, &ctx] { ctx.run = [opt, &ctx] { return run_generate(*opt, ctx); }; });
}

}  // namespace memra::cli
