// memra generate (placeholder until its issue lands).
#include "command.h"
#include "core/error.h"

namespace memra::cli {

void setup_generate(CLI::App& app, Context& ctx) {
  auto* sub = app.add_subcommand("generate", "generate (not built yet)");
  sub->callback([&ctx] {
    ctx.run = []() -> int { throw Error("memra generate is not built yet", "see the open issues"); };
  });
}

}  // namespace memra::cli
