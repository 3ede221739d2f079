// FP8 / FP4 quant-dequant of activation blocks with ue8m0 scales, and the normalised fast
// Walsh–Hadamard transform: the official inference code's QAT simulations (qat.h).
#include "numerics/qat.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace memra {

namespace {

// 2^ceil(log2(v)) for v > 0: the exponent rounded up unless v is a power of two, as the kernels'
// ue8m0 rounding of the scale does.
float pow2_ceil(float v) {
  int e;
  const float m = std::frexp(v, &e);  // v = m · 2^e, m in [0.5, 1)
  return std::ldexp(1.0f, m == 0.5f ? e - 1 : e);
}

void quant_dequant(float* x, int64_t n, int64_t block, float qmax, float amax_floor, float (*round)(float)) {
  const float qmax_inv = 1.0f / qmax;  // the kernels multiply by the f32 reciprocal
  for (int64_t b = 0; b < n; b += block) {
    const int64_t e = std::min(n, b + block);
    float amax = 0.0f;
    for (int64_t i = b; i < e; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float s = pow2_ceil(std::max(amax, amax_floor) * qmax_inv);
    for (int64_t i = b; i < e; ++i) x[i] = round(std::clamp(x[i] / s, -qmax, qmax)) * s;
  }
}

}  // namespace

float round_to_e4m3(float x) {
  if (std::isnan(x)) return x;
  const float a = std::fabs(x);
  float q;
  if (a > 464.0f) {
    return std::numeric_limits<float>::quiet_NaN();  // rounds past 448 onto S.1111.111
  } else if (a < std::ldexp(1.0f, -6)) {
    q = std::nearbyint(a * 512.0f) / 512.0f;  // subnormals: steps of 2^-9
  } else {
    int exp;
    std::frexp(a, &exp);                           // a = m · 2^exp, m in [0.5, 1)
    const float step = std::ldexp(1.0f, exp - 4);  // 3 mantissa bits in the binade [2^(exp-1), 2^exp)
    q = std::nearbyint(a / step) * step;
  }
  return std::copysign(q, x);
}

float round_to_e2m1(float x) {
  if (std::isnan(x)) return x;
  const float a = std::min(std::fabs(x), 6.0f);
  const float step = a < 2.0f ? 0.5f : a < 4.0f ? 1.0f : 2.0f;
  return std::copysign(std::nearbyint(a / step) * step, x);  // ties to even code = even multiple of step
}

void fp8_quant_dequant(float* x, int64_t n, int64_t block) { quant_dequant(x, n, block, 448.0f, 1e-4f, round_to_e4m3); }

void fp4_quant_dequant(float* x, int64_t n, int64_t block) {
  quant_dequant(x, n, block, 6.0f, 6.0f * std::ldexp(1.0f, -126), round_to_e2m1);
}

void hadamard_transform(float* x, int64_t n) {
  for (int64_t h = 1; h < n; h *= 2)
    for (int64_t i = 0; i < n; i += 2 * h)
      for (int64_t j = i; j < i + h; ++j) {
        const float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

}  // namespace memra
