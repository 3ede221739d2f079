// The CPU reference backend: DeepSeek-V4 exactly as docs/architecture.md (§3–§6)
// describes it and transformers 5.17 compute it, in f32 storage with double
// accumulation. Plain loops, one row at a time: a position's result never depends on how the
// tokens were split into calls (chunk widths 1…capacity give bit-identical logits and state).
// This file binds the weights and runs the layer loop and the hc head; the sites live in
// cpu_mhc.cpp, cpu_attention.cpp and cpu_moe.cpp (cpu_layer.h).
//
// Shape letters: T tokens in this call, D hidden, n hc_mult, H heads, d head_dim, r rope dims,
// q_l q_lora_rank, G o_groups, R o_lora_rank, m compress ratio, W window, E experts, k experts per
// token, I expert width, Hi/di indexer heads/dim, K index_topk, V vocab.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/cpu_layer.h"
#include "engine/cpu_ops.h"
#include "engine/engine.h"
#include "engine/faults.h"
#include "engine/rope.h"

namespace memra {
namespace {

using cpu::CompressorWeights;
using cpu::HcWeights;
using cpu::LayerWeights;

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const Model& model) : model_(model), cfg_(model.config()) {
    inv_main_ = rope_inv_freq(cfg_.rope_main, cfg_.qk_rope_head_dim);
    inv_compress_ = rope_inv_freq(cfg_.rope_compress, cfg_.qk_rope_head_dim);
    for (int64_t l = 0; l < cfg_.num_hidden_layers; ++l) layers_.push_back(bind_layer(l));
    embed_ = model.f32("embed.weight");
    head_ = model.f32("head.weight");
    final_norm_ = model.f32("norm.weight");
    hc_head_ = {model.f32("hc_head_fn"), model.f32("hc_head_base"), model.f32("hc_head_scale")};
  }

  std::string name() const override { return "cpu"; }
  std::string precision_class() const override { return "cpu-f32-exact"; }
  int64_t vocab_size() const override { return cfg_.vocab_size; }
  DecodeState new_state(int64_t capacity) const override { return make_decode_state(cfg_, capacity); }

  void forward(DecodeState& state, std::span<const int32_t> tokens, float* logits, ForwardTrace* trace) const override;

 private:
  LayerWeights bind_layer(int64_t l) const;

  const Model& model_;
  const ModelConfig& cfg_;
  std::vector<float> inv_main_, inv_compress_;
  std::vector<LayerWeights> layers_;
  const float* embed_;
  const float* head_;
  const float* final_norm_;
  HcWeights hc_head_;
};

LayerWeights CpuBackend::bind_layer(int64_t l) const {
  const std::string p = "layers." + std::to_string(l) + ".";
  LayerWeights w{};
  w.kind = cfg_.layer_types[l];
  w.ratio = cfg_.compress_ratio(l);
  w.inv_freq = w.kind == LayerKind::kSliding && !MEMRA_FAULT("yarn_on_sliding") ? &inv_main_ : &inv_compress_;
  w.hc_attn = {model_.f32(p + "hc_attn_fn"), model_.f32(p + "hc_attn_base"), model_.f32(p + "hc_attn_scale")};
  w.hc_ffn = {model_.f32(p + "hc_ffn_fn"), model_.f32(p + "hc_ffn_base"), model_.f32(p + "hc_ffn_scale")};
  w.attn_norm = model_.f32(p + "attn_norm.weight");
  w.ffn_norm = model_.f32(p + "ffn_norm.weight");
  w.wq_a = model_.f32(p + "attn.wq_a.weight");
  w.q_norm = model_.f32(p + "attn.q_norm.weight");
  w.wq_b = model_.f32(p + "attn.wq_b.weight");
  w.wkv = model_.f32(p + "attn.wkv.weight");
  w.kv_norm = model_.f32(p + "attn.kv_norm.weight");
  w.sink = model_.f32(p + "attn.attn_sink");
  w.wo_a = model_.f32(p + "attn.wo_a.weight");
  w.wo_b = model_.f32(p + "attn.wo_b.weight");
  auto bind_compressor = [&](const std::string& c) {
    return CompressorWeights{model_.f32(c + "wkv.weight"), model_.f32(c + "wgate.weight"), model_.f32(c + "ape"),
                             model_.f32(c + "norm.weight")};
  };
  if (w.kind != LayerKind::kSliding) w.compressor = bind_compressor(p + "attn.compressor.");
  if (w.kind == LayerKind::kCSA) {
    w.indexer = bind_compressor(p + "attn.indexer.compressor.");
    w.idx_wq_b = model_.f32(p + "attn.indexer.wq_b.weight");
    w.idx_weights = model_.f32(p + "attn.indexer.weights_proj.weight");
  }
  w.mlp = cfg_.mlp_layer_types[l];
  w.gate = model_.f32(p + "ffn.gate.weight");
  if (w.mlp == MlpKind::kHash) {
    w.tid2eid = model_.tensor(p + "ffn.gate.tid2eid").ids.data();
  } else {
    w.gate_bias = model_.f32(p + "ffn.gate.bias");
  }
  for (int64_t e = 0; e < cfg_.n_routed_experts; ++e) {
    const std::string ep = p + "ffn.experts." + std::to_string(e) + ".";
    w.w1.push_back(model_.f32(ep + "w1.weight"));
    w.w2.push_back(model_.f32(ep + "w2.weight"));
    w.w3.push_back(model_.f32(ep + "w3.weight"));
  }
  w.shared_w1 = model_.f32(p + "ffn.shared_experts.w1.weight");
  w.shared_w2 = model_.f32(p + "ffn.shared_experts.w2.weight");
  w.shared_w3 = model_.f32(p + "ffn.shared_experts.w3.weight");
  return w;
}

void CpuBackend::forward(DecodeState& state, std::span<const int32_t> tokens, float* logits,
                         ForwardTrace* trace) const {
  const int64_t T = static_cast<int64_t>(tokens.size());
  if (T == 0) return;
  const int64_t D = cfg_.hidden_size, n = cfg_.hc_mult, V = cfg_.vocab_size;
  if (state.layers.size() != static_cast<size_t>(cfg_.num_hidden_layers))
    throw Error("decode state has " + std::to_string(state.layers.size()) + " layers, the model " +
                std::to_string(cfg_.num_hidden_layers));
  if (state.pos + T > state.capacity)
    throw Error("capacity exceeded: position " + std::to_string(state.pos) + " + " + std::to_string(T) +
                    " tokens > capacity " + std::to_string(state.capacity),
                "plan a larger --capacity");
  for (int64_t t = 0; t < T; ++t)
    if (tokens[t] < 0 || tokens[t] >= V)
      throw Error("token id " + std::to_string(tokens[t]) + " at index " + std::to_string(t) +
                  " is outside the vocabulary [0, " + std::to_string(V) + ")");
  const int64_t pos0 = state.pos;

  std::vector<float> X(T * n * D);  // [T, n, D]
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < n; ++j)
      std::copy(embed_ + tokens[t] * D, embed_ + (tokens[t] + 1) * D, X.begin() + (t * n + j) * D);

  std::vector<float> x, post, comb, y;
  for (int64_t l = 0; l < cfg_.num_hidden_layers; ++l) {
    const LayerWeights& lw = layers_[l];
    cpu::hc_pre(cfg_, X, T, lw.hc_attn, x, post, comb);
    for (int64_t t = 0; t < T; ++t) cpu::rms_norm(x.data() + t * D, D, lw.attn_norm, cfg_.rms_norm_eps);
    cpu::attention(cfg_, lw, l, state.layers[l], pos0, T, x, y, trace);
    cpu::hc_post(cfg_, X, T, y, post, comb);
    cpu::hc_pre(cfg_, X, T, lw.hc_ffn, x, post, comb);
    for (int64_t t = 0; t < T; ++t) cpu::rms_norm(x.data() + t * D, D, lw.ffn_norm, cfg_.rms_norm_eps);
    cpu::moe(cfg_, lw, l, tokens, x, y, trace);
    cpu::hc_post(cfg_, X, T, y, post, comb);
    if (trace) cpu::trace_put(trace, "hidden." + std::to_string(l), {T, n, D}, X);
  }

  // hc head: pre-weighted collapse of the streams, final norm, LM head.
  const int64_t first = logits ? 0 : T - 1;  // without a logits buffer only the last row is needed
  std::vector<float> h((T - first) * D), flat(n * D), mix(n);
  for (int64_t t = first; t < T; ++t) {
    const float* Xt = X.data() + t * n * D;
    std::copy(Xt, Xt + n * D, flat.begin());
    cpu::rms_norm(flat.data(), n * D, nullptr, cfg_.rms_norm_eps);
    for (int64_t j = 0; j < n; ++j) {
      float mj = static_cast<float>(cpu::dot(flat.data(), hc_head_.fn + j * n * D, n * D));
      mix[j] = cpu::sigmoid(mj * hc_head_.scale[0] + hc_head_.base[j]) + static_cast<float>(cfg_.hc_eps);
    }
    float* ht = h.data() + (t - first) * D;
    for (int64_t i = 0; i < D; ++i) {
      double s = 0.0;
      for (int64_t j = 0; j < n; ++j) s += static_cast<double>(mix[j]) * Xt[j * D + i];
      ht[i] = static_cast<float>(s);
    }
    cpu::rms_norm(ht, D, final_norm_, cfg_.rms_norm_eps);
  }
  std::vector<float> out((T - first) * V);
  cpu::linear(h.data(), T - first, D, head_, V, out.data());
  if (logits) std::copy(out.begin(), out.end(), logits);
  state.last_logits.assign(out.end() - V, out.end());
  state.pos += T;
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Model& model) { return std::make_unique<CpuBackend>(model); }

}  // namespace memra