// Quantised weight formats: every e4m3 and e8m0 code against torch's float8_e4m3fn / float8_e8m0fnu
// (computed by the oracle venv's torch in the test), hand-made FP4 vectors covering every code in
// both nibble positions, both signs, the scale extremes and NaN, and the block indexing of the
// FP8 / FP4 row decoder (partial blocks, spans starting mid-block and mid-byte).
#include "format/quant.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "oracle_python.h"

using memra::WeightFormat;
using memra::WeightView;

namespace {

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// All 256 codes of a torch float8 dtype as f32 bit patterns.
std::vector<uint32_t> torch_codes(const std::string& python, const std::string& dtype, bool* ok) {
  std::string script = "import torch; t = torch.arange(256, dtype=torch.uint8).view(torch." + dtype +
                       ").float(); print(\" \".join(str(v & 0xFFFFFFFF) for v in t.view(torch.int32).tolist()))";
  std::string out = oracle_test::run_python(python, script, ok);
  std::vector<uint32_t> v;
  std::istringstream in(out);
  uint64_t x;
  while (in >> x) v.push_back(static_cast<uint32_t>(x));
  if (v.size() != 256) {
    *ok = false;
    UNSCOPED_INFO("python output: " << out);
  }
  return v;
}

}  // namespace

TEST_CASE("quant: e4m3fn hand-checked codes", "[cpu][quant]") {
  CHECK(bits(memra::e4m3_to_f32(0x00)) == bits(0.0f));
  CHECK(bits(memra::e4m3_to_f32(0x80)) == bits(-0.0f));
  CHECK(memra::e4m3_to_f32(0x01) == std::ldexp(1.0f, -9));  // smallest subnormal
  CHECK(memra::e4m3_to_f32(0x07) == 7 * std::ldexp(1.0f, -9));
  CHECK(memra::e4m3_to_f32(0x08) == std::ldexp(1.0f, -6));  // smallest normal
  CHECK(memra::e4m3_to_f32(0x38) == 1.0f);
  CHECK(memra::e4m3_to_f32(0x3C) == 1.5f);
  CHECK(memra::e4m3_to_f32(0x7E) == 448.0f);  // largest finite: S.1111.110
  CHECK(memra::e4m3_to_f32(0xFE) == -448.0f);
  CHECK(std::isnan(memra::e4m3_to_f32(0x7F)));  // S.1111.111: NaN, no infinities
  CHECK(std::isnan(memra::e4m3_to_f32(0xFF)));
  CHECK(memra::e4m3_to_f32(0x78) == 256.0f);  // exponent 15 is a normal binade in e4m3fn
}

TEST_CASE("quant: all 256 e4m3fn and e8m0 codes equal torch's float8 dtypes", "[cpu][quant][oracle]") {
  std::string py = oracle_test::venv_python();
  if (py.empty()) {
    WARN("SKIPPED: no oracle venv (run tools/oracle/setup-venv.sh or set MEMRA_VENV); torch computes the reference");
    return;
  }
  bool ok = true;
  std::vector<uint32_t> e4m3 = torch_codes(py, "float8_e4m3fn", &ok);
  REQUIRE(ok);
  std::vector<uint32_t> e8m0 = torch_codes(py, "float8_e8m0fnu", &ok);
  REQUIRE(ok);
  int nan4 = 0, nan8 = 0;
  for (int c = 0; c < 256; ++c) {
    INFO("code 0x" << std::hex << c);
    const float t4 = from_bits(e4m3[c]), m4 = memra::e4m3_to_f32(static_cast<uint8_t>(c));
    if (std::isnan(t4)) {
      ++nan4;
      CHECK(std::isnan(m4));
    } else {
      CHECK(bits(m4) == e4m3[c]);  // bit-equal, signed zeros included
    }
    const float t8 = from_bits(e8m0[c]), m8 = memra::e8m0_to_f32(static_cast<uint8_t>(c));
    if (std::isnan(t8)) {
      ++nan8;
      CHECK(std::isnan(m8));
    } else {
      CHECK(bits(m8) == e8m0[c]);
    }
  }
  CHECK(nan4 == 2);  // 0x7F and 0xFF
  CHECK(nan8 == 1);  // 0xFF
}

TEST_CASE("quant: e8m0 scales are powers of two with 0xFF NaN", "[cpu][quant]") {
  CHECK(memra::e8m0_to_f32(127) == 1.0f);
  CHECK(memra::e8m0_to_f32(128) == 2.0f);
  CHECK(memra::e8m0_to_f32(0) == std::ldexp(1.0f, -127));  // an f32 subnormal, exact
  CHECK(memra::e8m0_to_f32(1) == std::ldexp(1.0f, -126));
  CHECK(memra::e8m0_to_f32(254) == std::ldexp(1.0f, 127));
  CHECK(std::isnan(memra::e8m0_to_f32(255)));
}

TEST_CASE("quant: FP4 e2m1 every code, both nibbles, signs, scale extremes, NaN scale", "[cpu][quant]") {
  // The e2m1 value set written out by hand: sign bit 3, exponent bits 2..1 (bias 1), mantissa bit 0.
  const float expect[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                            -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  for (int c = 0; c < 16; ++c) {
    INFO("nibble " << c);
    CHECK(bits(memra::e2m1_to_f32(static_cast<uint8_t>(c))) == bits(expect[c]));
    CHECK(bits(memra::e2m1_to_f32(static_cast<uint8_t>(0xF0 | c))) == bits(expect[c]));  // high bits ignored
  }

  // One row of 32 elements = 16 bytes; byte j holds element 2j (low nibble) and 2j+1 (high nibble).
  // Bytes 0..15: low nibble = j, high nibble = 15 − j, so every code sits in both positions.
  std::vector<uint8_t> row(16);
  for (int j = 0; j < 16; ++j) row[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::vector<float> out(32);
  auto decode = [&](uint8_t scale) {
    WeightView v;
    v.format = WeightFormat::kFp4Block;
    v.rows = 1;
    v.cols = 32;
    v.data = row.data();
    v.scale = &scale;
    v.block_rows = 1;
    v.block_cols = 32;
    v.scale_cols = 1;
    v.decode_row(0, out.data());
  };
  decode(127);  // scale 1
  for (int j = 0; j < 16; ++j) {
    INFO("byte " << j);
    CHECK(bits(out[2 * j]) == bits(expect[j]));
    CHECK(bits(out[2 * j + 1]) == bits(expect[15 - j]));
  }
  decode(129);                   // scale 4
  CHECK(out[2 * 7] == 24.0f);    // 6 · 4
  CHECK(out[2 * 15] == -24.0f);  // −6 · 4
  decode(0);                     // 2^-127: 0.5 · 2^-127 = 2^-128 stays exact (subnormal)
  CHECK(out[2 * 1] == std::ldexp(1.0f, -128));
  CHECK(out[2 * 7] == std::ldexp(6.0f, -127));
  CHECK(bits(out[2 * 8]) == bits(-0.0f));
  decode(254);  // 2^127: 1 · 2^127 finite, 6 · 2^127 overflows to inf (as f32 multiplication does)
  CHECK(out[2 * 2] == std::ldexp(1.0f, 127));
  CHECK(std::isinf(out[2 * 7]));
  CHECK(out[2 * 7] > 0);
  CHECK(std::isinf(out[2 * 15]));
  CHECK(out[2 * 15] < 0);
  decode(255);  // NaN scale: every element NaN, zeros included (0 · NaN)
  for (float f : out) CHECK(std::isnan(f));
}

TEST_CASE("quant: FP4 block view indexes the 1x32 scale per row and spans start mid-byte", "[cpu][quant]") {
  // [2, 64]: row r element k has code (k + r) % 16; scale block b of row r = 127 + r + b.
  const int64_t N = 2, K = 64;
  std::vector<uint8_t> data(N * K / 2);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t k = 0; k < K; ++k) {
      uint8_t code = static_cast<uint8_t>((k + r) % 16);
      uint8_t& b = data[r * K / 2 + k / 2];
      b = static_cast<uint8_t>((k % 2) ? (b | (code << 4)) : code);
    }
  std::vector<uint8_t> scale = {127, 128, 128, 129};
  WeightView v{WeightFormat::kFp4Block, N, K, data.data(), scale.data(), 1, 32, 2};
  CHECK(v.row_bytes() == 32);
  std::vector<float> all = v.decode_all();
  for (int64_t r = 0; r < N; ++r)
    for (int64_t k = 0; k < K; ++k) {
      INFO("r " << r << " k " << k);
      float want =
          memra::e2m1_to_f32(static_cast<uint8_t>((k + r) % 16)) * std::ldexp(1.0f, static_cast<int>(r + k / 32));
      CHECK(bits(all[r * K + k]) == bits(want));
    }
  std::vector<float> span(37);
  v.decode_row_span(1, 3, 37, span.data());  // odd start, crosses the block boundary at 32
  for (int i = 0; i < 37; ++i) CHECK(bits(span[i]) == bits(all[K + 3 + i]));
}

TEST_CASE("quant: FP8 block view applies the [ceil(N/bn), ceil(K/bk)] scale, partial blocks included", "[cpu][quant]") {
  // Blocks of 2 x 3 over [5, 7]: scale shape [3, 3], the last row and column blocks are partial.
  CHECK(memra::block_scale_shape(5, 7, 2, 3) == std::vector<int64_t>{3, 3});
  CHECK(memra::block_scale_shape(4096, 7168, 128, 128) == std::vector<int64_t>{32, 56});
  CHECK(memra::block_scale_shape(129, 128, 128, 128) == std::vector<int64_t>{2, 1});
  CHECK(memra::block_scale_shape(8, 96, 1, 32) == std::vector<int64_t>{8, 3});
  const int64_t N = 5, K = 7;
  std::vector<uint8_t> data(N * K, 0x38);  // 1.0
  data[0] = 0x7E;                          // 448
  data[1] = 0x80;                          // -0
  data[N * K - 1] = 0x7F;                  // NaN
  std::vector<uint8_t> scale(9);
  for (int i = 0; i < 9; ++i) scale[i] = static_cast<uint8_t>(120 + i);
  WeightView v{WeightFormat::kFp8Block, N, K, data.data(), scale.data(), 2, 3, 3};
  std::vector<float> all = v.decode_all();
  for (int64_t r = 0; r < N; ++r)
    for (int64_t k = 0; k < K; ++k) {
      INFO("r " << r << " k " << k);
      const float s = std::ldexp(1.0f, static_cast<int>(120 + (r / 2) * 3 + k / 3) - 127);
      const float w = memra::e4m3_to_f32(data[r * K + k]);
      if (std::isnan(w))
        CHECK(std::isnan(all[r * K + k]));
      else
        CHECK(bits(all[r * K + k]) == bits(w * s));
    }
  CHECK(all[0] == 448.0f * std::ldexp(1.0f, -7));
  CHECK(bits(all[1]) == bits(-0.0f));
  std::vector<float> span(4);
  v.decode_row_span(3, 2, 4, span.data());
  for (int i = 0; i < 4; ++i) CHECK(bits(span[i]) == bits(all[3 * K + 2 + i]));
}

TEST_CASE("quant: plain formats decode rows", "[cpu][quant]") {
  const uint16_t bf[4] = {0x3F80, 0xC000, 0x0000, 0x8000};  // 1, -2, 0, -0
  WeightView v{WeightFormat::kBF16, 2, 2, reinterpret_cast<const uint8_t*>(bf), nullptr, 1, 1, 0};
  std::vector<float> out(2);
  v.decode_row(1, out.data());
  CHECK(bits(out[0]) == bits(0.0f));
  CHECK(bits(out[1]) == bits(-0.0f));
  const uint16_t h[3] = {0x3C00, 0x0001, 0xFC00};  // 1, smallest f16 subnormal, -inf
  WeightView f{WeightFormat::kF16, 1, 3, reinterpret_cast<const uint8_t*>(h), nullptr, 1, 1, 0};
  std::vector<float> o3 = f.decode_all();
  CHECK(o3[0] == 1.0f);
  CHECK(o3[1] == std::ldexp(1.0f, -24));
  CHECK(std::isinf(o3[2]));
}
