// RoPE inverse frequencies and rotation, f32 like transformers' DeepseekV4RotaryEmbedding.
#include "engine/rope.h"

#include <algorithm>
#include <cmath>

namespace memra {

std::vector<float> rope_inv_freq(const RopeParams& p, int64_t dim) {
  const int64_t half = dim / 2;
  std::vector<float> pos_freqs(half), inv(half);
  const float base = static_cast<float>(p.theta);
  for (int64_t i = 0; i < half; ++i) {
    float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    pos_freqs[i] = std::pow(base, exponent);
    inv[i] = 1.0f / pos_freqs[i];
  }
  if (p.type != "yarn") return inv;
  // transformers _compute_yarn_parameters with truncate=True; attention_factor is 1 (checked at parse).
  auto correction_dim = [&](double rotations) {
    return (dim * std::log(p.original_max_position_embeddings / (rotations * 2 * M_PI))) / (2 * std::log(p.theta));
  };
  double low = std::max(std::floor(correction_dim(p.beta_fast)), 0.0);
  double high = std::min(std::ceil(correction_dim(p.beta_slow)), static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  const float factor = static_cast<float>(p.factor);
  for (int64_t i = 0; i < half; ++i) {
    float ramp = (static_cast<float>(i) - static_cast<float>(low)) / static_cast<float>(high - low);
    ramp = std::clamp(ramp, 0.0f, 1.0f);
    float extrapolation_factor = 1.0f - ramp;
    float interpolation = 1.0f / (factor * pos_freqs[i]);
    float extrapolation = 1.0f / pos_freqs[i];
    inv[i] = interpolation * (1.0f - extrapolation_factor) + extrapolation * extrapolation_factor;
  }
  return inv;
}

void rope_rotate(float* x, int64_t dim, const std::vector<float>& inv_freq, int64_t position, float sign) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  float* r = x + (dim - 2 * half);
  const float pos = static_cast<float>(position);
  for (int64_t i = 0; i < half; ++i) {
    float angle = inv_freq[i] * pos;  // f32 product, as the oracle's inv_freq @ position_ids
    float c = std::cos(angle), s = sign * std::sin(angle);
    float x0 = r[2 * i], x1 = r[2 * i + 1];
    r[2 * i] = x0 * c - x1 * s;
    r[2 * i + 1] = x1 * c + x0 * s;
  }
}

}  // namespace memra
