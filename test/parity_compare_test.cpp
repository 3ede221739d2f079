// The selection primitives and the parity rules that judge them (docs/parity.md): the lower-index
// tie rule of every top-k, the selection margin and boundary, the classification of a decision flip
// (an exact tie is not a near-tie, unless both sides tie at one boundary), and the floor of rows a
// stage must compare to pass.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "engine/cpu_layer.h"
#include "engine/realization.h"
#include "loader_test_util.h"
#include "parity/compare.h"

using namespace memra;
using cpu::selection_boundary;
using cpu::selection_margin;
using cpu::topk_lower_index;

namespace {
const float kInf = std::numeric_limits<float>::infinity();
}

TEST_CASE("topk_lower_index: larger score first, ties to the lower index", "[parity][topk]") {
  CHECK(topk_lower_index({0.1f, 0.9f, 0.5f, 0.7f}, 2) == std::vector<int64_t>{1, 3});
  // Exact ties: the lower index wins, wherever the tied entries sit and whatever the length.
  CHECK(topk_lower_index({0.0f, 0.0f, 0.0f, 0.0f}, 2) == std::vector<int64_t>{0, 1});
  CHECK(topk_lower_index({0.2f, 0.5f, 0.3f, 0.5f, 0.5f}, 2) == std::vector<int64_t>{1, 3});
  CHECK(topk_lower_index({0.5f, 0.1f, 0.5f}, 1) == std::vector<int64_t>{0});
  // The ReLU-zero pattern of the indexer: many exact zeros after a few positive scores.
  std::vector<float> relu(40, 0.0f);
  relu[7] = 0.3f;
  relu[31] = 0.1f;
  CHECK(topk_lower_index(relu, 4) == std::vector<int64_t>{7, 31, 0, 1});
  // The choice among ties must not depend on the length (stock torch.topk's does).
  for (size_t n = 5; n < 200; n += 17) CHECK(topk_lower_index(std::vector<float>(n, 1.0f), 3) == std::vector<int64_t>{0, 1, 2});
  // -inf entries (not visible) are chosen last; k beyond the size returns everything; k = 0 nothing.
  CHECK(topk_lower_index({-kInf, 0.0f, -kInf}, 2) == std::vector<int64_t>{1, 0});
  CHECK(topk_lower_index({0.3f, 0.4f}, 5) == std::vector<int64_t>{1, 0});
  CHECK(topk_lower_index({0.3f, 0.4f}, 0).empty());
  CHECK(topk_lower_index({}, 3).empty());
}

TEST_CASE("selection_margin: k-th minus (k+1)-th largest", "[parity][topk]") {
  CHECK(selection_margin({0.1f, 0.9f, 0.5f, 0.7f}, 2) == Approx(0.2f));
  CHECK(selection_margin({0.1f, 0.9f, 0.5f, 0.7f}, 1) == Approx(0.2f));
  CHECK(selection_margin({0.1f, 0.9f, 0.5f, 0.7f}, 3) == Approx(0.4f));
  CHECK(selection_margin({0.5f, 0.2f, 0.5f}, 1) == 0.0f);  // a tie at the boundary
  CHECK(selection_margin({0.0f, 0.0f, 0.0f, 0.3f}, 2) == 0.0f);
  CHECK(selection_margin({0.0f, 0.4f, 0.0f, 0.3f}, 2) == Approx(0.3f));  // ties below the boundary do not matter
  // Nothing left out: no margin can be claimed.
  CHECK(std::isinf(selection_margin({0.3f, 0.4f}, 2)));
  CHECK(std::isinf(selection_margin({0.3f, 0.4f}, 3)));
  CHECK(std::isinf(selection_margin({0.3f}, 0)));
}

TEST_CASE("selection_boundary: the k-th largest, where a tie at the boundary sits", "[parity][topk]") {
  CHECK(selection_boundary({0.1f, 0.9f, 0.5f, 0.7f}, 2) == 0.7f);
  CHECK(selection_boundary({0.1f, 0.9f, 0.5f, 0.7f}, 1) == 0.9f);
  CHECK(selection_boundary({0.1f, 0.9f, 0.5f, 0.7f}, 3) == 0.5f);
  CHECK(selection_boundary({0.5f, 0.2f, 0.5f}, 1) == 0.5f);  // a tie at the boundary: its value
  // The ReLU-zero pattern: two positive scores, the rest exactly 0; k = 4 ties at 0.
  std::vector<float> relu(40, 0.0f);
  relu[7] = 0.3f;
  relu[31] = 0.1f;
  CHECK(selection_boundary(relu, 4) == 0.0f);
  CHECK(selection_margin(relu, 4) == 0.0f);
  CHECK(selection_boundary(relu, 2) == 0.1f);
  CHECK(selection_boundary({-2.0f, -1.0f, -3.0f}, 2) == -2.0f);
  // Nothing left out (selection_margin is inf): no boundary.
  CHECK(std::isnan(selection_boundary({0.3f, 0.4f}, 2)));
  CHECK(std::isnan(selection_boundary({0.3f, 0.4f}, 3)));
  CHECK(std::isnan(selection_boundary({0.3f}, 0)));
  CHECK(std::isnan(selection_boundary({}, 1)));
}

TEST_CASE("a flip at an exact tie is OUT-OF-BAND unless the engine's values are not tied", "[parity][decisions]") {
  const double band = 1e-5;
  CHECK(flip_in_band(5e-6, 0.0, band));     // a near-tie on the reference side
  CHECK(flip_in_band(5e-6, kInf, band));
  CHECK_FALSE(flip_in_band(2e-5, 0.0, band));  // a clear decision
  CHECK_FALSE(flip_in_band(kInf, 1e-9, band));
  CHECK_FALSE(flip_in_band(std::nan(""), 1e-9, band));
  // Reference margin exactly 0: the tie rule decides on both sides.
  CHECK_FALSE(flip_in_band(0.0, 0.0, band));   // both tied: a different tie rule
  CHECK_FALSE(flip_in_band(0.0, kInf, band));  // the engine has no margin to show
  CHECK_FALSE(flip_in_band(0.0, 0.5, band));   // the engine is clearly not tied: a real difference
  CHECK(flip_in_band(0.0, 3e-6, band));        // the engine's values are a near-tie, not a tie

  // compare_decisions applies it per row and reports both margins.
  const std::vector<float> reference = {0, 1, 2, 3, 4, 5};  // rows of k = 2
  const std::vector<float> engine = {0, 1, 2, 4, 4, 5};     // row 1 differs
  StageResult tie = compare_decisions("indexer.1.selected", {engine, {1.0f, 0.0f, 1.0f}}, {reference, {1.0f, 0.0f, 1.0f}}, 2, band);
  REQUIRE(tie.flips.size() == 1);
  CHECK(tie.flips[0].position == 1);
  CHECK(tie.flips[0].margin == 0.0);
  CHECK(tie.flips[0].engine_margin == 0.0);
  CHECK_FALSE(tie.flips[0].in_band);
  CHECK_FALSE(tie.pass);
  CHECK(tie.line().find("OUT-OF-BAND") != std::string::npos);
  StageResult near = compare_decisions("indexer.1.selected", {engine, {1.0f, 2e-6f, 1.0f}}, {reference, {1.0f, 0.0f, 1.0f}}, 2, band);
  CHECK(near.flips[0].in_band);
  CHECK(near.pass);
  CHECK(near.rows == 3);
  CHECK(near.rows_total == 3);
  CHECK(near.to_json()["flips"][0]["engine_margin"].get<double>() == Approx(2e-6));
  CHECK_FALSE(near.to_json()["flips"][0].contains("boundary"));  // not a tie on both sides
}

TEST_CASE("a flip between ties on both sides is IN-BAND only when both tie at one boundary, within the band",
          "[parity][decisions]") {
  const double band = 1e-5, kNaN = std::nan("");
  CHECK(flip_in_band(0.0, 0.0, band, 0.0, 0.0));           // both tie at 0: which entries join is rounding
  CHECK(flip_in_band(0.0, 0.0, band, 0.25, 0.25 + 5e-6));  // at one value within the band
  CHECK_FALSE(flip_in_band(0.0, 0.0, band, 0.0, 2e-5));    // at values further apart than the band
  CHECK_FALSE(flip_in_band(0.0, 0.0, band, kNaN, 0.0));    // a side that did not record its boundary
  CHECK_FALSE(flip_in_band(0.0, 0.0, band, 0.0, kNaN));
  CHECK_FALSE(flip_in_band(0.0, 0.0, band, kInf, kInf));
  CHECK_FALSE(flip_in_band(0.0, 0.0, band));               // neither (dumps and traces before boundaries)
  // Boundaries judge only a tie on both sides; every other case is as before.
  CHECK_FALSE(flip_in_band(0.0, 0.5, band, 0.0, 0.0));     // the engine is clearly not tied
  CHECK_FALSE(flip_in_band(2e-5, 0.0, band, 0.0, 0.0));    // the reference is clearly not tied
  CHECK(flip_in_band(0.0, 3e-6, band, 0.0, 1.0));          // a near-tie on the engine's side

  // Indexer rows of k = 2: row 1 flips, both sides tied there (margin 0).
  const std::vector<float> reference = {0, 1, 2, 3, 4, 5};
  const std::vector<float> engine = {0, 1, 2, 4, 4, 5};
  const std::vector<float> tied = {1.0f, 0.0f, 1.0f};
  auto judge = [&](std::vector<float> engine_boundary, std::vector<float> reference_boundary) {
    return compare_decisions("indexer.1.selected", {engine, tied, {}, std::move(engine_boundary)},
                             {reference, tied, {}, std::move(reference_boundary)}, 2, band);
  };
  SECTION("(a) equal boundaries, different sets: IN-BAND, the stage passes") {
    StageResult r = judge({0.5f, 0.0f, 0.5f}, {0.5f, 0.0f, 0.5f});
    REQUIRE(r.flips.size() == 1);
    CHECK(r.flips[0].position == 1);
    CHECK(r.flips[0].in_band);
    CHECK(r.pass);
    CHECK(r.verdict() == "PASS");
    CHECK(r.line().find("[pos 1 margin 0 (engine 0) boundary 0 (engine 0) band 1e-05 IN-BAND]") != std::string::npos);
    const nlohmann::json j = r.to_json()["flips"][0];
    CHECK(j["boundary"].get<double>() == 0.0);
    CHECK(j["engine_boundary"].get<double>() == 0.0);
    CHECK(j["class"] == "IN-BAND");
    // An in-band flip cuts the comparison there, as any near-tie does.
    CHECK(first_in_band_flip({r}).position == 1);
  }
  SECTION("(b) boundaries further apart than the band: OUT-OF-BAND, the stage fails") {
    StageResult r = judge({0.5f, 2e-5f, 0.5f}, {0.5f, 0.0f, 0.5f});
    REQUIRE(r.flips.size() == 1);
    CHECK_FALSE(r.flips[0].in_band);
    CHECK(r.flips_out_of_band == 1);
    CHECK_FALSE(r.pass);
    CHECK(r.verdict() == "FAIL");
    CHECK(r.line().find("[pos 1 margin 0 (engine 0) boundary 0 (engine 2e-05) band 1e-05 OUT-OF-BAND]") != std::string::npos);
    CHECK(r.to_json()["flips"][0]["engine_boundary"].get<double>() == Approx(2e-5));
  }
  SECTION("(c) a boundary missing on one side: OUT-OF-BAND, as before boundaries were recorded") {
    for (const auto& [eb, rb] : {std::pair<std::vector<float>, std::vector<float>>{{0.5f, 0.0f, 0.5f}, {}},
                                 {{}, {0.5f, 0.0f, 0.5f}},
                                 {{0.5f, kNaN, 0.5f}, {0.5f, 0.0f, 0.5f}},
                                 {{}, {}}}) {
      StageResult r = judge(eb, rb);
      REQUIRE(r.flips.size() == 1);
      CHECK_FALSE(r.flips[0].in_band);
      CHECK_FALSE(r.pass);
      CHECK(r.line().find("boundary ") != std::string::npos);
      CHECK(r.line().find("none") != std::string::npos);
      CHECK(r.to_json()["flips"][0].contains("boundary"));
    }
    CHECK(judge({0.5f, 0.0f, 0.5f}, {}).to_json()["flips"][0]["boundary"].is_null());
  }
  SECTION("(e) a boundary that is not one value per row is an error, on either side") {
    loader_test::require_error([&] { judge({0.0f, 0.0f}, {0.5f, 0.0f, 0.5f}); },
                               {"stage indexer.1.selected", "engine", "2 boundary scores for 3 rows"});
    loader_test::require_error([&] { judge({0.5f, 0.0f, 0.5f}, {0.5f, 0.0f, 0.5f, 0.0f}); },
                               {"stage indexer.1.selected", "reference", "4 boundary scores for 3 rows"});
    try {
      judge({0.0f}, {});
      FAIL("a boundary of 1 value for 3 rows was accepted");
    } catch (const Error& e) {
      CHECK_FALSE(e.hint().empty());
    }
  }
}

TEST_CASE("a decision's near-tie band is relative to its stage's scale, as rel_to_max is to a stage's largest value",
          "[parity][decisions]") {
  CHECK(decision_band_at(0.02, {5.0f, 1.0f}, {4.0f, 0.5f}) == Approx(0.1));  // the largest |score| of either side
  CHECK(decision_band_at(0.02, {}, {3.0f}) == Approx(0.06));                 // one side recorded none
  CHECK(decision_band_at(0.02, {}, {}) == Approx(0.02));                     // neither: scale 1 (older dumps)
  CHECK(decision_band_at(0.02, {0.0f}, {0.0f}) == 0.0);                      // all scores 0: only an exact tie is near

  // Row 3 flips with a reference margin of 0.05: out of an absolute band of 0.02, inside the band
  // of a stage whose scores reach 10 (0.2), also where that row's own scores are small (the band is
  // the stage's); the same flip in a stage of scores of magnitude 1 stays out.
  const std::vector<float> reference = {0, 1, 2, 3}, engine = {0, 1, 2, 4};  // rows of k = 1
  auto run = [&](std::vector<float> scale) {
    return compare_decisions("indexer.3.selected", {engine, {1, 1, 1, 0.04f}, scale}, {reference, {1, 1, 1, 0.05f}, scale}, 1, 0.02);
  };
  CHECK(run({10, 10, 10, 0.1f}).pass);
  CHECK(run({10, 10, 10, 0.1f}).flips[0].band == Approx(0.2));
  CHECK_FALSE(run({1, 1, 1, 1}).pass);
  CHECK_FALSE(run({}).pass);
  // A caller that judged rows 0..3 already compares from row 4 on: nothing left; from row 3 on the
  // flip is found with the band of the whole stage's scale.
  const DecisionRows e{engine, {1, 1, 1, 0.04f}, {10, 10, 10, 0.1f}}, r{reference, {1, 1, 1, 0.05f}, {10, 10, 10, 0.1f}};
  CHECK(compare_decisions("indexer.3.selected", e, r, 1, 0.02, 4).flips.empty());
  REQUIRE(compare_decisions("indexer.3.selected", e, r, 1, 0.02, 3).flips.size() == 1);
  CHECK(compare_decisions("indexer.3.selected", e, r, 1, 0.02, 3).flips[0].band == Approx(0.2));
  // The drift of the scales on agreeing rows is measured against the band, per row; a flipped row
  // has none, and the rows after an in-band cut are left out once the stage is restricted.
  StageResult drift = compare_decisions("router.0.experts", {engine, {}, {10, 10.1f, 10, 10}},
                                        {reference, {1, 1, 1, 1e-3f}, {10, 10, 10, 12}}, 1, 0.02);
  CHECK(drift.score_drift[1] == Approx(0.1 / 0.24).epsilon(1e-3));
  CHECK(drift.score_drift[3] == -1);
  CHECK(drift.score_drift_to_band() == Approx(0.1 / 0.24).epsilon(1e-3));
  CHECK(drift.score_drift_to_band(2) == 0);
  CHECK(drift.line().find("score drift/band") != std::string::npos);
  restrict_decisions(drift, {1, causal_rank("indexer.0.selected")});  // a flip before this router at row 1
  CHECK(drift.score_drift_to_band() == 0);  // row 0 only
}

TEST_CASE("a top-1 disagreement on a near-tie within the tolerance is reported, not failed", "[parity]") {
  // Two rows of width 3; the reference's largest value is 10, so the tolerance 1e-3 allows 0.01.
  const std::vector<float> want = {10.0f, 9.995f, 1.0f, 1.0f, 5.0f, 2.0f};
  std::vector<float> got = {9.996f, 9.9985f, 1.0f, 1.0f, 5.0f, 2.0f};  // row 0: top-1 swaps, lead 0.005
  StageResult near = compare_values("logits", got, want, 1e-3, 3);
  CHECK(near.pass);
  CHECK(near.top1_agree == 1);
  CHECK(near.top1_near_ties == 1);
  CHECK(near.line().find("top1 1/2 (+1 near-tie)") != std::string::npos);
  // A swap against a reference lead of 0.05 (above the allowance of 0.03) fails on the top-1 rule
  // although every value is within the rel-to-max tolerance.
  const std::vector<float> want_clear = {10.0f, 9.95f, 1.0f, 1.0f, 5.0f, 2.0f};
  got = {9.97f, 9.98f, 1.0f, 1.0f, 5.0f, 2.0f};
  StageResult clear = compare_values("logits", got, want_clear, 3e-3, 3);
  CHECK(clear.rel_to_max <= 3e-3);
  CHECK_FALSE(clear.pass);
  CHECK(clear.top1_near_ties == 0);
}

TEST_CASE("the floor: a stage that compared fewer than half its rows is INCONCLUSIVE", "[parity][floor]") {
  CHECK(min_rows_compared(0) == 0);
  CHECK(min_rows_compared(1) == 1);
  CHECK(min_rows_compared(160) == 80);
  CHECK(min_rows_compared(95) == 48);

  // An in-band flip at position 0 leaves nothing compared after restriction.
  StageResult d = compare_decisions("router.1.experts", {{0, 2, 2, 3}, {3e-7f, 1.0f}}, {{0, 1, 2, 3}, {1e-7f, 1.0f}}, 2, 1e-5);
  REQUIRE(first_in_band_flip({d}).position == 0);
  restrict_decisions(d, first_in_band_flip({d}));
  CHECK(d.rows == 1);
  CHECK(d.rows_total == 2);
  d.min_rows = min_rows_compared(d.rows_total);
  CHECK(d.verdict() == "PASS");  // 1 of 2 rows meets the floor of 1

  StageResult v = compare_values("logits", {}, {}, 1e-5, 4);
  v.rows = 0;
  v.rows_total = 160;
  v.min_rows = min_rows_compared(v.rows_total);
  CHECK(v.pass);
  CHECK(v.verdict() == "INCONCLUSIVE");
  CHECK(v.to_json()["result"] == "INCONCLUSIVE");
  CHECK(v.line().find("INCONCLUSIVE  rows 0/160 (floor 80)") != std::string::npos);
  v.rows = 80;
  CHECK(v.verdict() == "PASS");
  v.pass = false;  // a failing stage fails, however few rows it compared
  v.rows = 3;
  CHECK(v.verdict() == "FAIL");
}

TEST_CASE("an in-band flip excuses later stages at its position, not earlier ones", "[parity][decisions]") {
  CHECK(causal_rank("indexer.1.selected") < causal_rank("router.1.experts"));
  CHECK(causal_rank("router.1.experts") < causal_rank("hidden.1"));
  CHECK(causal_rank("hidden.1") < causal_rank("indexer.2.selected"));
  CHECK(causal_rank("hidden.12") < causal_rank("logits"));
  CHECK(causal_rank("logits") < causal_rank("logits_incremental"));

  // Rows of k = 1 at positions 0..3. The indexer of layer 1 flips in band at position 2; the
  // router of layer 2 (causally after it) and the router of layer 0 (before it) flip out of band
  // at the same position.
  const std::vector<float> ref = {0, 1, 2, 3};
  StageResult idx = compare_decisions("indexer.1.selected", {{0, 1, 5, 3}, {1, 1, 1e-7f, 1}}, {ref, {1, 1, 1e-7f, 1}}, 1, 1e-5);
  StageResult later = compare_decisions("router.2.experts", {{0, 1, 6, 3}, {1, 1, 0.5f, 1}}, {ref, {1, 1, 0.5f, 1}}, 1, 1e-5);
  StageResult earlier = compare_decisions("router.0.experts", {{0, 1, 6, 3}, {1, 1, 0.5f, 1}}, {ref, {1, 1, 0.5f, 1}}, 1, 1e-5);
  const InBandCut cut = first_in_band_flip({later, idx, earlier});
  CHECK(cut.position == 2);
  CHECK(cut.rank == causal_rank("indexer.1.selected"));
  restrict_decisions(idx, cut);
  restrict_decisions(later, cut);
  restrict_decisions(earlier, cut);
  CHECK(idx.pass);
  CHECK(idx.rows == 3);
  CHECK(later.pass);  // downstream of the near-tie: excused
  CHECK(later.flips.empty());
  CHECK(later.rows == 2);
  CHECK_FALSE(earlier.pass);  // upstream of it: a real difference
  CHECK(earlier.rows == 3);
}

TEST_CASE("tolerance: each realization's own against an f32 dump, the bf16 class against a bf16 dump", "[parity][tolerance]") {
  CHECK(tolerance_for(realization("cpu"), "float32").rel_to_max == 1e-5);
  CHECK(tolerance_for(realization("cpu-fast"), "float64").rel_to_max == 1e-5);
  CHECK(tolerance_for(realization("cuda-fast"), "float32").rel_to_max == 2e-2);
  // A bf16 reference carries bf16 rounding (2^-8 per op) whatever the engine: 1e-5 would fail
  // every honest run, so it gets the tolerance of the bf16 realization.
  for (const char* engine : {"cpu", "cpu-fast", "cuda", "cuda-fast"}) {
    CAPTURE(engine);
    const Tolerance t = tolerance_for(realization(engine), "bfloat16");
    CHECK(t.rel_to_max == 2e-2);
    CHECK(t.decision_band == 2e-2);
  }
}
