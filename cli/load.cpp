// memra load (placeholder until its issue lands).
#include "command.h"
#include "core/error.h"

namespace memra::cli {

void setup_load(CLI::App& app, Context& ctx) {
  auto* sub = app.add_subcommand("load", "load (not built yet)");
  sub->callback([&ctx] {
    ctx.run = []() -> int { throw Error("memra load is not built yet", "see the open issues"); };
  });
}

}  // namespace memra::cli
