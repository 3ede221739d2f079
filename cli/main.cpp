// memra entry point: builds the CLI, runs the selected subcommand, maps errors to exit codes
// (0 pass, 1 definite negative, 2 usage/runtime error). Only this file decides how the process ends.
#include <signal.h>

#include <cstdio>
#include <iostream>

#include "command.h"
#include "core/error.h"
#include "memra_version.h"

namespace memra::cli {

void note(const Context& ctx, const std::string& text) {
  if (!ctx.quiet) std::cerr << "memra: note: " << text << "\n";
}

void build_app(CLI::App& app, Context& ctx) {
  ctx.root = &app;
  app.description(
      "memra: DeepSeek-V4 inference whose every step is proven on disk (hashed state files, "
      "manifest-first parity, correctness gates).");
  app.set_version_flag("--version", std::string("memra ") + MEMRA_VERSION + " (commit " + MEMRA_GIT_COMMIT + ")");
  app.add_flag("-q,--quiet", ctx.quiet, "No progress or notes on stderr");
  app.require_subcommand(1);
  setup_load(app, ctx);
  setup_prefill(app, ctx);
  setup_snapshot(app, ctx);
  setup_restore(app, ctx);
  setup_draft(app, ctx);
  setup_parity(app, ctx);
  setup_gate(app, ctx);
  setup_devices(app, ctx);
  setup_tokenize(app, ctx);
  setup_generate(app, ctx);
}

}  // namespace memra::cli

int main(int argc, char** argv) {
  // A closed pipe on stdout (memra ... | head) is not an error: writes fail with EPIPE and we exit 0.
  signal(SIGPIPE, SIG_IGN);
  CLI::App app;
  memra::cli::Context ctx;
  memra::cli::build_app(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    std::cerr << "memra: error: " << e.what() << "\n";
    std::cerr << "memra: hint: run 'memra --help' or 'memra <command> --help'\n";
    return memra::kExitError;
  }
  try {
    int code = ctx.run ? ctx.run() : memra::kExitError;
    std::cout.flush();
    if (std::cout.bad() || std::ferror(stdout)) {
      if (errno == EPIPE) return code;
      std::cerr << "memra: error: cannot write to stdout\n";
      return memra::kExitError;
    }
    return code;
  } catch (const memra::BrokenPipe&) {
    return memra::kExitOk;
  } catch (const memra::Error& e) {
    std::cerr << "memra: error: " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << "memra: hint: " << e.hint() << "\n";
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::cerr << "memra: error: out of memory\n";
    std::cerr << "memra: hint: lower --capacity (the decode state is planned up front) or use a machine with more memory\n";
    return memra::kExitError;
  } catch (const std::exception& e) {
    std::cerr << "memra: error: " << e.what() << "\n";
    return memra::kExitError;
  }
}
