// memra prefill (placeholder until its issue lands).
#include "command.h"
#include "core/error.h"

namespace memra::cli {

void setup_prefill(CLI::App& app, Context& ctx) {
  auto* sub = app.add_subcommand("prefill", "prefill (not built yet)");
  sub->callback([&ctx] {
    ctx.run = []() -> int { throw Error("memra prefill is not built yet", "see the open issues"); };
  });
}

}  // namespace memra::cli
