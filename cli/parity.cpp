// memra parity (placeholder until its issue lands).
#include "command.h"
#include "core/error.h"

namespace memra::cli {

void setup_parity(CLI::App& app, Context& ctx) {
  auto* sub = app.add_subcommand("parity", "parity (not built yet)");
  sub->callback([&ctx] {
    ctx.run = []() -> int { throw Error("memra parity is not built yet", "see the open issues"); };
  });
}

}  // namespace memra::cli
