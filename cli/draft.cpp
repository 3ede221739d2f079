// memra draft (placeholder until its issue lands).
#include "command.h"
#include "core/error.h"

namespace memra::cli {

void setup_draft(CLI::App& app, Context& ctx) {
  auto* sub = app.add_subcommand("draft", "draft (not built yet)");
  sub->callback([&ctx] {
    ctx.run = []() -> int { throw Error("memra draft is not built yet", "see the open issues"); };
  });
}

}  // namespace memra::cli
