// Binds a loaded model's weights for the CPU backends (cpu_layer.h ModelWeights), by tensor id.
#include <string>

#include "engine/cpu_layer.h"
#include "engine/cpu_ops.h"
#include "engine/faults.h"
#include "engine/rope.h"
#include "model/model.h"
#include "model/tensor_names.h"

namespace memra::cpu {

ModelWeights::ModelWeights(const Model& model) {
  const ModelConfig& cfg = model.config();
  using enum TensorId;
  inv_main = rope_inv_freq(cfg.rope_main, cfg.qk_rope_head_dim);
  inv_compress = rope_inv_freq(cfg.rope_compress, cfg.qk_rope_head_dim);
  // A matrix stored F32 is read in place; any other is decoded row by row when a kernel reads it.
  auto mat = [&](const std::string& name) {
    const WeightView& v = model.weight(name);
    return v.format == WeightFormat::kF32 ? Matrix(model.f32(name)) : Matrix(v);
  };
  embed = mat(tensor_name(kEmbed));
  head = mat(tensor_name(kHead));
  final_norm = model.f32(tensor_name(kFinalNorm));
  hc_head = {model.f32(tensor_name(kHcHeadFn)), model.f32(tensor_name(kHcHeadBase)), model.f32(tensor_name(kHcHeadScale))};
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
    auto f = [&](TensorId id) { return model.f32(tensor_name(id, l)); };
    auto m = [&](TensorId id) { return mat(tensor_name(id, l)); };
    LayerWeights w{};
    w.kind = cfg.layer_types[l];
    w.ratio = cfg.compress_ratio(l);
    w.inv_freq = w.kind == LayerKind::kSliding && !MEMRA_FAULT("yarn_on_sliding") ? &inv_main : &inv_compress;
    w.hc_attn = {f(kHcAttnFn), f(kHcAttnBase), f(kHcAttnScale)};
    w.hc_ffn = {f(kHcFfnFn), f(kHcFfnBase), f(kHcFfnScale)};
    w.attn_norm = f(kAttnNorm);
    w.ffn_norm = f(kFfnNorm);
    w.wq_a = m(kWqA);
    w.q_norm = f(kQNorm);
    w.wq_b = m(kWqB);
    w.wkv = m(kWkv);
    w.kv_norm = f(kKvNorm);
    w.sink = f(kAttnSink);
    w.wo_a = m(kWoA);
    w.wo_b = m(kWoB);
    if (w.kind != LayerKind::kSliding) w.compressor = {m(kCmpWkv), m(kCmpWgate), f(kCmpApe), f(kCmpNorm)};
    if (w.kind == LayerKind::kCSA) {
      w.indexer = {m(kIdxCmpWkv), m(kIdxCmpWgate), f(kIdxCmpApe), f(kIdxCmpNorm), true};
      w.idx_wq_b = m(kIdxWqB);
      w.idx_weights = m(kIdxWeights);
    }
    w.mlp = cfg.mlp_layer_types[l];
    w.gate = m(kGate);
    if (w.mlp == MlpKind::kHash) w.tid2eid = model.tensor(tensor_name(kTid2eid, l)).ids.data();
    else w.gate_bias = f(kGateBias);
    for (int64_t e = 0; e < cfg.n_routed_experts; ++e) {
      w.w1.push_back(mat(tensor_name(kExpertW1, l, e)));
      w.w2.push_back(mat(tensor_name(kExpertW2, l, e)));
      w.w3.push_back(mat(tensor_name(kExpertW3, l, e)));
    }
    w.shared_w1 = m(kSharedW1);
    w.shared_w2 = m(kSharedW2);
    w.shared_w3 = m(kSharedW3);
    layers.push_back(std::move(w));
  }
}

void hc_head(const ModelConfig& cfg, const ModelWeights& w, const float* Xt, float* h) {
  const int64_t n = cfg.hc_mult, D = cfg.hidden_size;
  std::vector<float> flat(Xt, Xt + n * D), mix(n);
  rms_norm(flat.data(), n * D, nullptr, cfg.rms_norm_eps);
  for (int64_t j = 0; j < n; ++j) {
    float mj = static_cast<float>(dot(flat.data(), w.hc_head.fn + j * n * D, n * D));
    mix[j] = sigmoid(mj * w.hc_head.scale[0] + w.hc_head.base[j]) + static_cast<float>(cfg.hc_eps);
  }
  for (int64_t i = 0; i < D; ++i) {
    double s = 0.0;
    for (int64_t j = 0; j < n; ++j) s += static_cast<double>(mix[j]) * Xt[j * D + i];
    h[i] = static_cast<float>(s);
  }
  rms_norm(h, D, w.final_norm, cfg.rms_norm_eps);
}

}  // namespace memra::cpu
