// The seeded value stream of synthetic models (BackendOptions::synthetic_seed, `memra bench`),
// host side: the per-tensor key and the token ids of a synthetic prompt. The device side that fills
// weights with it is kernels/synthetic_weights.cu; bench/transformers_bench.py implements the same
// formulas in torch, so both build bit-identical weights and prompts from a seed.
//   fnv(name) = FNV-1a 32;  mix(x) = lowbias32 (x ^= x>>16; x *= 0x7feb352d; x ^= x>>15; x *= 0x846ca68b; x ^= x>>16)
//   key(name, seed) = mix(fnv(name) + seed·0x9E3779B9)      h(key, i) = mix(key + i·0x85EBCA6B)   (mod 2^32)
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace memra {

inline uint32_t synthetic_mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

inline uint32_t synthetic_key(const std::string& name, uint64_t seed) {
  uint32_t f = 2166136261u;  // FNV-1a 32
  for (unsigned char c : name) {
    f ^= c;
    f *= 16777619u;
  }
  return synthetic_mix(f + static_cast<uint32_t>(seed) * 0x9e3779b9u);
}

inline uint32_t synthetic_hash(uint32_t key, uint64_t i) { return synthetic_mix(key + static_cast<uint32_t>(i) * 0x85ebca6bu); }

// Element i of a synthetic tensor: bf16_rne((2u − 1)·scale + offset), u = (h >> 8)·2^-24, in f32
// with one rounding per operation (no contraction to a fused multiply-add: x86-64's baseline has
// none, and the device code is built with --fmad=false); the bf16 value, widened to f32.
inline float synthetic_value(uint32_t key, uint64_t i, float scale, float offset) {
  const float u = static_cast<float>(synthetic_hash(key, i) >> 8) * 5.9604644775390625e-08f;
  const float v = (u * 2.0f - 1.0f) * scale + offset;
  uint32_t b;
  std::memcpy(&b, &v, 4);
  b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;  // round to nearest even (values are finite)
  float r;
  std::memcpy(&r, &b, 4);
  return r;
}

// Token i of the synthetic stream `name` ("prompt", "batch.3", ...): h(key, i) mod vocab.
inline int32_t synthetic_token(const std::string& name, uint64_t seed, uint64_t i, int64_t vocab) {
  return static_cast<int32_t>(synthetic_hash(synthetic_key(name, seed), i) % static_cast<uint32_t>(vocab));
}

}  // namespace memra
