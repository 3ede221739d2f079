// memra snapshot (placeholder until its issue lands).
#include "command.h"
#include "core/error.h"

namespace memra::cli {

void setup_snapshot(CLI::App& app, Context& ctx) {
  auto* sub = app.add_subcommand("snapshot", "snapshot (not built yet)");
  sub->callback([&ctx] {
    ctx.run = []() -> int { throw Error("memra snapshot is not built yet", "see the open issues"); };
  });
}

}  // namespace memra::cli
