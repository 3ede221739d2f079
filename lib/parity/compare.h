// Stage comparisons for parity: numeric stages (max abs diff with its index and both values,
// relative-to-max, top-1 agreement for logits) and discrete decisions (router expert sets, indexer
// selections) whose flips are judged against the reference's margin.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/realization.h"

namespace memra {

// Tolerances per precision class (docs/parity.md): relative-to-max for numeric stages, and the
// band within which a reference decision margin counts as a near-tie.
struct Tolerance {
  std::string precision_class;  // e.g. "cpu-f32-exact vs float32"
  double rel_to_max;
  double decision_band;
};
Tolerance tolerance_for(const RealizationInfo& engine, const std::string& dump_compute_dtype);

struct Flip {
  int64_t position;
  std::vector<int64_t> reference, engine;  // the two sets
  double margin;                            // the reference's selection margin at that position
  bool in_band;
};

struct StageResult {
  std::string name;
  std::string kind;  // "values" or "decisions"
  bool pass = true;
  // values
  double max_abs = 0;
  int64_t index = -1;  // flat index of the max abs diff
  double got = 0, want = 0;
  double rel_to_max = 0;
  double tolerance = 0;
  int64_t top1_agree = -1, top1_total = -1;  // rows whose argmax agrees (logits stages)
  // decisions (values: rows compared, fewer than all after an in-band flip)
  int64_t rows = 0;
  std::vector<Flip> flips;
  int64_t flips_out_of_band = 0;

  std::string line() const;  // one human line: "logits  PASS  max_abs ... "
  nlohmann::json to_json() const;
};

// got/want of equal length; row_width > 0 adds top-1 agreement over rows of that width.
StageResult compare_values(const std::string& name, const std::vector<float>& got, const std::vector<float>& want,
                           double tolerance, int64_t row_width = 0);

// Row sets of width k (values < 0 are padding), with the reference's per-row margins.
StageResult compare_decisions(const std::string& name, const std::vector<float>& engine, const std::vector<int64_t>& reference,
                              int64_t k, const std::vector<float>& reference_margin, double band);

// Position of the earliest in-band flip over all decision stages, or -1. Everything causally after
// it (later positions, and later stages at that position) may legitimately differ.
int64_t first_in_band_flip(const std::vector<StageResult>& decisions);
// Keeps only the flips at positions <= t0 and re-judges the stage.
void restrict_decisions(StageResult& decisions, int64_t t0);

}  // namespace memra
