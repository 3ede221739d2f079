// memra restore (placeholder until its issue lands).
#include "command.h"
#include "core/error.h"

namespace memra::cli {

void setup_restore(CLI::App& app, Context& ctx) {
  auto* sub = app.add_subcommand("restore", "restore (not built yet)");
  sub->callback([&ctx] {
    ctx.run = []() -> int { throw Error("memra restore is not built yet", "see the open issues"); };
  });
}

}  // namespace memra::cli
