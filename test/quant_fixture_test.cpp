// The committed quantised fixtures (models/tiny-fp4: FP4 experts + FP8, one file; models/tiny-fp8:
// FP8 throughout, three shards) load in the released layout, and every tensor memra decodes is
// bit-equal to the oracle's dequantisation (dequant.json: XXH3-128 of the f32 bytes torch computed
// as code.float() * 2^(e-127)). Logits parity against the oracle's dequantised forward is
// test/shell/quant_parity.sh.
#include <catch2/catch.hpp>
#include <cstring>
#include <set>

#include "core/hash.h"
#include "format/json_guard.h"
#include "format/quant.h"
#include "model/model.h"

using namespace memra;

namespace {

void check_fixture(const std::string& name, const std::string& experts) {
  const std::string dir = std::string(MEMRA_FIXTURES) + "/" + name;
  Model m = Model::load(dir);
  const ModelConfig& c = m.config();
  CHECK(c.source_form == "upstream");
  CHECK(c.quantization.fp8);
  CHECK(c.quantization.block_rows == 128);
  CHECK(c.quantization.block_cols == 128);
  CHECK(c.quantization.expert_dtype == (experts == "fp4" ? "fp4" : ""));
  CHECK(c.num_nextn_predict_layers == 1);
  CHECK(!m.unused_tensors().empty());
  for (const auto& u : m.unused_tensors()) CHECK(u.name.rfind("mtp.0.", 0) == 0);

  nlohmann::json want = read_json_file(dir + "/dequant.json")["tensors"];
  std::set<std::string> seen;
  size_t fp8 = 0, fp4 = 0;
  for (const auto& w : m.tensors()) {
    if (w.role != TensorRole::kFloat) continue;
    INFO(name << ": " << w.name);
    REQUIRE(want.contains(w.name));
    seen.insert(w.name);
    const std::string role = want[w.name]["format"];
    const WeightFormat f = w.view.format;
    CHECK(role == (f == WeightFormat::kFp8Block   ? "fp8"
                   : f == WeightFormat::kFp4Block ? "fp4"
                   : f == WeightFormat::kBF16     ? "bf16"
                   : f == WeightFormat::kF32      ? "f32"
                                                  : "?"));
    fp8 += f == WeightFormat::kFp8Block;
    fp4 += f == WeightFormat::kFp4Block;
    if (role == "fp4") CHECK(w.dtype == DType::kI8);
    if (is_block_format(f)) CHECK(w.scale_dtype == DType::kF8E8M0);
    const std::vector<float> values = w.view.decode_all();
    CHECK(xxh3_128(values.data(), values.size() * sizeof(float)).hex() == want[w.name]["xxh3"]);
    CHECK(std::memcmp(m.f32(w.name), values.data(), values.size() * sizeof(float)) == 0);
  }
  CHECK(seen.size() == want.size());
  CHECK(fp8 > 0);
  CHECK((fp4 > 0) == (experts == "fp4"));
}

}  // namespace

TEST_CASE("quant fixtures: tiny-fp4 decodes bit-equal to the oracle's dequantisation", "[cpu][quant][loader]") {
  check_fixture("tiny-fp4", "fp4");
}

TEST_CASE("quant fixtures: tiny-fp8 (three shards) decodes bit-equal to the oracle's dequantisation",
          "[cpu][quant][loader]") {
  check_fixture("tiny-fp8", "fp8");
  Model m = Model::load(std::string(MEMRA_FIXTURES) + "/tiny-fp8");
  CHECK(m.files().size() == 3);
}
