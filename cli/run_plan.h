// The memory plan (engine/memory_plan.h) as the commands use it: token lists read no further than
// the longest run that fits the limit, with progress on long streams, then the whole run checked
// before its decode state is allocated.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "command.h"
#include "engine/memory_plan.h"
#include "model/model.h"

namespace memra::cli {

// Reads `path` as a token list, refusing more than `max_tokens` or more than the largest T whose
// run shape(T) fits in `limit` (bytes) next to the loaded model.
std::vector<int32_t> read_tokens_planned(const std::string& path, const Model& model, uint64_t limit,
                                         const std::function<RunShape(int64_t)>& shape, int64_t max_tokens,
                                         const Context& ctx);

// require_fits() for the run shape(T) of `what`.
void require_run_fits(const Model& model, uint64_t limit, const RunShape& shape, const std::string& what);

}  // namespace memra::cli
