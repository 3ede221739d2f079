// Seeded synthetic weights made on the device (BackendOptions::synthetic_seed): a model of any
// geometry without a checkpoint, for `memra bench`. Every value is reproducible from (seed, tensor
// name, element index) alone, so bench/transformers_bench.py rebuilds the same weights in torch:
//
//   key        = synthetic_key(name, seed)   (lib/model/synthetic.h; name: the canonical name of
//                model.h, stacked experts layers.N.ffn.experts.w1|w2|w3)
//   h(i)       = mix(key + i·0x85EBCA6B)      (mod 2^32; i < 2^32, the row-major index)
//   u(i)       = (h(i) >> 8) · 2^-24                                      exact in f32, [0, 1)
//   value(i)   = bf16_rne((2·u − 1) · scale + offset)                     f32 products and sums, rounded once each
//   mix(x)     : x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16  (lowbias32)
//
// Matrices are stored bf16, vectors f32 (holding the same bf16 values); scale and offset per tensor
// kind are in synthetic_weights.cu's table (matrices: uniform with std 1/√in). Routing is learned
// (hash-routed layers are refused: tid2eid has no synthetic form).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "model/config.h"
#include "weights.h"

namespace memra::cuda {

// value(i) of the formula above for i < n into dst (bf16, or f32 holding bf16 values).
cudaError_t synthetic_fill(void* dst, bool bf16, int64_t n, uint32_t key, float scale, float offset, cudaStream_t stream);

// The layers [first, last) and, when asked, the ends, generated on `device`.
std::unique_ptr<DeviceWeights> synthetic_weights(const ModelConfig& config, uint64_t seed, int device, int first_layer,
                                                 int last_layer, bool embed, bool head);

}  // namespace memra::cuda
