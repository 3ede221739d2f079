// MoE on the CPU: sqrtsoftplus or sigmoid scoring (softmax is refused at load, docs/architecture.md
// §1), hash or learned (bias-selected) routing, routed experts with the SwiGLU clamp in ascending id
// order, plus the shared expert.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/cpu_layer.h"
#include "engine/cpu_ops.h"
#include "engine/faults.h"

namespace memra::cpu {

static void expert(const ModelConfig& cfg, const float* x, const float* w1, const float* w2, const float* w3,
                   float* y) {
  const int64_t D = cfg.hidden_size, I = cfg.moe_intermediate_size;
  const float limit = static_cast<float>(cfg.swiglu_limit);
  std::vector<float> h(I);
  for (int64_t i = 0; i < I; ++i) {
    float g = static_cast<float>(cpu::dot(x, w1 + i * D, D));
    float u = static_cast<float>(cpu::dot(x, w3 + i * D, D));
    if (limit > 0) {
      g = std::min(g, limit);
      u = std::clamp(u, -limit, limit);
    }
    h[i] = cpu::silu(g) * u;
  }
  for (int64_t o = 0; o < D; ++o) y[o] = static_cast<float>(cpu::dot(h.data(), w2 + o * I, I));
}

void moe(const ModelConfig& cfg, const LayerWeights& lw, int64_t layer, std::span<const int32_t> tokens,
         const std::vector<float>& x, std::vector<float>& out, ForwardTrace* trace) {
  const int64_t T = static_cast<int64_t>(tokens.size()), D = cfg.hidden_size, E = cfg.n_routed_experts;
  const int64_t k = cfg.num_experts_per_tok;
  std::vector<float> logits(T * E);
  cpu::linear(x.data(), T, D, lw.gate, E, logits.data());
  std::vector<float> experts_trace(T * k), margin_trace(T, std::numeric_limits<float>::infinity());
  std::vector<float> routed(D), eo(D), shared(D);
  out.assign(T * D, 0.0f);
  const int64_t row_off = MEMRA_FAULT("hash_row_off") ? 1 : 0;
  const float scale = MEMRA_FAULT("route_scale_dropped") ? 1.0f : static_cast<float>(cfg.routed_scaling_factor);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> score(E);
    const float* lt = logits.data() + t * E;
    if (cfg.scoring_func == "sigmoid") {
      for (int64_t e = 0; e < E; ++e) score[e] = cpu::sigmoid(lt[e]);
    } else {  // sqrtsoftplus
      for (int64_t e = 0; e < E; ++e) score[e] = std::sqrt(cpu::softplus(lt[e]));
    }
    std::vector<int64_t> idx;
    if (lw.mlp == MlpKind::kHash) {
      const int64_t* row = lw.tid2eid + (static_cast<int64_t>(tokens[t]) + row_off) % cfg.vocab_size * k;
      idx.assign(row, row + k);
    } else {
      std::vector<float> sel(E);
      for (int64_t e = 0; e < E; ++e) sel[e] = score[e] + lw.gate_bias[e];
      idx = topk_lower_index(sel, k);
      margin_trace[t] = selection_margin(sel, k);
    }
    std::vector<float> wts(k);
    float wsum = 0.0f;
    for (int64_t i = 0; i < k; ++i) wsum += (wts[i] = score[idx[i]]);
    for (int64_t i = 0; i < k; ++i) wts[i] = wts[i] / (wsum + 1e-20f) * scale;
    // Experts contribute in ascending id order (transformers' index_add_ loop), f32 adds.
    std::vector<int64_t> order(k);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return idx[a] < idx[b]; });
    std::fill(routed.begin(), routed.end(), 0.0f);
    const float* xt = x.data() + t * D;
    for (int64_t i : order) {
      const int64_t e = idx[i];
      expert(cfg, xt, lw.w1[e], lw.w2[e], lw.w3[e], eo.data());
      for (int64_t o = 0; o < D; ++o) routed[o] += eo[o] * wts[i];
    }
    expert(cfg, xt, lw.shared_w1, lw.shared_w2, lw.shared_w3, shared.data());
    for (int64_t o = 0; o < D; ++o) out[t * D + o] = routed[o] + shared[o];
    std::vector<int64_t> sorted_idx = idx;
    std::sort(sorted_idx.begin(), sorted_idx.end());
    for (int64_t i = 0; i < k; ++i) experts_trace[t * k + i] = static_cast<float>(sorted_idx[i]);
  }
  trace_put(trace, "router." + std::to_string(layer) + ".experts", {T, k}, std::move(experts_trace));
  if (lw.mlp == MlpKind::kLearned)
    trace_put(trace, "router." + std::to_string(layer) + ".margin", {T}, std::move(margin_trace));
}

}  // namespace memra::cpu
