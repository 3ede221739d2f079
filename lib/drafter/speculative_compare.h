// Speculative vs plain greedy decoding from one starting state, on one realization: the tokens of
// both (they must be identical), the drafter's statistics, and wall-clock timing of interleaved runs
// (speculative, plain, speculative, plain, ...) whose medians give tokens/s and the speed-up.
// Plain greedy runs on a trunk-only copy of the start (no drafter to feed): what decoding without a
// drafter costs. Used by `memra draft` and `memra gate speculative`.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "drafter/speculative.h"

namespace memra {

struct SpeculativeComparison {
  std::vector<int32_t> speculative;             // [≤ steps] of the first run
  std::vector<int32_t> greedy;                  // [≤ steps] of the first run
  bool identical = false;                       // every run of both emitted the same tokens
  int64_t first_difference = -1;                // index of the first differing token (first run), -1 when none
  SpeculativeStats stats;                       // of the first speculative run
  std::vector<double> speculative_s, greedy_s;  // [runs] wall seconds
  std::unique_ptr<State> final_state;           // after the first speculative run (trunk + drafter)
  std::unique_ptr<State> greedy_state;          // after the first plain run (trunk only)

  double median_speculative_s() const;
  double median_greedy_s() const;
  double speculative_tokens_per_s() const;
  double greedy_tokens_per_s() const;
  double speedup() const;  // median plain seconds / median speculative seconds
};

// `start` must carry a primed drafter and a processed position; it is left unchanged. runs ≥ 1.
// Both decodings stop after a token in `stop` (empty: exactly `steps` tokens, as the gates run).
SpeculativeComparison compare_speculative(const Backend& backend, const Drafter& drafter, const State& start,
                                          int64_t steps, const DraftShape& shape, int runs,
                                          std::span<const int32_t> stop = {}, Rollback rollback = Rollback::kKeep);

double median(std::vector<double> values);

}  // namespace memra
