// Numeric and discrete stage comparisons for memra parity.
#include "parity/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/error.h"

namespace memra {

Tolerance tolerance_for(const RealizationInfo& engine, const std::string& dump_dtype) {
  const std::string cls = std::string(engine.precision_class) + " vs " + dump_dtype;
  // Against an f32/f64 transformers forward each realization has its own tolerance (the exact f32
  // paths agree to ~1e-6 relative-to-max; 1e-5 leaves a decade of headroom and still catches any
  // real mechanism error, which shows up at 1e-3 and above: docs/parity.md).
  if (dump_dtype == "float32" || dump_dtype == "float64") return {cls, engine.parity_rel_to_max, engine.parity_rel_to_max};
  // A bf16 reference is only good to the bf16 class, whatever the engine: the tolerance of the
  // realizations that store bf16 (cuda-fast).
  double bf16 = 0.0;
  for (const RealizationInfo& r : realizations())
    if (r.storage == "bf16") bf16 = std::max(bf16, r.parity_rel_to_max);
  return {cls, std::max(bf16, engine.parity_rel_to_max), std::max(bf16, engine.parity_rel_to_max)};
}

double decision_band_at(double relative, const std::vector<float>& reference_scale, const std::vector<float>& engine_scale) {
  bool any = false;
  double scale = 0;
  for (const auto* v : {&reference_scale, &engine_scale})
    for (float x : *v)
      if (std::isfinite(x) && x >= 0) {
        any = true;
        scale = std::max(scale, static_cast<double>(x));
      }
  return relative * (any ? scale : 1.0);
}

double StageResult::score_drift_to_band(int64_t from, int64_t to) const {
  double m = -1;
  to = std::min<int64_t>({to, rows, static_cast<int64_t>(score_drift.size())});
  for (int64_t t = std::max<int64_t>(from, 0); t < to; ++t) m = std::max(m, score_drift[t]);
  return m;
}

bool flip_in_band(double reference_margin, double engine_margin, double band, double reference_boundary,
                  double engine_boundary) {
  if (reference_margin == 0.0) {  // a tie: the rule decides it
    if (engine_margin == 0.0)     // tied on both sides: the same tie only when at the same value
      return std::isfinite(reference_boundary) && std::isfinite(engine_boundary) &&
             std::fabs(reference_boundary - engine_boundary) <= band;
    return engine_margin > 0.0 && engine_margin <= band;
  }
  return reference_margin > 0.0 && reference_margin <= band;
}

std::string Flip::describe() const {
  auto g = [](double v) { return std::isnan(v) ? std::string("none") : format_g(v); };
  std::string s = "margin " + format_g(margin) + " (engine " + format_g(engine_margin) + ")";
  if (double_tie()) s += " boundary " + g(boundary) + " (engine " + g(engine_boundary) + ")";
  return s + " band " + format_g(band);
}

int64_t min_rows_compared(int64_t rows_total) { return rows_total <= 0 ? 0 : (rows_total + 1) / 2; }

std::string format_g(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string StageResult::verdict() const {
  if (!pass) return "FAIL";
  return rows < min_rows ? "INCONCLUSIVE" : "PASS";
}

std::string StageResult::line() const {
  std::string s = name + "  " + verdict() + "  rows " + std::to_string(rows) + "/" + std::to_string(rows_total);
  if (rows < min_rows) s += " (floor " + std::to_string(min_rows) + ")";
  if (kind == "values") {
    s += "  max_abs " + format_g(max_abs) + " at " + std::to_string(index) + " (got " + format_g(got) + ", want " + format_g(want) +
         ")  rel_to_max " + format_g(rel_to_max) + " (tolerance " + format_g(tolerance) + ")";
    if (top1_total >= 0)
      s += "  top1 " + std::to_string(top1_agree) + "/" + std::to_string(top1_total) +
           (top1_near_ties > 0 ? " (+" + std::to_string(top1_near_ties) + " near-tie)" : "");
  } else {
    s += "  flips " + std::to_string(flips.size()) + " (" +
         std::to_string(flips_out_of_band) + " out of band)";
    if (score_drift_to_band() >= 0) s += "  score drift/band " + format_g(score_drift_to_band());
    for (const Flip& f : flips) {
      if (&f - flips.data() >= 3) {
        s += " ...";
        break;
      }
      s += "  [pos " + std::to_string(f.position) + " " + f.describe() + (f.in_band ? " IN-BAND" : " OUT-OF-BAND") + "]";
    }
  }
  return s;
}

nlohmann::json StageResult::to_json() const {
  nlohmann::json j = {{"name", name},         {"kind", kind},   {"result", verdict()},
                      {"rows", rows},         {"rows_total", rows_total}, {"min_rows", min_rows}};
  if (kind == "values") {
    j["max_abs"] = max_abs;
    j["index"] = index;
    j["got"] = got;
    j["want"] = want;
    j["rel_to_max"] = rel_to_max;
    j["tolerance"] = tolerance;
    if (top1_total >= 0) {
      j["top1_agree"] = top1_agree;
      j["top1_total"] = top1_total;
      j["top1_near_ties"] = top1_near_ties;
    }
  } else {
    j["flips_out_of_band"] = flips_out_of_band;
    nlohmann::json fl = nlohmann::json::array();
    for (const Flip& f : flips) {
      nlohmann::json fj = {{"position", f.position}, {"reference", f.reference}, {"engine", f.engine}, {"margin", f.margin},
                           {"engine_margin", f.engine_margin}, {"band", f.band}, {"class", f.in_band ? "IN-BAND" : "OUT-OF-BAND"}};
      if (f.double_tie()) {  // what a tie on both sides was judged by (null: not recorded)
        fj["boundary"] = std::isnan(f.boundary) ? nlohmann::json(nullptr) : nlohmann::json(f.boundary);
        fj["engine_boundary"] = std::isnan(f.engine_boundary) ? nlohmann::json(nullptr) : nlohmann::json(f.engine_boundary);
      }
      fl.push_back(std::move(fj));
    }
    j["flips"] = fl;
    if (score_drift_to_band() >= 0) j["score_drift_to_band"] = score_drift_to_band();
  }
  return j;
}

StageResult compare_values(const std::string& name, const std::vector<float>& got, const std::vector<float>& want,
                           double tolerance, int64_t row_width) {
  if (got.size() != want.size())
    throw Error("stage " + name + ": engine produced " + std::to_string(got.size()) + " values, the dump has " +
                std::to_string(want.size()));
  StageResult r;
  r.name = name;
  r.kind = "values";
  r.tolerance = tolerance;
  double max_ref = 0;
  bool nonfinite = false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(want[i])) {
      if (!(std::isinf(got[i]) && got[i] == want[i])) nonfinite = true;
      continue;
    }
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(want[i])));
    double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (d > r.max_abs || r.index < 0) {
      r.max_abs = d;
      r.index = static_cast<int64_t>(i);
      r.got = got[i];
      r.want = want[i];
    }
  }
  r.rel_to_max = max_ref > 0 ? r.max_abs / max_ref : r.max_abs;
  r.pass = !nonfinite && r.rel_to_max <= tolerance;
  if (row_width > 0) {
    const int64_t rows = static_cast<int64_t>(got.size()) / row_width;
    r.top1_total = rows;
    r.top1_agree = 0;
    r.top1_near_ties = 0;
    // A disagreement is a near-tie when the reference's own lead of its top-1 over the engine's is
    // within the stage's tolerance at its scale (rel_to_max × the largest reference value): the same
    // allowance every value of the stage has.
    const double near = tolerance * max_ref;
    for (int64_t t = 0; t < rows; ++t) {
      auto g = std::max_element(got.begin() + t * row_width, got.begin() + (t + 1) * row_width);
      auto w = std::max_element(want.begin() + t * row_width, want.begin() + (t + 1) * row_width);
      const int64_t gi = g - got.begin() - t * row_width, wi = w - want.begin() - t * row_width;
      if (gi == wi) ++r.top1_agree;
      else if (static_cast<double>(*w) - want[t * row_width + gi] <= near) ++r.top1_near_ties;
    }
    if (r.top1_agree + r.top1_near_ties != rows) r.pass = false;
  }
  return r;
}

StageResult compare_decisions(const std::string& name, const DecisionRows& engine, const DecisionRows& reference, int64_t k,
                              double relative_band, int64_t first_row) {
  if (engine.selected.size() != reference.selected.size() || k <= 0)
    throw Error("stage " + name + ": engine has " + std::to_string(engine.selected.size()) + " decisions, the reference " +
                std::to_string(reference.selected.size()));
  StageResult r;
  r.name = name;
  r.kind = "decisions";
  r.rows = r.rows_total = static_cast<int64_t>(reference.selected.size()) / k;
  auto check_boundary = [&](const DecisionRows& d, const char* side) {  // sizes are hostile
    if (!d.boundary.empty() && static_cast<int64_t>(d.boundary.size()) != r.rows)
      throw Error("stage " + name + ": the " + side + " recorded " + std::to_string(d.boundary.size()) + " boundary scores for " +
                      std::to_string(r.rows) + " rows",
                  "a decision stage records one boundary score (its k-th largest score) per row, or none");
  };
  check_boundary(engine, "engine");
  check_boundary(reference, "reference");
  const double band = decision_band_at(relative_band, reference.scale, engine.scale);
  r.score_drift.assign(r.rows, -1);
  auto at = [](const std::vector<float>& v, int64_t t, double missing) {
    return t < static_cast<int64_t>(v.size()) ? static_cast<double>(v[t]) : missing;
  };
  for (int64_t t = std::max<int64_t>(first_row, 0); t < r.rows; ++t) {
    std::vector<int64_t> a, b;
    for (int64_t i = 0; i < k; ++i) {
      if (engine.selected[t * k + i] >= 0) a.push_back(static_cast<int64_t>(engine.selected[t * k + i]));
      if (reference.selected[t * k + i] >= 0) b.push_back(static_cast<int64_t>(reference.selected[t * k + i]));
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    const double rs = at(reference.scale, t, -1), es = at(engine.scale, t, -1);
    r.score_drift[t] = a == b && rs >= 0 && es >= 0 && band > 0 ? std::fabs(es - rs) / band : -1;
    if (a == b) continue;
    const double m = at(reference.margin, t, INFINITY), em = at(engine.margin, t, INFINITY);
    const double bd = at(reference.boundary, t, NAN), ebd = at(engine.boundary, t, NAN);
    Flip f{t, b, a, m, em, band, flip_in_band(m, em, band, bd, ebd), bd, ebd};
    if (!f.in_band) ++r.flips_out_of_band;
    r.flips.push_back(f);
  }
  r.pass = r.flips_out_of_band == 0;
  return r;
}

int64_t causal_rank(const std::string& stage) {
  if (stage == "logits") return std::numeric_limits<int64_t>::max() - 1;
  if (stage == "logits_incremental") return std::numeric_limits<int64_t>::max();
  const size_t dot = stage.find('.');
  const std::string kind = stage.substr(0, dot);
  const int64_t layer = dot == std::string::npos ? 0 : std::atoll(stage.c_str() + dot + 1);
  return 3 * layer + (kind == "indexer" ? 0 : kind == "router" ? 1 : 2);
}

InBandCut first_in_band_flip(const std::vector<StageResult>& decisions) {
  InBandCut cut;
  for (const auto& d : decisions)
    for (const Flip& f : d.flips) {
      if (!f.in_band) continue;
      const int64_t rank = causal_rank(d.name);
      if (cut.position < 0 || f.position < cut.position || (f.position == cut.position && rank < cut.rank))
        cut = {f.position, rank};
    }
  return cut;
}

void restrict_decisions(StageResult& d, const InBandCut& cut) {
  const bool at_cut_too = causal_rank(d.name) <= cut.rank;  // this stage at the cut's position precedes it
  const int64_t end = cut.position + (at_cut_too ? 1 : 0);  // positions [0, end) are judged
  std::vector<Flip> kept;
  for (const Flip& f : d.flips)
    if (f.position < end) kept.push_back(f);
  d.flips = std::move(kept);
  d.rows = std::min(d.rows_total, end);
  d.flips_out_of_band = 0;
  for (const Flip& f : d.flips) d.flips_out_of_band += !f.in_band;
  d.pass = d.flips_out_of_band == 0;
}

}  // namespace memra
