// RoPE tables (docs/architecture.md §3.3): interleaved pairs on the last r dims of a head, plain θ on
// sliding layers and θ' + YaRN (no mscale) on compressed layers. Computed in f32 exactly as
// transformers does (powf, f32 ramp), so angles agree bit for bit with the oracle.
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"

namespace memra {

// Inverse frequencies [r/2] for one table.
std::vector<float> rope_inv_freq(const RopeParams& params, int64_t rope_dim);

// Rotates the last 2·inv_freq.size() values of x[0..dim) at `position`; sign = -1 rotates back
// (the conjugate, used on the attention output).
void rope_rotate(float* x, int64_t dim, const std::vector<float>& inv_freq, int64_t position, float sign = 1.0f);

}  // namespace memra
