// Seeded synthetic weights on the device (synthetic_weights.h).
#include "synthetic_weights.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "common.cuh"
#include "launch.cuh"
#include "core/error.h"
#include "cuda_check.h"
#include "engine/rope.h"
#include "model/synthetic.h"

namespace memra::cuda {

namespace {

// lib/model/synthetic.h synthetic_mix, on the device.
__device__ __forceinline__ uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// value(i) of synthetic_weights.h for i in [0, n), written as T.
template <typename T>
__global__ void synth_kernel(T* out, int64_t n, uint32_t key, float scale, float offset) {
  pdl_begin();
  for (int64_t i = global_thread(); i < n; i += global_stride()) {
    const uint32_t h = mix32(key + static_cast<uint32_t>(i) * 0x85ebca6bu);
    const float u = static_cast<float>(h >> 8) * 5.9604644775390625e-08f;  // 2^-24
    const float v = __fadd_rn(__fmul_rn(__fsub_rn(__fmul_rn(u, 2.0f), 1.0f), scale), offset);
    const __nv_bfloat16 b = __float2bfloat16_rn(v);
    if constexpr (std::is_same_v<T, float>) out[i] = __bfloat162float(b);
    else out[i] = b;
  }
}

struct Gen {
  DeviceUploader& up;
  uint64_t seed;
  cudaStream_t stream = nullptr;

  void fill(void* dst, bool bf16, int64_t n, const std::string& name, float scale, float offset) {
    if (n > (int64_t{1} << 32)) throw Error("synthetic tensor " + name + " has more than 2^32 elements");
    check(synthetic_fill(dst, bf16, n, synthetic_key(name, seed), scale, offset, stream), ("synthetic weights: " + name).c_str());
  }
  // A bf16 matrix [count·rows, cols] (count > 1: a stack), uniform with std 1/√cols (scale > 0: ±scale).
  DevMatrix matrix(const std::string& name, int64_t rows, int64_t cols, int64_t count = 1, float scale = 0.0f) {
    DevMatrix m;
    m.type = WType::kBF16;
    m.rows = rows;
    m.cols = cols;
    void* p = up.alloc(static_cast<size_t>(count * rows * cols) * 2, name);
    if (!(scale > 0.0f)) scale = static_cast<float>(std::sqrt(3.0 / static_cast<double>(cols)));
    fill(p, true, count * rows * cols, name, scale, 0.0f);
    m.ptr = p;
    return m;
  }
  const float* vec(const std::string& name, int64_t n, float scale, float offset = 0.0f) {
    void* p = up.alloc(static_cast<size_t>(n) * 4, name);
    fill(p, false, n, name, scale, offset);
    return static_cast<const float*>(p);
  }
};

}  // namespace

cudaError_t synthetic_fill(void* dst, bool bf16, int64_t n, uint32_t key, float scale, float offset, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (!dst || n < 0) return cudaErrorInvalidValue;
  const int64_t blocks = std::min<int64_t>((n + 255) / 256, 65535 * 8);
  if (bf16)
    return launch(synth_kernel<__nv_bfloat16>, static_cast<unsigned>(blocks), 256, 0, stream, static_cast<__nv_bfloat16*>(dst), n,
                  key, scale, offset);
  return launch(synth_kernel<float>, static_cast<unsigned>(blocks), 256, 0, stream, static_cast<float*>(dst), n, key, scale, offset);
}

std::unique_ptr<DeviceWeights> synthetic_weights(const ModelConfig& cfg, uint64_t seed, int device, int first_layer,
                                                 int last_layer, bool embed, bool head) {
  auto dw = std::make_unique<DeviceWeights>(device);
  dw->first = first_layer;
  DeviceGuard guard(device);
  Gen g{dw->up, seed};
  const int64_t D = cfg.hidden_size, n = cfg.hc_mult, H = cfg.num_attention_heads, d = cfg.head_dim;
  const int64_t ql = cfg.q_lora_rank, G = cfg.o_groups, Ro = cfg.o_lora_rank, E = cfg.n_routed_experts;
  const int64_t I = cfg.moe_intermediate_size, Hi = cfg.index_n_heads, di = cfg.index_head_dim, V = cfg.vocab_size;
  const int64_t M = (2 + n) * n;
  const float hc_scale = static_cast<float>(std::sqrt(3.0 / static_cast<double>(n * D)));
  const int64_t r = cfg.qk_rope_head_dim;
  const std::vector<float> inv_main = rope_inv_freq(cfg.rope_main, r), inv_cmp = rope_inv_freq(cfg.rope_compress, r);
  const float* d_inv_main = dw->up.f32(inv_main.data(), inv_main.size(), "rope table (main)");
  const float* d_inv_cmp = dw->up.f32(inv_cmp.data(), inv_cmp.size(), "rope table (compress)");
  for (int l = first_layer; l < last_layer; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    if (cfg.mlp_layer_types[l] == MlpKind::kHash)
      throw Error("synthetic weights have no hash routing (layer " + std::to_string(l) + " is hash_moe)",
                  "use a geometry whose layers route by learned scores");
    DevLayer L;
    L.kind = cfg.layer_types[l];
    L.mlp = cfg.mlp_layer_types[l];
    L.m = cfg.compress_ratio(l);
    L.inv_freq = L.kind == LayerKind::kSliding ? d_inv_main : d_inv_cmp;
    L.hc_attn_fn = g.vec(p + "hc_attn_fn", M * n * D, hc_scale);
    L.hc_attn_base = g.vec(p + "hc_attn_base", M, 0.5f);
    L.hc_attn_scale = g.vec(p + "hc_attn_scale", 3, 0.5f, 1.0f);
    L.hc_ffn_fn = g.vec(p + "hc_ffn_fn", M * n * D, hc_scale);
    L.hc_ffn_base = g.vec(p + "hc_ffn_base", M, 0.5f);
    L.hc_ffn_scale = g.vec(p + "hc_ffn_scale", 3, 0.5f, 1.0f);
    L.attn_norm = g.vec(p + "attn_norm.weight", D, 0.1f, 1.0f);
    L.ffn_norm = g.vec(p + "ffn_norm.weight", D, 0.1f, 1.0f);
    L.wq_a = g.matrix(p + "attn.wq_a.weight", ql, D);
    L.q_norm = g.vec(p + "attn.q_norm.weight", ql, 0.1f, 1.0f);
    L.wq_b = g.matrix(p + "attn.wq_b.weight", H * d, ql);
    L.wkv = g.matrix(p + "attn.wkv.weight", d, D);
    L.kv_norm = g.vec(p + "attn.kv_norm.weight", d, 0.1f, 1.0f);
    L.sink = g.vec(p + "attn.attn_sink", H, 1.0f);
    L.wo_a = g.matrix(p + "attn.wo_a.weight", G * Ro, H * d / G);
    L.wo_b = g.matrix(p + "attn.wo_b.weight", D, G * Ro);
    auto compressor = [&](const std::string& c, int64_t cc, int64_t w) {
      return DevCompressor{g.matrix(c + "wkv.weight", cc * w, D), g.matrix(c + "wgate.weight", cc * w, D),
                           g.vec(c + "ape", L.m * cc * w, 0.5f), g.vec(c + "norm.weight", w, 0.1f, 1.0f)};
    };
    if (L.kind != LayerKind::kSliding) L.cmp = compressor(p + "attn.compressor.", L.kind == LayerKind::kCSA ? 2 : 1, d);
    if (L.kind == LayerKind::kCSA) {
      L.idx = compressor(p + "attn.indexer.compressor.", 2, di);
      L.idx_wq_b = g.matrix(p + "attn.indexer.wq_b.weight", Hi * di, ql);
      L.idx_weights = g.matrix(p + "attn.indexer.weights_proj.weight", Hi, D);
    }
    L.gate = g.matrix(p + "ffn.gate.weight", E, D);
    L.gate_bias = g.vec(p + "ffn.gate.bias", E, 0.05f);
    L.w1 = g.matrix(p + "ffn.experts.w1", I, D, E);  // stacked [E, I, D]
    L.w3 = g.matrix(p + "ffn.experts.w3", I, D, E);
    L.w2 = g.matrix(p + "ffn.experts.w2", D, I, E);
    L.shared_w1 = g.matrix(p + "ffn.shared_experts.w1.weight", I, D);
    L.shared_w3 = g.matrix(p + "ffn.shared_experts.w3.weight", I, D);
    L.shared_w2 = g.matrix(p + "ffn.shared_experts.w2.weight", D, I);
    dw->layers.push_back(L);
  }
  if (embed) {
    dw->ends.embed = g.matrix("embed.weight", V, D, 1, 1.0f);  // not a projection: values of order 1
  }
  if (head) {
    dw->ends.head = g.matrix("head.weight", V, D);
    dw->ends.final_norm = g.vec("norm.weight", D, 0.1f, 1.0f);
    dw->ends.hc_head_fn = g.vec("hc_head_fn", n * n * D, hc_scale);
    dw->ends.hc_head_base = g.vec("hc_head_base", n, 0.5f);
    dw->ends.hc_head_scale = g.vec("hc_head_scale", 1, 0.5f, 1.0f);
  }
  check(cudaDeviceSynchronize(), "synthetic weights");
  return dw;
}

}  // namespace memra::cuda
