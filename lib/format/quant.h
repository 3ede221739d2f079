// The weight formats of the released DeepSeek-V4 checkpoints and a row-decode view over them, so a
// linear kernel can dequantise one weight row into f32 on the fly while the checkpoint stays packed
// (memory-mapped) as a whole. Semantics, sources and bounds: docs/quantization.md.
//
//   e4m3fn   FP8, bias 7, 3 mantissa bits; no infinities; S.1111.111 is NaN; max ±448
//   e2m1     FP4, bias 1, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives; no NaN
//   e8m0     scale byte e → 2^(e−127) (e = 0 → 2^−127); 0xFF is NaN
//   FP8 block   weight F8_E4M3 [N, K], scale e8m0 [⌈N/bn⌉, ⌈K/bk⌉] (released: bn = bk = 128)
//   FP4 block   weight packed [N, K/2] bytes, element k of a row in byte k/2, low nibble = even k;
//               scale e8m0 [N, ⌈K/32⌉] (one per 1×32 block along K)
// value(r, k) = decode(code(r, k)) · scale(block(r, k)), computed in f32 (exact: see the doc).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memra {

float e4m3_to_f32(uint8_t code);
float e2m1_to_f32(uint8_t nibble);  // the low 4 bits of `nibble`
float e8m0_to_f32(uint8_t code);

// How a weight's bytes are laid out. Plain formats are row-major [rows, cols] of that dtype.
enum class WeightFormat { kF32, kF64, kBF16, kF16, kFp8Block, kFp4Block };
const char* weight_format_name(WeightFormat format);  // "f32", "f64", "bf16", "f16", "fp8-e4m3", "fp4-e2m1"
bool is_block_format(WeightFormat format);

inline constexpr int64_t kFp4BlockCols = 32;  // FP4 scale block: 1 × 32 along K

// Scale shape [⌈rows/block_rows⌉, ⌈cols/block_cols⌉] of a block format.
std::vector<int64_t> block_scale_shape(int64_t rows, int64_t cols, int64_t block_rows, int64_t block_cols);

// A weight as stored: logical [rows, cols] (a 1-D tensor is [1, n]; an N-D one [∏ shape[:-1], shape[-1]]).
// Nothing is copied: `data` and `scale` point into the mapped checkpoint.
struct WeightView {
  WeightFormat format = WeightFormat::kF32;
  int64_t rows = 0, cols = 0;
  const uint8_t* data = nullptr;   // row r starts at data + r · row_bytes()
  const uint8_t* scale = nullptr;  // block formats: e8m0 bytes, row-major [⌈rows/block_rows⌉, scale_cols]
  int64_t block_rows = 1, block_cols = 1;
  int64_t scale_cols = 0;

  size_t row_bytes() const;  // FP4: ⌈cols/2⌉ (cols is even in every valid view)
  // out[0 .. n) = W[r, k0 .. k0+n); requires 0 ≤ r < rows, 0 ≤ k0, k0 + n ≤ cols (unchecked: hot path).
  void decode_row_span(int64_t r, int64_t k0, int64_t n, float* out) const;
  void decode_row(int64_t r, float* out) const { decode_row_span(r, 0, cols, out); }  // out: [cols]
  std::vector<float> decode_all() const;  // [rows · cols]; for small tensors and tests
};

}  // namespace memra
