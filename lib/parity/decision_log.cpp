// Decision logs: gathering router and indexer decisions across forward calls (see decision_log.h).
#include "parity/decision_log.h"

#include <limits>

#include "core/error.h"

namespace memra {

DecisionLog::DecisionLog(const ModelConfig& cfg) {
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
    const std::string L = std::to_string(l);
    if (cfg.layer_types[l] == LayerKind::kCSA) stages_.push_back({"indexer." + L + ".selected", cfg.index_topk, {}});
    stages_.push_back({"router." + L + ".experts", cfg.num_experts_per_tok, {}});
  }
}

void DecisionLog::append(const ForwardTrace& trace) {
  auto take = [&](const std::string& name, std::vector<float>& into) {
    auto it = trace.arrays.find(name);
    if (it == trace.arrays.end()) return;
    into.insert(into.end(), it->second.begin(), it->second.end());
  };
  for (DecisionStage& s : stages_) {
    const std::string prefix = s.name.substr(0, s.name.rfind('.') + 1);
    const size_t rows_before = s.rows.selected.size() / static_cast<size_t>(s.k);
    take(s.name, s.rows.selected);
    take(prefix + "margin", s.rows.margin);
    take(prefix + "scale", s.rows.scale);
    // The boundary stays one value per row of the log, or none: a call without one (a backend
    // that does not trace it) adds NaN rows (unknown) once any call has recorded one.
    const size_t rows_added = s.rows.selected.size() / static_cast<size_t>(s.k) - rows_before;
    const float unknown = std::numeric_limits<float>::quiet_NaN();
    auto it = trace.arrays.find(prefix + "boundary");
    if (it != trace.arrays.end()) {
      if (it->second.size() != rows_added)
        throw Error("trace of " + s.name + ": " + std::to_string(it->second.size()) + " boundary scores for " +
                        std::to_string(rows_added) + " rows",
                    "a backend traces one boundary score (the k-th largest score) per decision row");
      s.rows.boundary.resize(rows_before, unknown);
      s.rows.boundary.insert(s.rows.boundary.end(), it->second.begin(), it->second.end());
    } else if (!s.rows.boundary.empty()) {
      s.rows.boundary.resize(rows_before + rows_added, unknown);
    }
  }
}

std::vector<StageResult> compare_decision_logs(const DecisionLog& engine, const DecisionLog& reference, double relative_band,
                                               int64_t first_row) {
  if (engine.stages().size() != reference.stages().size())
    throw Error("decision logs of different models (" + std::to_string(engine.stages().size()) + " and " +
                std::to_string(reference.stages().size()) + " stages)");
  std::vector<StageResult> out;
  for (size_t i = 0; i < engine.stages().size(); ++i) {
    const DecisionStage& e = engine.stages()[i];
    const DecisionStage& r = reference.stages()[i];
    if (r.rows.selected.empty() && e.rows.selected.empty()) continue;  // neither side traced it
    out.push_back(compare_decisions(e.name, e.rows, r.rows, e.k, relative_band, first_row));
  }
  return out;
}

}  // namespace memra
