// Packed weights stay packed on the CPU backends: the linear kernels (exact and fast) read an FP8,
// FP4 or BF16 matrix by decoding rows on the fly and give the same bits as over its f32 copy; a
// forward widens only vectors and the small hc matrices (Model::f32_cached_bytes), never the
// projection or expert matrices; and the quantised fixtures' logits are the bits memra computed
// when every weight was widened (hashes recorded from that build, commit 3daf228 with Model::f32
// for every matrix; both realizations' logits files compared equal byte for byte).
#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "core/hash.h"
#include "engine/cpu_gemm.h"
#include "engine/cpu_ops.h"
#include "engine/engine.h"
#include "model/model.h"

using namespace memra;

namespace {

Model load_fixture(const char* name) { return Model::load(std::string(MEMRA_FIXTURES) + "/" + name); }

std::vector<float> random_rows(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("packed weights: linear and gemm decode rows on the fly with the f32 copy's bits", "[cpu][quant]") {
  for (const char* name : {"tiny-fp4", "tiny-fp8", "tiny-bf16"}) {
    const Model model = load_fixture(name);
    int checked = 0;
    for (const auto& t : model.tensors()) {
      if (t.role != TensorRole::kFloat || t.shape.size() != 2 || t.view.format == WeightFormat::kF32) continue;
      if (checked % 3 != 0 && t.name.find("experts.") != std::string::npos) {  // a sample of the many experts
        ++checked;
        continue;
      }
      ++checked;
      CAPTURE(name, t.name);
      const int64_t out = t.shape[0], in = t.shape[1];
      const std::vector<float> wide = t.view.decode_all();
      for (int64_t rows : {1, 5, 67}) {
        const std::vector<float> x = random_rows(rows * in, static_cast<uint32_t>(rows + out));
        std::vector<float> y_packed(rows * out), y_wide(rows * out);
        cpu::linear(x.data(), rows, in, cpu::Matrix(t.view), out, y_packed.data());
        cpu::linear(x.data(), rows, in, cpu::Matrix(wide.data()), out, y_wide.data());
        CHECK(same_bits(y_packed, y_wide));
        cpu::gemm(x.data(), rows, in, cpu::Matrix(t.view), out, y_packed.data());
        cpu::gemm(x.data(), rows, in, cpu::Matrix(wide.data()), out, y_wide.data());
        CHECK(same_bits(y_packed, y_wide));
      }
      // A slice from row r on (wo_a's groups) reads the same rows either way.
      if (out > 2) {
        std::vector<float> row_p(in), row_w(in);
        const float* p = cpu::Matrix(t.view).rows_from(2, in).row(0, in, row_p.data());
        const float* w = cpu::Matrix(wide.data()).rows_from(2, in).row(0, in, row_w.data());
        CHECK(std::memcmp(p, w, in * sizeof(float)) == 0);
      }
    }
    CHECK(checked > 10);
  }
}

TEST_CASE("packed weights: a forward widens no matrix, only vectors and hc", "[cpu][quant]") {
  for (const char* name : {"tiny-fp4", "tiny-fp8", "tiny-bf16"}) {
    CAPTURE(name);
    const Model model = load_fixture(name);
    size_t allowed = 0, matrices = 0;  // f32 bytes of what may be widened, and of the matrices
    for (const auto& t : model.tensors()) {
      if (t.role != TensorRole::kFloat || t.view.format == WeightFormat::kF32) continue;
      const size_t bytes = static_cast<size_t>(t.view.rows * t.view.cols) * sizeof(float);
      if (t.shape.size() == 1 || t.name.find("hc_") != std::string::npos || t.name.find(".ape") != std::string::npos)
        allowed += bytes;
      else
        matrices += bytes;
    }
    for (const char* backend : {"cpu", "cpu-fast"}) {
      auto b = make_backend(backend, model);
      auto st = b->new_state(40);
      std::vector<int32_t> prompt(33);
      for (int i = 0; i < 33; ++i) prompt[i] = 2 + (i * 37) % 500;
      prefill(*b, *st, prompt, 0, nullptr);
      generate_greedy(*b, *st, 3);
    }
    INFO("widened " << model.f32_cached_bytes() << " bytes; vectors and hc " << allowed << ", matrices " << matrices);
    CHECK(model.f32_cached_bytes() <= allowed);
    CHECK(matrices > 4 * allowed);  // the check above is meaningful: the matrices dominate
  }
}

TEST_CASE("packed weights: the quantised fixtures' logits are the bits of the widened-weights build", "[cpu][quant][golden]") {
  // Logits [200, V] of the prompt 2 + (37 i mod 500) on the exact path, XXH3-128.
  const std::vector<std::pair<const char*, const char*>> golden = {{"tiny-fp8", "e8653c437591c770fb54ac13e7a49fea"}, {"tiny-fp4", "e4ac2cdcd0cd3bb565892bcaf31693b8"}};
  std::vector<int32_t> prompt(200);
  for (int i = 0; i < 200; ++i) prompt[i] = 2 + (i * 37) % 500;
  for (const auto& [name, want] : golden) {
    CAPTURE(name);
    const Model model = load_fixture(name);
    auto backend = make_backend("cpu", model);
    auto st = backend->new_state(200);
    std::vector<float> logits;
    prefill(*backend, *st, prompt, 0, &logits);
    CHECK(xxh3_128(logits.data(), logits.size() * sizeof(float)).hex() == want);
  }
}
