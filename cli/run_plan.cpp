// Planned token reading and run checks (see run_plan.h).
#include "run_plan.h"

#include "format/token_list.h"
#include "options.h"
#include "progress.h"

namespace memra::cli {

std::vector<int32_t> read_tokens_planned(const std::string& path, const Model& model, uint64_t limit,
                                         const std::function<RunShape(int64_t)>& shape, int64_t max_tokens,
                                         const Context& ctx) {
  const uint64_t model_bytes = model_resident_bytes(model, shape(1).device);
  const int64_t fits = largest_fitting(model.config(), model_bytes, limit, 1, std::max<int64_t>(max_tokens, 1), shape);
  // Not even one token fits: the run itself is too large (a capacity, not the token count), so
  // say what it needs instead of "more than 0 tokens".
  if (fits < 1) require_fits(plan_memory(model.config(), shape(1), model_bytes), limit, "this run");
  TokenListLimits limits;
  if (fits < max_tokens) {
    limits.max_tokens = std::max<int64_t>(fits, 0);
    limits.why = "the most whose run fits in the " + format_bytes(limit) + " memory limit";
    limits.hint = "give fewer tokens, a --chunk that bounds the forward scratch, or raise --max-memory";
  } else {
    limits.max_tokens = max_tokens;
    limits.why = "the most this run can hold";
    limits.hint = "give fewer tokens or raise --capacity";
  }
  Progress progress("reading tokens", ctx.quiet);
  limits.on_progress = [&](int64_t n) { progress.update(n, 0); };
  std::vector<int32_t> tokens = read_token_list(path, limits);
  progress.finish();
  return tokens;
}

void require_run_fits(const Model& model, uint64_t limit, const RunShape& shape, const std::string& what) {
  require_fits(plan_memory(model.config(), shape, model_resident_bytes(model, shape.device)), limit, what);
}

}  // namespace memra::cli
