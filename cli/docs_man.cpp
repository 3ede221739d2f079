// Man pages (roff, man(7) macros) from the documentation model: memra(1) for the whole tool with a
// COMMANDS section, and memra-COMMAND(1) for each visible subcommand. Extra prose comes from the
// registry in docs_text.cpp. Every piece of text is escaped, so descriptions cannot inject roff.
#include <sstream>

#include "docs.h"
#include "docs_text.h"

namespace memra::cli {

namespace {

// One line of text as roff: backslashes and hyphens escaped (so options copy-paste as ASCII), and
// a leading control character neutralised.
std::string roff_line(const std::string& line) {
  std::string out;
  if (!line.empty() && (line[0] == '.' || line[0] == '\'')) out = "\\&";
  for (char c : line) {
    if (c == '\\') out += "\\e";
    else if (c == '-') out += "\\-";
    else out += c;
  }
  return out;
}

std::string roff(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (!first) out += '\n';
    size_t start = line.find_first_not_of(' ');
    out += start == std::string::npos ? std::string() : roff_line(line.substr(start));
    first = false;
  }
  return out;
}

// A description as a sentence: CLI11 descriptions usually have no final period.
std::string sentence(const std::string& text) {
  if (text.empty()) return text;
  char last = text.back();
  return (last == '.' || last == '!' || last == '?' || last == ':') ? text : text + ".";
}

std::string bold(const std::string& s) { return "\\fB" + roff_line(s) + "\\fR"; }
std::string italic(const std::string& s) { return "\\fI" + roff_line(s) + "\\fR"; }
std::string page_ref(const std::string& page) { return bold(page) + "(1)"; }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

bool indented(const std::string& line) { return line.rfind("  ", 0) == 0; }
bool blank(const std::string& line) { return line.find_first_not_of(' ') == std::string::npos; }

// Paragraphs separated by blank lines; lines indented by two spaces shown verbatim.
void prose(std::ostream& out, const std::string& text, bool leading_paragraph) {
  std::vector<std::string> lines = lines_of(text);
  bool need_pp = leading_paragraph;
  for (size_t i = 0; i < lines.size();) {
    if (blank(lines[i])) {
      need_pp = true;
      ++i;
      continue;
    }
    if (need_pp) out << ".PP\n";
    need_pp = false;
    if (indented(lines[i])) {
      out << ".RS 4\n.nf\n";
      for (; i < lines.size() && indented(lines[i]); ++i) out << roff_line(lines[i].substr(2)) << "\n";
      out << ".fi\n.RE\n";
      need_pp = true;
    } else {
      for (; i < lines.size() && !blank(lines[i]) && !indented(lines[i]); ++i) out << roff(lines[i]) << "\n";
    }
  }
}

// Entries: an unindented line names the entry, the indented lines under it describe it.
void definitions(std::ostream& out, const std::string& text) {
  for (const std::string& line : lines_of(text)) {
    if (blank(line)) continue;
    if (indented(line)) out << roff(line) << "\n";
    else out << ".TP\n" << bold(line) << "\n";
  }
}

// First sentence of a description, without its period: the NAME line.
std::string summary_of(const DocCommand& cmd, const DocText* extra) {
  if (extra && !extra->summary.empty()) return extra->summary;
  std::string s = cmd.description.substr(0, cmd.description.find('\n'));
  size_t stop = s.find(". ");
  if (stop != std::string::npos) s = s.substr(0, stop);
  while (!s.empty() && (s.back() == '.' || s.back() == ' ')) s.pop_back();
  return s.empty() ? cmd.words() : s;
}

std::string option_head(const DocOption& opt) {
  std::string head;
  for (const std::string& s : opt.spellings()) head += (head.empty() ? "" : ", ") + bold(s);
  if (opt.takes_value()) head += " " + italic(opt.value_name) + (opt.repeatable ? "..." : "");
  return head;
}

std::string option_notes(const DocOption& opt) {
  std::string notes;
  if (opt.required) notes += " Required.";
  if (opt.kind == ValueKind::kChoice) {
    std::string list;
    for (const std::string& c : opt.choices) list += (list.empty() ? "" : ", ") + c;
    notes += " One of: " + list + ".";
  }
  if (!opt.default_value.empty()) notes += " Default: " + opt.default_value + ".";
  if (opt.repeatable) notes += " May be given more than once.";
  if (!opt.env.empty()) notes += " Environment: " + opt.env + ".";
  return notes;
}

void synopsis(std::ostream& out, const DocCommand& cmd) {
  out << ".SH SYNOPSIS\n.B " << roff_line(cmd.words()) << "\n";
  std::string rest = cmd.options.empty() ? "" : "[" + italic("OPTIONS") + "]";
  for (const DocOption& opt : cmd.options) {
    if (!opt.required) continue;
    std::string s = bold(opt.spellings().back());
    if (opt.takes_value()) s += " " + italic(opt.value_name);
    rest += " " + s;
  }
  for (const DocOption& pos : cmd.positionals) {
    std::string s = italic(pos.positional) + (pos.repeatable ? "..." : "");
    rest += " " + (pos.required ? s : "[" + s + "]");
  }
  if (!cmd.commands.empty()) rest += " " + italic("COMMAND") + " [" + italic("ARGS") + "]";
  if (!rest.empty()) out << (rest[0] == ' ' ? rest.substr(1) : rest) << "\n";
}

}  // namespace

std::string render_man(const DocCommand& cmd, const DocCommand& root) {
  const DocText* extra = doc_text(cmd.words());
  std::ostringstream out;
  std::string title = cmd.page();
  for (char& c : title) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  out << ".\\\" Generated by `memra generate man` from the CLI definition: do not edit, run tools/regen-docs.sh.\n";
  out << ".TH " << roff_line(title) << " 1 \"\" \"memra\" \"memra manual\"\n";
  out << ".SH NAME\n" << roff_line(cmd.page()) << " \\- " << roff(summary_of(cmd, extra)) << "\n";
  synopsis(out, cmd);

  out << ".SH DESCRIPTION\n" << roff(sentence(cmd.description)) << "\n";
  if (extra && !extra->description.empty()) prose(out, extra->description, true);
  if (!cmd.footer.empty()) prose(out, cmd.footer, true);

  if (!cmd.commands.empty()) {
    out << ".SH COMMANDS\n";
    for (const DocCommand& sub : cmd.commands) {
      out << ".TP\n" << bold(sub.path.back()) << "\n" << roff(sentence(sub.description)) << "\n";
      out << "See " << page_ref(sub.page()) << ".\n";
    }
  }
  if (!cmd.positionals.empty()) {
    out << ".SH ARGUMENTS\n";
    for (const DocOption& pos : cmd.positionals)
      out << ".TP\n" << italic(pos.positional) << (pos.repeatable ? "..." : "") << "\n"
          << roff(sentence(pos.description) + option_notes(pos)) << "\n";
  }
  if (!cmd.options.empty()) {
    out << ".SH OPTIONS\n";
    for (const DocOption& opt : cmd.options)
      out << ".TP\n" << option_head(opt) << "\n" << roff(sentence(opt.description) + option_notes(opt)) << "\n";
  }

  out << ".SH EXIT STATUS\n"
      << ".TP\n.B 0\nSuccess: the command did what was asked and every check it made passed.\n"
      << ".TP\n.B 1\nA definite negative: a hash mismatch, a FAIL or a REFUSED verdict.\n"
      << ".TP\n.B 2\nA usage or runtime error: a bad option, a missing, unreadable or malformed input, "
      << "no memory.\n";

  std::ostringstream env;
  if (extra && !extra->environment.empty()) definitions(env, extra->environment);
  for (const DocOption& opt : cmd.options)
    if (!opt.env.empty()) env << ".TP\n" << bold(opt.env) << "\nSets " << bold(opt.spellings().back()) << ".\n";
  if (!env.str().empty()) out << ".SH ENVIRONMENT\n" << env.str();
  if (extra && !extra->files.empty()) {
    out << ".SH FILES\n";
    definitions(out, extra->files);
  }
  if (extra && !extra->examples.empty()) {
    out << ".SH EXAMPLES\n";
    prose(out, extra->examples, false);
  }

  std::vector<std::string> see;
  if (!cmd.path.empty()) see.push_back(page_ref(root.page()));
  if (cmd.path.size() > 1) {  // the parent command's page
    std::string parent = root.page();
    for (size_t i = 0; i + 1 < cmd.path.size(); ++i) parent += "-" + cmd.path[i];
    see.push_back(page_ref(parent));
  }
  for (const DocCommand& sub : cmd.commands) see.push_back(page_ref(sub.page()));
  if (extra && !extra->see_also.empty()) see.push_back(roff(extra->see_also));
  if (!see.empty()) {
    out << ".SH SEE ALSO\n";
    for (size_t i = 0; i < see.size(); ++i) out << see[i] << (i + 1 < see.size() ? ",\n" : "\n");
  }
  return out.str();
}

}  // namespace memra::cli
