// memra gate (placeholder until its issue lands).
#include "command.h"
#include "core/error.h"

namespace memra::cli {

void setup_gate(CLI::App& app, Context& ctx) {
  auto* sub = app.add_subcommand("gate", "gate (not built yet)");
  sub->callback([&ctx] {
    ctx.run = []() -> int { throw Error("memra gate is not built yet", "see the open issues"); };
  });
}

}  // namespace memra::cli
