// RoPE rotation of one interleaved pair, f32, as lib/engine/rope.cpp does it on the CPU:
// angle = inv_freq · position (an f32 product), (x0, x1) → (x0·c − x1·s, x1·c + x0·s) with
// s = sign·sin(angle); sign −1 is the inverse (conjugate) rotation.
#pragma once
#include "common.cuh"

namespace memra::cuda {

// The rotation's cos and sign·sin, apart so that pairs sharing an angle (one dim pair of several
// heads) take cosf / sinf once; rope_pair is the two together.
struct RopeTurn {
  float c, s;
};
__device__ __forceinline__ RopeTurn rope_turn(float inv_freq, int32_t position, float sign) {
  const float angle = inv_freq * static_cast<float>(position);
  return {cosf(angle), sign * sinf(angle)};
}
__device__ __forceinline__ void rope_apply(float* pair, RopeTurn t) {
  const float x0 = pair[0], x1 = pair[1];
  pair[0] = x0 * t.c - x1 * t.s;
  pair[1] = x1 * t.c + x0 * t.s;
}
__device__ __forceinline__ void rope_pair(float* pair, float inv_freq, int32_t position, float sign) {
  rope_apply(pair, rope_turn(inv_freq, position, sign));
}

}  // namespace memra::cuda
