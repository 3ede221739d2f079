// The router and indexer decisions of one sequence, gathered in position order from the traces of
// the forward calls that ran it (one monolithic call, chunks, decode steps), and their comparison
// between two runs of the same model (docs/parity.md: decisions and their near-tie bands).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "model/config.h"
#include "parity/compare.h"

namespace memra {

struct DecisionStage {
  std::string name;  // "router.L.experts", "indexer.L.selected"
  int64_t k;         // decisions per row
  DecisionRows rows;
};

class DecisionLog {
 public:
  // Every decision stage the config has, in causal order (per layer: indexer, then router).
  explicit DecisionLog(const ModelConfig& config);
  // Appends one call's rows; a stage (or margin, scale) the trace lacks adds nothing. A boundary
  // (`P.boundary`) is kept one per row once any call traced one (NaN rows for calls without); a
  // trace whose boundary length differs from its selection's rows is an Error.
  void append(const ForwardTrace& trace);
  const std::vector<DecisionStage>& stages() const { return stages_; }

 private:
  std::vector<DecisionStage> stages_;
};

// Stage by stage (both logs of the same config), reference margins first (compare_decisions); rows
// before `first_row` are not compared again (a gate that judges each step's new rows).
std::vector<StageResult> compare_decision_logs(const DecisionLog& engine, const DecisionLog& reference, double relative_band,
                                               int64_t first_row = 0);

}  // namespace memra
