// Stage comparisons for parity (docs/parity.md): numeric stages (max abs diff with its index and
// both values, relative-to-max, top-1 agreement for logits) and discrete decisions (router expert
// sets, indexer selections) whose flips are judged against both sides' selection margins (and, for
// a tie on both sides, their boundary scores). Every stage reports how many rows it compared out
// of how many it has; a stage that compared fewer than its floor is INCONCLUSIVE, never a PASS.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/realization.h"

namespace memra {

// Tolerances per precision class (docs/parity.md): relative-to-max for numeric stages, and the
// band within which a reference decision margin counts as a near-tie, relative to the decision
// stage's scale (its largest |score|, see decision_band_at) as rel_to_max is relative to a value
// stage's largest value.
struct Tolerance {
  std::string precision_class;  // e.g. "cpu-f32-exact vs float32"
  double rel_to_max;
  double decision_band;
};

// The near-tie band of a decision stage: `relative` × its scale, the largest |score| either side
// recorded in any row (per-row scales: the rows' largest |score|). Not per row: a dot product's
// rounding error follows the size of its terms, not of its result, and a row whose scores cancel
// (the indexer's ReLU zeroes them all) would get a band of nothing. Neither side recorded a scale:
// scale 1, an absolute band, as for dumps written before scales were traced.
double decision_band_at(double relative, const std::vector<float>& reference_scale, const std::vector<float>& engine_scale);
Tolerance tolerance_for(const RealizationInfo& engine, const std::string& dump_compute_dtype);

// A number as reports print it: %.6g.
std::string format_g(double v);

struct Flip {
  int64_t position;
  std::vector<int64_t> reference, engine;  // the two sets
  double margin;                            // the reference's selection margin at that position
  double engine_margin;                     // the engine's (inf when it has none, e.g. hash routing)
  double band;                              // the stage's near-tie band (decision_band_at)
  bool in_band;
  // Both sides' boundary scores (the k-th largest, where a tie sits; NaN: not recorded).
  double boundary = std::numeric_limits<double>::quiet_NaN();
  double engine_boundary = std::numeric_limits<double>::quiet_NaN();

  bool double_tie() const { return margin == 0.0 && engine_margin == 0.0; }
  // "margin M (engine E) band B", with "boundary X (engine Y)" before the band for a double tie
  // ("none" for a boundary not recorded): what the flip was judged by.
  std::string describe() const;
};

// Whether a flip is a legitimate near-tie: the reference's margin is within the band and above 0.
// A reference margin of exactly 0 is a tie that the lower-index rule (docs/architecture.md §5)
// decides identically on both sides when both see the same tied entries, so a flip there is
// OUT-OF-BAND, with two exceptions:
// - the engine's values are not tied (0 < engine margin <= band): a near-tie on its side;
// - both sides are tied (engine margin 0 too) and both recorded their boundary score (the k-th
//   largest, the value the tie sits at), and the two boundaries agree within the band: both tie at
//   the same value, and which entries join the tie is rounding (the indexer's ReLU makes many
//   scores exactly 0, and an entry at 1e-9 on one side can be exactly 0 on the other).
// A boundary not recorded (NaN; dumps and traces made before boundaries were) keeps a double tie
// OUT-OF-BAND, as does one that differs by more than the band.
bool flip_in_band(double reference_margin, double engine_margin, double band,
                  double reference_boundary = std::numeric_limits<double>::quiet_NaN(),
                  double engine_boundary = std::numeric_limits<double>::quiet_NaN());

// The fewest rows a stage with `rows_total` rows must compare to count: half of them (rounded up),
// at least 1. Fewer (after an in-band flip cut the comparison short) is INCONCLUSIVE.
int64_t min_rows_compared(int64_t rows_total);

struct StageResult {
  std::string name;
  std::string kind;  // "values" or "decisions"
  bool pass = true;
  int64_t rows = 0;        // rows (positions) compared
  int64_t rows_total = 0;  // rows the stage has
  int64_t min_rows = 0;    // the floor; rows < min_rows makes a passing stage INCONCLUSIVE
  // values
  double max_abs = 0;
  int64_t index = -1;  // flat index of the max abs diff
  double got = 0, want = 0;
  double rel_to_max = 0;
  double tolerance = 0;
  int64_t top1_agree = -1, top1_total = -1;  // rows whose argmax agrees (logits stages)
  int64_t top1_near_ties = 0;                // rows whose argmax differs within the tolerance (not a failure)
  // decisions
  std::vector<Flip> flips;
  int64_t flips_out_of_band = 0;
  // the measured drift of the decision scores, per row: |engine scale − reference scale| / band
  // (-1: a row that flipped, or a side without scales). Near 1 or above, in-band flips are not rare
  // accidents: the band is too tight for this pair of realizations.
  std::vector<double> score_drift;
  // The largest score drift over rows [from, to) ∩ the rows compared (-1: none).
  double score_drift_to_band(int64_t from = 0, int64_t to = INT64_MAX) const;

  std::string verdict() const;  // "FAIL" when !pass, else "INCONCLUSIVE" below the floor, else "PASS"
  std::string line() const;     // one human line: "logits  PASS  rows 160/160  max_abs ... "
  nlohmann::json to_json() const;
};

// got/want of equal length; row_width > 0 adds top-1 agreement over rows of that width. rows and
// rows_total are left for the caller (the values may be a prefix of the stage).
StageResult compare_values(const std::string& name, const std::vector<float>& got, const std::vector<float>& want,
                           double tolerance, int64_t row_width = 0);

// One side of a decision stage: per row a set of width k (values < 0 are padding), the selection
// margin (k-th minus (k+1)-th score; missing: inf, no near-tie can be claimed), the scale
// (largest |score|; missing: see decision_band_at) and the boundary (the k-th largest score, where
// a tie sits; empty: none recorded, a NaN row: that row's unknown; see flip_in_band). A boundary
// is one value per row or none: any other length is an Error.
struct DecisionRows {
  std::vector<float> selected;
  std::vector<float> margin;
  std::vector<float> scale;
  std::vector<float> boundary = {};
};

// rows = rows_total = the row count; `relative_band` is Tolerance::decision_band. Rows before
// `first_row` are not compared (a caller that judged them already); the band still takes the
// whole stage's scale.
StageResult compare_decisions(const std::string& name, const DecisionRows& engine, const DecisionRows& reference, int64_t k,
                              double relative_band, int64_t first_row = 0);

// Causal order of stages within a position: per layer L the indexer (inside attention), then the
// router (after attention), then the layer's streams; then logits, logits_incremental.
int64_t causal_rank(const std::string& stage);

// The earliest in-band flip over all decision stages: its position (-1 when none) and the causal
// rank of the first stage that flipped there. Everything causally after it (later positions, and
// later stages at that position) may legitimately differ.
struct InBandCut {
  int64_t position = -1;
  int64_t rank = -1;
};
InBandCut first_in_band_flip(const std::vector<StageResult>& decisions);
// Keeps only the flips before the cut (earlier positions; at the cut's position only stages not
// causally after it), counts those rows as compared and re-judges the stage.
void restrict_decisions(StageResult& decisions, const InBandCut& cut);

}  // namespace memra
