// Walks the CLI11 definition into the documentation model (docs.h). Everything the man pages and
// completions say about an option comes from here: its names, description, whether it takes a
// value, and what kind of value (from CLI11's type name, which carries the validators' names:
// "TEXT:FILE", "TEXT:DIR", "TEXT:{a,b}").
#include <algorithm>

#include "core/error.h"
#include "docs.h"

namespace memra::cli {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

bool contains(const std::string& s, const char* word) { return s.find(word) != std::string::npos; }

// Names go into shell case patterns and function names unquoted: allow only what is safe there.
void check_name(const std::string& name, const std::string& where) {
  bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
  if (!ok || name[0] == '-')
    throw Error("cannot document " + where + " '" + name + "': names may use only letters, digits, - and _",
                "rename it in its cli/*.cpp setup function");
}

// Kind and placeholder of an option's value from CLI11's type name ("TEXT:FILE", "INT", "DIR").
void classify_value(const CLI::Option& opt, DocOption& doc) {
  if (opt.get_items_expected_max() == 0) return;  // a flag
  std::vector<std::string> parts = split(opt.get_type_name(), ':');
  std::string base = parts.empty() || parts[0].empty() ? "VALUE" : parts[0];
  doc.value_name = base;
  doc.kind = ValueKind::kOther;
  if (base == "TEXT") doc.kind = ValueKind::kFile;  // free text is most often a path: complete files
  for (const std::string& part : parts) {
    if (part.size() >= 2 && part.front() == '{' && part.back() == '}') {
      doc.kind = ValueKind::kChoice;
      for (std::string& c : split(part.substr(1, part.size() - 2), ','))
        if (!c.empty()) doc.choices.push_back(c);
    } else if (contains(part, "DIR")) {
      doc.kind = ValueKind::kDir;
      doc.value_name = part == "DIR" ? "DIR" : base;
    } else if (contains(part, "FILE") || contains(part, "PATH")) {
      doc.kind = ValueKind::kFile;
      if (part == "FILE" || part == "PATH(existing)") doc.value_name = "FILE";
      else if (contains(part, "PATH")) doc.value_name = "PATH";
      else doc.value_name = part;
    }
  }
  for (const std::string& c : doc.choices) check_name(c, "choice of " + opt.get_name());
}

DocOption describe_option(const CLI::Option& opt) {
  DocOption doc;
  doc.description = opt.get_description();
  doc.shorts = opt.get_snames();
  doc.longs = opt.get_lnames();
  if (!opt.nonpositional()) doc.positional = opt.get_name(true);
  doc.required = opt.get_required();
  // Vectors take many values; a counting flag (-v -v) takes all its occurrences.
  doc.repeatable = opt.get_items_expected_max() > 1 ||
                   (opt.get_items_expected_max() == 0 && opt.get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll);
  doc.default_value = opt.get_default_str();
  doc.env = opt.get_envname();
  classify_value(opt, doc);
  if (!doc.positional.empty() && doc.kind == ValueKind::kNone) doc.kind = ValueKind::kFile;
  for (const std::string& n : doc.shorts) check_name(n, "option -" + n);
  for (const std::string& n : doc.longs) check_name(n, "option --" + n);
  if (!doc.positional.empty()) check_name(doc.positional, "positional " + doc.positional);
  return doc;
}

DocCommand describe(CLI::App& app, std::vector<std::string> path) {
  DocCommand cmd;
  cmd.path = std::move(path);
  cmd.description = app.get_description();
  cmd.footer = app.get_footer();
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_group().empty()) continue;  // hidden
    DocOption doc = describe_option(*opt);
    (doc.positional.empty() ? cmd.options : cmd.positionals).push_back(std::move(doc));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App* s) { return !s->get_group().empty(); })) {
    check_name(sub->get_name(), "subcommand");
    std::vector<std::string> sub_path = cmd.path;
    sub_path.push_back(sub->get_name());
    cmd.commands.push_back(describe(*sub, std::move(sub_path)));
  }
  return cmd;
}

void collect(const DocCommand& cmd, std::vector<const DocCommand*>& out) {
  out.push_back(&cmd);
  for (const DocCommand& sub : cmd.commands) collect(sub, out);
}

std::string join_path(const std::vector<std::string>& path, char sep) {
  std::string s = "memra";
  for (const std::string& p : path) s += sep + p;
  return s;
}

}  // namespace

std::vector<std::string> DocOption::spellings() const {
  std::vector<std::string> s;
  for (const std::string& n : shorts) s.push_back("-" + n);
  for (const std::string& n : longs) s.push_back("--" + n);
  return s;
}

std::string DocCommand::words() const { return join_path(path, ' '); }
std::string DocCommand::page() const { return join_path(path, '-'); }
std::string DocCommand::ident() const {
  std::string s = join_path(path, '_');
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

DocCommand describe_cli(CLI::App& root) { return describe(root, {}); }

std::vector<const DocCommand*> all_commands(const DocCommand& root) {
  std::vector<const DocCommand*> out;
  collect(root, out);
  return out;
}

}  // namespace memra::cli
