// QAT simulations (lib/numerics/qat.h): rounding to e4m3 bit-equal to torch's float8_e4m3fn cast
// over a sweep of grid points, midpoints (ties) and subnormals; FP8 (blocks of 64) and FP4 (blocks of
// 32) quant-dequant bit-equal to a torch reference of the official act_quant / fp4_act_quant
// semantics (computed by the oracle venv in the test); e2m1 ties and the Hadamard transform by hand.
#include "numerics/qat.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "oracle_python.h"

using namespace memra;

namespace {

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

const char* kReference = R"PY(
import json, torch
torch.manual_seed(7)
def f32bits(t): return [v & 0xFFFFFFFF for v in t.float().contiguous().view(torch.int32).tolist()]
# e4m3 rounding sweep: every grid value, the midpoints between neighbours, and nudges around them.
grid = torch.arange(0, 127, dtype=torch.uint8).view(torch.float8_e4m3fn).float()
mids = (grid[1:] + grid[:-1]) / 2
vals = torch.cat([grid, mids, mids * (1 + 2**-20), mids * (1 - 2**-20), torch.tensor([448.0, 460.0, 464.0, 1e-9, 3e-3])])
vals = torch.cat([vals, -vals])
e4m3 = f32bits((vals).to(torch.float8_e4m3fn).float())
def scale(amax, qmax):
    v = amax * torch.tensor(1.0 / qmax, dtype=torch.float32)
    m, e = torch.frexp(v)
    return torch.ldexp(torch.tensor(1.0), torch.where(m == 0.5, e - 1, e))
def fp8(x, block):
    y = x.clone()
    for b in range(0, x.numel(), block):
        blk = x[b:b + block]
        s = scale(blk.abs().max().clamp_min(1e-4), 448.0)
        y[b:b + block] = (blk / s).clamp(-448, 448).to(torch.float8_e4m3fn).float() * s
    return y
MIDS = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
GRID = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
def e2m1(q):  # nearest, ties to the even code (bucketize against the midpoints)
    a = q.abs()
    lo = torch.bucketize(a, MIDS, right=False)
    hi = torch.bucketize(a, MIDS, right=True)
    code = lo + ((hi != lo) & (lo % 2 == 1)).long()
    return torch.where(q < 0, -GRID[code], GRID[code])
def fp4(x, block):
    y = x.clone()
    for b in range(0, x.numel(), block):
        blk = x[b:b + block]
        s = scale(blk.abs().max().clamp_min(6 * 2.0**-126), 6.0)
        y[b:b + block] = e2m1((blk / s).clamp(-6, 6)) * s
    return y
mags = torch.tensor([1e-6, 1e-3, 0.02, 1.0, 7.0, 300.0, 5e4]).repeat_interleave(64)
x8 = torch.randn(mags.numel()) * mags
# A block whose amax * f32(1/448) is exactly 1 (the scale must stay 1, not round up to 2), with
# values the two scales would quantise differently (subnormal range).
x8 = torch.cat([x8, torch.tensor([448.0, 1.0625, 1.1875, -2.125, 0.0, -0.0, 0.005, -0.0123, 0.0009] + [0.5] * 55), torch.randn(40)])
x4 = torch.randn(mags.numel()) * mags
x4 = torch.cat([x4, torch.tensor([6.0, 1.75, 0.25, 2.5, 3.5, -5.0, 0.75, 1.5, 0.5, -2.9] + [1.0] * 22), torch.randn(20)])
print(json.dumps({"vals": f32bits(vals), "e4m3": e4m3, "x8": f32bits(x8), "y8": f32bits(fp8(x8, 64)),
                  "x4": f32bits(x4), "y4": f32bits(fp4(x4, 32))}))
)PY";

std::vector<float> floats(const nlohmann::json& a) {
  std::vector<float> v;
  for (const auto& b : a) {
    uint32_t u = b.get<uint32_t>();
    float f;
    std::memcpy(&f, &u, 4);
    v.push_back(f);
  }
  return v;
}

}  // namespace

TEST_CASE("qat: e2m1 rounding is nearest with ties to the even code, e4m3 by hand", "[cpu][qat]") {
  CHECK(round_to_e2m1(0.25f) == 0.0f);  // tie 0 / 0.5: code 0
  CHECK(round_to_e2m1(0.75f) == 1.0f);  // tie 0.5 / 1: code 2
  CHECK(round_to_e2m1(1.25f) == 1.0f);  // tie 1 / 1.5: code 2
  CHECK(round_to_e2m1(1.75f) == 2.0f);  // tie 1.5 / 2: code 4
  CHECK(round_to_e2m1(2.5f) == 2.0f);   // tie 2 / 3: code 4
  CHECK(round_to_e2m1(3.5f) == 4.0f);   // tie 3 / 4: code 6
  CHECK(round_to_e2m1(5.0f) == 4.0f);   // tie 4 / 6: code 6
  CHECK(round_to_e2m1(-5.1f) == -6.0f);
  CHECK(round_to_e2m1(9.0f) == 6.0f);  // saturates
  CHECK(bits(round_to_e2m1(-0.1f)) == bits(-0.0f));
  CHECK(round_to_e4m3(1.0625f) == 1.0f);  // tie: even mantissa
  CHECK(round_to_e4m3(1.1875f) == 1.25f);
  CHECK(round_to_e4m3(448.0f) == 448.0f);
  CHECK(round_to_e4m3(464.0f) == 448.0f);  // tie with the NaN pattern: even side
  CHECK(std::isnan(round_to_e4m3(465.0f)));
  CHECK(round_to_e4m3(std::ldexp(3.0f, -10)) == std::ldexp(2.0f, -9));  // subnormal tie: 1.5 steps → 2 (even)
}

TEST_CASE("qat: Hadamard transform is the orthonormal Sylvester matrix", "[cpu][qat]") {
  const int n = 128;
  std::mt19937 rng(3);
  std::normal_distribution<float> g;
  std::vector<float> x(n), y;
  for (float& v : x) v = g(rng);
  y = x;
  hadamard_transform(y.data(), n);
  for (int i = 0; i < n; ++i) {
    double want = 0;
    for (int j = 0; j < n; ++j) want += (__builtin_popcount(i & j) % 2 ? -1.0 : 1.0) * x[j];
    want /= std::sqrt(static_cast<double>(n));
    CHECK(std::fabs(y[i] - want) < 1e-5);
  }
  hadamard_transform(y.data(), n);  // H is its own inverse once normalised
  for (int i = 0; i < n; ++i) CHECK(std::fabs(y[i] - x[i]) < 1e-5);
}

TEST_CASE("qat: e4m3 rounding and FP8/FP4 block quant-dequant equal torch's", "[cpu][qat][oracle]") {
  const std::string py = oracle_test::venv_python();
  if (py.empty()) {
    WARN("SKIPPED: no oracle venv (run tools/oracle/setup-venv.sh or set MEMRA_VENV); torch computes the reference");
    return;
  }
  bool ok = true;
  const std::string out = oracle_test::run_python(py, kReference, &ok);
  INFO(out.substr(0, 2000));
  REQUIRE(ok);
  const nlohmann::json j = nlohmann::json::parse(out);
  const std::vector<float> vals = floats(j["vals"]), e4m3 = floats(j["e4m3"]);
  REQUIRE(vals.size() == e4m3.size());
  for (size_t i = 0; i < vals.size(); ++i) {
    INFO("x = " << vals[i]);
    const float got = round_to_e4m3(vals[i]);
    if (std::isnan(e4m3[i]))
      CHECK(std::isnan(got));
    else
      CHECK(bits(got) == bits(e4m3[i]));
  }
  std::vector<float> x8 = floats(j["x8"]), y8 = floats(j["y8"]);
  fp8_quant_dequant(x8.data(), static_cast<int64_t>(x8.size()), 64);
  for (size_t i = 0; i < x8.size(); ++i) {
    INFO("fp8 element " << i);
    CHECK(bits(x8[i]) == bits(y8[i]));
  }
  std::vector<float> x4 = floats(j["x4"]), y4 = floats(j["y4"]);
  fp4_quant_dequant(x4.data(), static_cast<int64_t>(x4.size()), 32);
  for (size_t i = 0; i < x4.size(); ++i) {
    INFO("fp4 element " << i);
    CHECK(bits(x4[i]) == bits(y4[i]));
  }
}
