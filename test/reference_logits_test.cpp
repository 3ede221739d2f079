// The CPU engine against the independent reference logits of the starter fixtures
// (test/fixtures/README.md): made by another script and run than tools/oracle/, so they check the
// engine without trusting our own oracle. One-shot logits over every position and the incremental
// logits (prefill 66, then one token at a time) must agree to the parity tolerance of the exact
// class with the same argmax at every position.
#include <catch2/catch.hpp>

#include <filesystem>

#include "engine/cpu_backends.h"
#include "engine/engine.h"
#include "engine/realization.h"
#include "format/safetensors.h"
#include "model/model.h"
#include "parity/compare.h"

using namespace memra;

namespace {

std::string fixture(const std::string& name) {
  return (std::filesystem::path(MEMRA_SOURCE_DIR) / "test" / "fixtures" / name).string();
}

}  // namespace

TEST_CASE("engine logits match the starter fixtures' independent reference", "[cpu][engine][reference]") {
  const double tol = tolerance_for(realization("cpu"), "float32").rel_to_max;
  for (const char* name : {"tiny-a", "tiny-b"}) {
    CAPTURE(name);
    const Model model = Model::load(fixture(name));
    const int64_t V = model.config().vocab_size;
    SafetensorsFile ref = SafetensorsFile::open(fixture(name) + "/reference.safetensors");
    std::vector<int32_t> tokens;
    for (int64_t t : tensor_to_i64(ref.get("tokens"))) tokens.push_back(static_cast<int32_t>(t));
    const int64_t T = static_cast<int64_t>(tokens.size());
    auto backend = make_cpu_backend(model);

    auto one = backend->new_state(T);
    std::vector<float> logits;
    prefill(*backend, *one, tokens, 0, &logits);
    StageResult r = compare_values("logits", logits, tensor_to_f32(ref.get("logits")), tol, V);
    INFO(r.line());
    CHECK(r.pass);
    CHECK(r.top1_agree == T);

    // logits_incremental_from66: the prefill's last row (position 65), then positions 66..T-2.
    auto inc = backend->new_state(T);
    std::vector<float> rows;
    prefill(*backend, *inc, std::span<const int32_t>(tokens).first(66), 0, &rows);
    rows.erase(rows.begin(), rows.end() - V);
    for (int64_t t = 66; t < T - 1; ++t) {
      std::vector<float> row = decode_step(*backend, *inc, tokens[t]);
      rows.insert(rows.end(), row.begin(), row.end());
    }
    StageResult ri = compare_values("logits_incremental", rows, tensor_to_f32(ref.get("logits_incremental_from66")), tol, V);
    INFO(ri.line());
    CHECK(ri.pass);
    CHECK(ri.top1_agree == T - 66);
  }
}
