// Plain CPU kernels of the reference backend. Every output element is computed by one fixed
// sequence of operations (double accumulation in index order), so a row's result never depends on
// how many rows are processed together: the exact path.
#pragma once
#include <cmath>
#include <cstdint>

namespace memra::cpu {

// y[t, o] = Σ_i x[t, i] · w[o, i]        x [rows, in], w [out, in], y [rows, out]
void linear(const float* x, int64_t rows, int64_t in, const float* w, int64_t out, float* y);

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
