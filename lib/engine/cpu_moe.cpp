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

static void expert(const ModelConfig& cfg, const float* x, const Matrix& w1, const Matrix& w2, const Matrix& w3,
                   float* y) {
  const int64_t D = cfg.hidden_size, I = cfg.moe_intermediate_size;
  const float limit = static_cast<float>(cfg.swiglu_limit);
  std::vector<float> h(I), scratch(std::max(D, I));  // scratch: one decoded weight row
  for (int64_t i = 0; i < I; ++i) {
    float g = static_cast<float>(cpu::dot(x, w1.row(i, D, scratch.data()), D));
    float u = static_cast<float>(cpu::dot(x, w3.row(i, D, scratch.data()), D));
    if (limit > 0) {
      g = std::min(g, limit);
      u = std::clamp(u, -limit, limit);
    }
    h[i] = cpu::silu(g) * u;
  }
  for (int64_t o = 0; o < D; ++o) y[o] = static_cast<float>(cpu::dot(h.data(), w2.row(o, I, scratch.data()), I));
}

// cpu-fast: every expert runs once over the rows routed to it (three GEMMs), the shared expert once
// over all rows; row outputs accumulate in f32 in ascending expert order, like the exact path.
static void experts_grouped(const Arithmetic& ar, const ModelConfig& cfg, const LayerWeights& lw, const std::vector<float>& x,
                            const std::vector<std::vector<int64_t>>& idx, const std::vector<std::vector<float>>& wts,
                            std::vector<float>& out) {
  const int64_t T = static_cast<int64_t>(idx.size()), D = cfg.hidden_size, I = cfg.moe_intermediate_size;
  const int64_t E = cfg.n_routed_experts;
  const float limit = static_cast<float>(cfg.swiglu_limit);
  auto ffn = [&](const float* xs, int64_t rows, const Matrix& w1, const Matrix& w2, const Matrix& w3, std::vector<float>& ys) {
    std::vector<float> g(rows * I), u(rows * I);
    ar.linear(xs, rows, D, w1, I, g.data());
    ar.linear(xs, rows, D, w3, I, u.data());
    for (int64_t i = 0; i < rows * I; ++i) {
      float gi = g[i], ui = u[i];
      if (limit > 0) {
        gi = std::min(gi, limit);
        ui = std::clamp(ui, -limit, limit);
      }
      g[i] = cpu::silu(gi) * ui;
    }
    ys.resize(rows * D);
    ar.linear(g.data(), rows, I, w2, D, ys.data());
  };
  // rows of each expert, and where in each row's ascending order it contributes
  std::vector<std::vector<std::pair<int64_t, float>>> routed_rows(E);
  for (int64_t t = 0; t < T; ++t)
    for (size_t i = 0; i < idx[t].size(); ++i) routed_rows[idx[t][i]].push_back({t, wts[t][i]});
  std::vector<float> routed(T * D, 0.0f), xs, ys;
  for (int64_t e = 0; e < E; ++e) {  // ascending expert id: each row adds its experts in id order
    const auto& rows = routed_rows[e];
    if (rows.empty()) continue;
    xs.resize(rows.size() * D);
    for (size_t r = 0; r < rows.size(); ++r) std::copy(x.begin() + rows[r].first * D, x.begin() + (rows[r].first + 1) * D, xs.begin() + r * D);
    ffn(xs.data(), static_cast<int64_t>(rows.size()), lw.w1[e], lw.w2[e], lw.w3[e], ys);
    for (size_t r = 0; r < rows.size(); ++r)
      for (int64_t o = 0; o < D; ++o) routed[rows[r].first * D + o] += ys[r * D + o] * rows[r].second;
  }
  ffn(x.data(), T, lw.shared_w1, lw.shared_w2, lw.shared_w3, ys);
  out.resize(T * D);
  for (int64_t i = 0; i < T * D; ++i) out[i] = routed[i] + ys[i];
}

void moe(const Arithmetic& ar, const ModelConfig& cfg, const LayerWeights& lw, int64_t layer,
         std::span<const int32_t> tokens, const std::vector<float>& x, std::vector<float>& out, ForwardTrace* trace) {
  const int64_t T = static_cast<int64_t>(tokens.size()), D = cfg.hidden_size, E = cfg.n_routed_experts;
  const int64_t k = cfg.num_experts_per_tok;
  std::vector<float> logits(T * E);
  ar.linear(x.data(), T, D, lw.gate, E, logits.data());  // router: f32 (an f32 island)
  std::vector<float> experts_trace(T * k), margin_trace(T, std::numeric_limits<float>::infinity()), scale_trace(T),
      boundary_trace(T, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> routed(D), eo(D), shared(D);
  out.assign(T * D, 0.0f);
  const int64_t row_off = MEMRA_FAULT("hash_row_off") ? 1 : 0;
  const float scale = MEMRA_FAULT("route_scale_dropped") ? 1.0f : static_cast<float>(cfg.routed_scaling_factor);
  std::vector<std::vector<int64_t>> all_idx(T);
  std::vector<std::vector<float>> all_wts(T);
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
      if (trace) {  // only traces read them
        const SelectionEdge edge = selection_edge(sel, k);
        margin_trace[t] = edge.margin;
        boundary_trace[t] = edge.boundary;
        scale_trace[t] = selection_scale(sel);
      }
    }
    std::vector<float> wts(k);
    float wsum = 0.0f;
    for (int64_t i = 0; i < k; ++i) wsum += (wts[i] = score[idx[i]]);
    for (int64_t i = 0; i < k; ++i) wts[i] = wts[i] / (wsum + 1e-20f) * scale;
    std::vector<int64_t> sorted_idx = idx;
    std::sort(sorted_idx.begin(), sorted_idx.end());
    for (int64_t i = 0; i < k; ++i) experts_trace[t * k + i] = static_cast<float>(sorted_idx[i]);
    if (ar.fast) {
      all_idx[t] = std::move(idx);
      all_wts[t] = std::move(wts);
      continue;
    }
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
  }
  if (ar.fast) experts_grouped(ar, cfg, lw, x, all_idx, all_wts, out);
  trace_put(trace, "router." + std::to_string(layer) + ".experts", {T, k}, std::move(experts_trace));
  if (lw.mlp == MlpKind::kLearned)
  {
    trace_put(trace, "router." + std::to_string(layer) + ".margin", {T}, std::move(margin_trace));
    trace_put(trace, "router." + std::to_string(layer) + ".scale", {T}, std::move(scale_trace));
    trace_put(trace, "router." + std::to_string(layer) + ".boundary", {T}, std::move(boundary_trace));
  }
}

}  // namespace memra::cpu
