// Extra man-page prose per command (see docs_text.h for the markup). Keep it true for the CLI as
// built: the freshness test only checks that the committed pages match this text, not the facts.
#include "docs_text.h"

#include <map>

namespace memra::cli {

namespace {

const std::map<std::string, DocText>& registry() {
  static const std::map<std::string, DocText> entries = {
      {"memra",
       {.summary = "DeepSeek-V4 inference with hashed, verifiable state",
        .description =
            "Each step of inference can be written to disk as a state file that records the hashes of "
            "what it was computed from, so a run can be restored, replayed and compared against a "
            "reference oracle. Every subcommand has its own page, memra-COMMAND(1), and prints its "
            "options with --help.\n"
            "\n"
            "Results go to standard output and diagnostics to standard error; a file name of - means "
            "standard input or standard output. Commands that report results accept --json for a "
            "machine-readable document.",
        .files = {},
        .environment =
            "MEMRA_CUDA_LIB\n"
            "  path of the CUDA backend library to load instead of libmemra_cuda.so next to the memra "
            "binary\n",
        .examples =
            "List the compute devices memra can use:\n"
            "\n"
            "  memra devices\n"
            "\n"
            "Show the options of one command:\n"
            "\n"
            "  memra load --help",
        .see_also = {}}},
      {"memra devices",
       {.summary = {},
        .description =
            "The CUDA backend is a separate library, libmemra_cuda.so, that memra loads only when a "
            "command needs a GPU; CPU-only commands never load it and never pay the CUDA start-up. "
            "memra looks for it in the folder of the memra binary, then in ../lib/memra, ../lib and "
            "the parent folder, unless MEMRA_CUDA_LIB names it.\n"
            "\n"
            "When the library is not there (a build without CUDA), cannot be loaded, or reports no "
            "device, memra devices says so in one line and still exits 0: having no GPU is an "
            "answer, not an error.",
        .files = "libmemra_cuda.so\n  the CUDA backend, built when CMake finds nvcc (MEMRA_CUDA=AUTO or ON)",
        .environment = "MEMRA_CUDA_LIB\n  path of the CUDA backend library; when set, no other place is searched",
        .examples = "  memra devices\n  memra devices --json",
        .see_also = {}}},
  };
  return entries;
}

}  // namespace

const DocText* doc_text(const std::string& words) {
  auto it = registry().find(words);
  return it == registry().end() ? nullptr : &it->second;
}

}  // namespace memra::cli
