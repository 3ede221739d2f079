// Plain CPU kernels of the reference backend. Every output element is computed by one fixed
// sequence of operations (double accumulation in index order), so a row's result never depends on
// how many rows are processed together: the exact path.
#pragma once
#include <cmath>
#include <cstdint>

#include "format/quant.h"

namespace memra::cpu {

// A weight matrix [out, in] as the kernels read it: f32 rows in place (a mapped F32 tensor, or any
// host array), or a packed tensor (BF16, FP8/FP4 blocks: format/quant.h) decoded one row at a time
// into the caller's scratch, so a checkpoint is never widened to f32 as a whole. The decoded values
// are the ones Model::f32 would hold, so results are bit-identical either way.
struct Matrix {
  const float* f32 = nullptr;
  const WeightView* packed = nullptr;
  int64_t row0 = 0;  // packed: first row of this slice

  Matrix() = default;
  Matrix(const float* rows) : f32(rows) {}  // NOLINT: implicit, host arrays are matrices too
  explicit Matrix(const WeightView& view) : packed(&view) {}
  // Row r (of `in` values): a pointer to the f32 row, or scratch[0 .. in) filled with it.
  const float* row(int64_t r, int64_t in, float* scratch) const {
    if (f32) return f32 + r * in;
    packed->decode_row(row0 + r, scratch);
    return scratch;
  }
  // The rows from r on (wo_a's groups).
  Matrix rows_from(int64_t r, int64_t in) const {
    Matrix m = *this;
    if (f32) m.f32 += r * in;
    else m.row0 += r;
    return m;
  }
};

// y[t, o] = Σ_i x[t, i] · w[o, i]        x [rows, in], w [out, in], y [rows, out]
void linear(const float* x, int64_t rows, int64_t in, const Matrix& w, int64_t out, float* y);

// Dot product with double accumulation in index order.
inline double dot(const float* a, const float* b, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return s;
}

// In place: x = w · x · rsqrt(mean(x²) + eps); w may be null (unweighted).
inline void rms_norm(float* x, int64_t n, const float* w, double eps) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float r = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) x[i] = w ? w[i] * (x[i] * r) : x[i] * r;
}

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }  // torch: beta 1, threshold 20

}  // namespace memra::cpu
