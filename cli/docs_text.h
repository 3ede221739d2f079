// Extra prose for the generated man pages, keyed by command, for what a one-line CLI description
// cannot hold (file formats, examples, environment). Add an entry in docs_text.cpp next to the
// others; `memra generate all` (tools/regen-docs.sh) puts it into man/.
//
// Text is plain, not roff; the generator escapes everything. In `description` and `examples`,
// paragraphs are separated by a blank line and lines indented by two spaces are shown verbatim
// (commands, file layouts). `files` and `environment` are lists: an unindented line names an
// entry (a file, a variable) and the indented lines under it describe it.
#pragma once
#include <string>

namespace memra::cli {

struct DocText {
  std::string summary;      // NAME line; empty: the CLI description up to its first period
  std::string description;  // paragraphs after the CLI description
  std::string files;        // FILES section
  std::string environment;  // ENVIRONMENT section
  std::string examples;     // EXAMPLES section
  std::string see_also;     // extra SEE ALSO entries, e.g. "memra-restore(1)", comma-separated
};

// Extra text for the command spelled `words` ("memra", "memra load", "memra gate run"), or null.
const DocText* doc_text(const std::string& words);

}  // namespace memra::cli
