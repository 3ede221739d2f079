// RoPE rotation of one interleaved pair, f32, as lib/engine/rope.cpp does it on the CPU:
// angle = inv_freq · position (an f32 product), (x0, x1) → (x0·c − x1·s, x1·c + x0·s) with
// s = sign·sin(angle); sign −1 is the inverse (conjugate) rotation.
#pragma once
#include "common.cuh"

namespace memra::cuda {

__device__ __forceinline__ void rope_pair(float* pair, float inv_freq, int32_t position, float sign) {
  const float angle = inv_freq * static_cast<float>(position);
  const float c = cosf(angle), s = sign * sinf(angle);
  const float x0 = pair[0], x1 = pair[1];
  pair[0] = x0 * c - x1 * s;
  pair[1] = x1 * c + x0 * s;
}

}  // namespace memra::cuda
