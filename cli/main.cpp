// memra entry point: builds the CLI, runs the selected subcommand, maps errors to exit codes
// (0 pass, 1 definite negative, 2 usage/runtime error). Only this file decides how the process ends.
#include <poll.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "command.h"
#include "core/error.h"
#include "format/json_guard.h"
#include "state/state_file.h"
#include "memra_version.h"

namespace memra::cli {

void note(const Context& ctx, const std::string& text) {
  if (!ctx.quiet) std::cerr << "memra: note: " << printable(text, 4000) << "\n";
}

void warn(const std::string& text) { std::cerr << "memra: warning: " << printable(text, 4000) << "\n"; }

std::optional<AuthKey> load_key(const std::string& path) {
  if (path.empty()) return std::nullopt;
  return AuthKey::load(path);
}

void check_state_key(const StateFile& file, const std::optional<AuthKey>& key, const Context& ctx) {
  if (key) file.verify_auth(*key);
  else if (file.has_auth_tag()) note(ctx, "state file " + file.path() + " carries a keyed tag that was not checked (pass --key FILE)");
}

void add_key_option(CLI::App* app, std::string& path, const std::string& what) {
  app->add_option("--key", path, what + " (a file of 32 random bytes; keyed BLAKE2b, docs/state-format.md)")
      ->type_name("FILE");
}

void report_nonfinite(const StateFile& file) {
  for (const NonFiniteClass& c : nonfinite_classes(file))
    warn("state class " + c.name + " holds " + std::to_string(c.nan) + " NaN and " + std::to_string(c.inf) +
         " infinite values (first at element " + std::to_string(c.first) +
         "): the saved computation overflowed; continuing it decodes garbage");
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
  setup_bench(app, ctx);
  setup_tokenize(app, ctx);
  setup_generate(app, ctx);
}

}  // namespace memra::cli

namespace {

// One diagnostic line, escaped: messages quote file names, tokens and arguments, and a control byte
// (ESC, NUL, a newline) must not reach the terminal or split the line.
void print_error(const std::string& what, const std::string& hint = {}) {
  std::cerr << "memra: error: " << memra::printable(what, 4000) << "\n";
  if (!hint.empty()) std::cerr << "memra: hint: " << memra::printable(hint, 4000) << "\n";
}

// Flushes stdout; a write error (ENOSPC on /dev/full, EIO) is exit 2, a reader that went away is not.
int finish_stdout(int code) {
  std::cout.flush();
  errno = 0;
  const bool failed = std::fflush(stdout) != 0 || std::cout.bad() || std::ferror(stdout);
  if (!failed) return code;
  const int err = errno;
  pollfd p{1, 0, 0};
  if (err == EPIPE || (::poll(&p, 1, 0) == 1 && (p.revents & POLLERR))) return code;  // `memra … | head`
  print_error(std::string("cannot write to stdout") + (err ? std::string(": ") + std::strerror(err) : std::string()));
  return memra::kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  // A closed pipe on stdout (memra ... | head) is not an error: writes fail with EPIPE and we exit 0.
  signal(SIGPIPE, SIG_IGN);
  // A file size limit (ulimit -f) makes writes fail with EFBIG, an error like ENOSPC, not a kill.
  signal(SIGXFSZ, SIG_IGN);
  CLI::App app;
  memra::cli::Context ctx;
  memra::cli::build_app(app, ctx);
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::Success& e) {
      return finish_stdout(app.exit(e));  // --help, --version: `--help > /dev/full` is a write error
    } catch (const CLI::ParseError& e) {
      print_error(e.what(), "run 'memra --help' or 'memra <command> --help'");
      return memra::kExitError;
    }
    return finish_stdout(ctx.run ? ctx.run() : memra::kExitError);
  } catch (const memra::BrokenPipe&) {
    return memra::kExitOk;
  } catch (const memra::Error& e) {
    print_error(e.what(), e.hint());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    print_error("out of memory",
                "lower --capacity or --chunk, or --max-memory so the memory plan refuses what cannot fit");
    return memra::kExitError;
  } catch (const std::length_error&) {
    print_error("a buffer would be larger than memory can address",
                "this size should have been refused with a clear message; please report the command line");
    return memra::kExitError;
  } catch (const std::filesystem::filesystem_error& e) {
    print_error(e.path1().string() + ": " + e.code().message());
    return memra::kExitError;
  } catch (const std::exception&) {
    print_error("internal error: an input reached code that did not check it",
                "please report the command line and its input files");
    return memra::kExitError;
  }
}
