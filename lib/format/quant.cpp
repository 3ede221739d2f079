// FP8 e4m3fn / FP4 e2m1 / e8m0 decoding and the row decoder of block-quantised weights. Codes are
// decoded through 256- and 16-entry tables built once from the bit definitions; the scale is
// applied as one f32 multiply, which is exact for every finite code and scale (docs/quantization.md).
#include "format/quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace memra {

namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::array<float, 256> make_e4m3_table() {
  std::array<float, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const int sign = c >> 7, exp = (c >> 3) & 0xF, mant = c & 0x7;
    float v;
    if (exp == 0xF && mant == 0x7)
      v = std::numeric_limits<float>::quiet_NaN();
    else if (exp == 0)
      v = std::ldexp(static_cast<float>(mant), -9);  // subnormal: m/8 · 2^-6
    else
      v = std::ldexp(static_cast<float>(8 + mant), exp - 10);  // (1 + m/8) · 2^(e-7)
    t[c] = sign ? -v : v;
  }
  return t;
}

constexpr std::array<float, 16> kE2M1 = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                         -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> t = make_e4m3_table();
  return t;
}

std::array<float, 256> make_e8m0_table() {
  std::array<float, 256> t{};
  for (int c = 0; c < 256; ++c) {
    if (c == 0xFF)
      t[c] = std::numeric_limits<float>::quiet_NaN();
    else if (c == 0)
      t[c] = from_bits(0x00400000u);  // 2^-127, an f32 subnormal
    else
      t[c] = from_bits(static_cast<uint32_t>(c) << 23);
  }
  return t;
}

const std::array<float, 256>& e8m0_table() {
  static const std::array<float, 256> t = make_e8m0_table();
  return t;
}

float bf16_to_f32(const uint8_t* p) { return from_bits(static_cast<uint32_t>(p[0] | (p[1] << 8)) << 16); }

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal, exact
    return sign ? -v : v;
  }
  if (exp == 0x1f) return from_bits(sign | 0x7f800000u | (mant << 13));
  return from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

}  // namespace

float e4m3_to_f32(uint8_t code) { return e4m3_table()[code]; }
float e2m1_to_f32(uint8_t nibble) { return kE2M1[nibble & 0xF]; }
float e8m0_to_f32(uint8_t code) { return e8m0_table()[code]; }

const char* weight_format_name(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF32:
      return "f32";
    case WeightFormat::kF64:
      return "f64";
    case WeightFormat::kBF16:
      return "bf16";
    case WeightFormat::kF16:
      return "f16";
    case WeightFormat::kFp8Block:
      return "fp8-e4m3";
    case WeightFormat::kFp4Block:
      return "fp4-e2m1";
  }
  return "?";
}

bool is_block_format(WeightFormat format) {
  return format == WeightFormat::kFp8Block || format == WeightFormat::kFp4Block;
}

std::vector<int64_t> block_scale_shape(int64_t rows, int64_t cols, int64_t block_rows, int64_t block_cols) {
  return {(rows + block_rows - 1) / block_rows, (cols + block_cols - 1) / block_cols};
}

size_t WeightView::row_bytes() const {
  const auto c = static_cast<size_t>(cols);
  switch (format) {
    case WeightFormat::kF32:
      return c * 4;
    case WeightFormat::kF64:
      return c * 8;
    case WeightFormat::kBF16:
    case WeightFormat::kF16:
      return c * 2;
    case WeightFormat::kFp8Block:
      return c;
    case WeightFormat::kFp4Block:
      return (c + 1) / 2;
  }
  return 0;
}

void WeightView::decode_row_span(int64_t r, int64_t k0, int64_t n, float* out) const {
  const uint8_t* row = data + static_cast<size_t>(r) * row_bytes();
  switch (format) {
    case WeightFormat::kF32:
      std::memcpy(out, row + 4 * k0, static_cast<size_t>(n) * 4);
      return;
    case WeightFormat::kF64:
      for (int64_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, row + 8 * (k0 + i), 8);
        out[i] = static_cast<float>(d);
      }
      return;
    case WeightFormat::kBF16:
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(row + 2 * (k0 + i));
      return;
    case WeightFormat::kF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint8_t* p = row + 2 * (k0 + i);
        out[i] = f16_to_f32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
      }
      return;
    case WeightFormat::kFp8Block: {
      const auto& code = e4m3_table();
      const auto& sc = e8m0_table();
      const uint8_t* srow = scale + static_cast<size_t>(r / block_rows) * static_cast<size_t>(scale_cols);
      for (int64_t i = 0; i < n;) {  // one scale per block_cols run
        const int64_t k = k0 + i, b = k / block_cols;
        const int64_t end = std::min(n, (b + 1) * block_cols - k0);
        const float s = sc[srow[b]];
        for (; i < end; ++i) out[i] = code[row[k0 + i]] * s;
      }
      return;
    }
    case WeightFormat::kFp4Block: {
      const auto& sc = e8m0_table();
      const uint8_t* srow = scale + static_cast<size_t>(r / block_rows) * static_cast<size_t>(scale_cols);
      for (int64_t i = 0; i < n;) {
        const int64_t k = k0 + i, b = k / block_cols;
        const int64_t end = std::min(n, (b + 1) * block_cols - k0);
        const float s = sc[srow[b]];
        for (; i < end; ++i) {
          const int64_t kk = k0 + i;
          const uint8_t byte = row[kk >> 1];
          out[i] = kE2M1[(kk & 1) ? (byte >> 4) : (byte & 0xF)] * s;  // low nibble = even element
        }
      }
      return;
    }
  }
}

std::vector<float> WeightView::decode_all() const {
  std::vector<float> out(static_cast<size_t>(rows) * static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) decode_row(r, out.data() + static_cast<size_t>(r) * static_cast<size_t>(cols));
  return out;
}

}  // namespace memra
