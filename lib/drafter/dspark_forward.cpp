// DSpark on the CPU: main_x, per-stage rings, the block forward (see dspark_forward.h).
#include "drafter/dspark_forward.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "engine/cpu_ops.h"
#include "engine/rope.h"

namespace memra {

DsparkWeights::DsparkWeights(const DrafterWeights& weights)
    : config(weights.config()), stage_cfg(config.stage_model_config()) {
  const DrafterConfig& c = config;
  if (c.family != DrafterFamily::kDspark) throw Error("DsparkWeights: the drafter is not a DSpark drafter");
  RopeParams rope;
  rope.theta = c.rope_theta;
  inv_freq = rope_inv_freq(rope, c.qk_rope_head_dim);
  main_proj = weights.f32("mtp.0.main_proj.weight");
  main_norm = weights.f32("mtp.0.main_norm.weight");
  for (int64_t s = 0; s < c.num_layers; ++s) {
    const std::string p = "mtp." + std::to_string(s) + ".";
    auto f = [&](const std::string& n) { return weights.f32(p + n); };
    cpu::LayerWeights lw{};
    lw.kind = LayerKind::kSliding;
    lw.ratio = 0;
    lw.inv_freq = &inv_freq;
    lw.hc_attn = {f("hc_attn_fn"), f("hc_attn_base"), f("hc_attn_scale")};
    lw.hc_ffn = {f("hc_ffn_fn"), f("hc_ffn_base"), f("hc_ffn_scale")};
    lw.attn_norm = f("attn_norm.weight");
    lw.ffn_norm = f("ffn_norm.weight");
    lw.wq_a = f("attn.wq_a.weight");
    lw.q_norm = f("attn.q_norm.weight");
    lw.wq_b = f("attn.wq_b.weight");
    lw.wkv = f("attn.wkv.weight");
    lw.kv_norm = f("attn.kv_norm.weight");
    lw.sink = f("attn.attn_sink");
    lw.wo_a = f("attn.wo_a.weight");
    lw.wo_b = f("attn.wo_b.weight");
    lw.mlp = MlpKind::kLearned;
    lw.gate = f("ffn.gate.weight");
    lw.gate_bias = f("ffn.gate.bias");
    for (int64_t e = 0; e < c.n_routed_experts; ++e) {
      const std::string q = "ffn.experts." + std::to_string(e) + ".";
      lw.w1.push_back(f(q + "w1.weight"));
      lw.w2.push_back(f(q + "w2.weight"));
      lw.w3.push_back(f(q + "w3.weight"));
    }
    lw.shared_w1 = f("ffn.shared_experts.w1.weight");
    lw.shared_w2 = f("ffn.shared_experts.w2.weight");
    lw.shared_w3 = f("ffn.shared_experts.w3.weight");
    stages.push_back(std::move(lw));
  }
  const std::string last = drafter_head_prefix(c);
  norm = weights.f32(last + "norm.weight");
  hc_head = {weights.f32(last + "hc_head_fn"), weights.f32(last + "hc_head_base"), weights.f32(last + "hc_head_scale")};
}

DsparkRings make_dspark_rings(const DrafterConfig& c) {
  DsparkRings r;
  r.ring.assign(c.num_layers, std::vector<float>(*c.sliding_window * c.head_dim, 0.0f));
  return r;
}

void dspark_main_x(const DsparkWeights& w, const float* taps, int64_t T, float* main_x) {
  const int64_t D = w.config.hidden_size;
  cpu::linear(taps, T, w.config.n_taps() * D, w.main_proj, D, main_x);
  for (int64_t t = 0; t < T; ++t) cpu::rms_norm(main_x + t * D, D, w.main_norm, w.config.rms_norm_eps);
}

void dspark_stage_kv(const DsparkWeights& w, int64_t s, const float* main_x, int64_t T, int64_t pos0, float* kv) {
  const int64_t D = w.config.hidden_size, hd = w.config.head_dim;
  const cpu::LayerWeights& lw = w.stages.at(s);
  cpu::linear(main_x, T, D, lw.wkv, hd, kv);
  for (int64_t t = 0; t < T; ++t) {
    cpu::rms_norm(kv + t * hd, hd, lw.kv_norm, w.config.rms_norm_eps);
    rope_rotate(kv + t * hd, hd, w.inv_freq, pos0 + t);
  }
}

void dspark_ring_append(const DsparkWeights& w, DsparkRings& rings, const float* main_x, int64_t T) {
  const int64_t W = *w.config.sliding_window, hd = w.config.head_dim;
  const int64_t first = std::max<int64_t>(0, T - W);  // older rows would be overwritten anyway
  std::vector<float> kv((T - first) * hd);
  for (int64_t s = 0; s < w.config.num_layers; ++s) {
    dspark_stage_kv(w, s, main_x + first * w.config.hidden_size, T - first, rings.pos + first, kv.data());
    for (int64_t t = first; t < T; ++t)
      std::copy(kv.begin() + (t - first) * hd, kv.begin() + (t - first + 1) * hd,
                rings.ring[s].begin() + ((rings.pos + t) % W) * hd);
  }
  rings.pos += T;
}

std::vector<float> dspark_ring_window(const DrafterConfig& c, const DsparkRings& rings, int64_t s) {
  const int64_t W = *c.sliding_window, hd = c.head_dim, lo = std::max<int64_t>(0, rings.pos - W);
  std::vector<float> out;
  out.reserve((rings.pos - lo) * hd);
  for (int64_t p = lo; p < rings.pos; ++p)
    out.insert(out.end(), rings.ring[s].begin() + (p % W) * hd, rings.ring[s].begin() + (p % W + 1) * hd);
  return out;
}

DsparkRings dspark_rings_from_windows(const DrafterConfig& c, int64_t pos, const std::vector<std::vector<float>>& windows) {
  const int64_t W = *c.sliding_window, hd = c.head_dim, lo = std::max<int64_t>(0, pos - W);
  if (pos < 0 || static_cast<int64_t>(windows.size()) != c.num_layers)
    throw Error("dspark: rings need one window per stage (" + std::to_string(c.num_layers) + ") at a position >= 0");
  DsparkRings r = make_dspark_rings(c);
  r.pos = pos;
  for (int64_t s = 0; s < c.num_layers; ++s) {
    if (static_cast<int64_t>(windows[s].size()) != (pos - lo) * hd)
      throw Error("dspark: stage " + std::to_string(s) + " window holds " + std::to_string(windows[s].size()) +
                  " values, expected " + std::to_string((pos - lo) * hd) + " (min(W, pos)·head_dim)");
    for (int64_t p = lo; p < pos; ++p)
      std::copy(windows[s].begin() + (p - lo) * hd, windows[s].begin() + (p - lo + 1) * hd, r.ring[s].begin() + (p % W) * hd);
  }
  return r;
}

namespace {

// One stage's window attention over x [b, D] (attn_norm'ed rows) at positions p..p+b-1; out [b, D].
void window_attention(const DsparkWeights& w, const DsparkRings& rings, int64_t s, const std::vector<float>& x,
                      int64_t b, std::vector<float>& out) {
  const DrafterConfig& c = w.config;
  const cpu::LayerWeights& lw = w.stages[s];
  const int64_t D = c.hidden_size, H = c.num_attention_heads, d = c.head_dim, ql = c.q_lora_rank;
  const int64_t G = c.o_groups, R = c.o_lora_rank, Hd = H * d, W = *c.sliding_window, p = rings.pos;
  std::vector<float> qr(b * ql), q(b * Hd), kv(b * d);
  cpu::linear(x.data(), b, D, lw.wq_a, ql, qr.data());
  for (int64_t t = 0; t < b; ++t) cpu::rms_norm(qr.data() + t * ql, ql, lw.q_norm, c.rms_norm_eps);
  cpu::linear(qr.data(), b, ql, lw.wq_b, Hd, q.data());
  cpu::linear(x.data(), b, D, lw.wkv, d, kv.data());
  for (int64_t t = 0; t < b; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      float* qh = q.data() + t * Hd + h * d;
      cpu::rms_norm(qh, d, nullptr, c.rms_norm_eps);
      rope_rotate(qh, d, w.inv_freq, p + t);
    }
    cpu::rms_norm(kv.data() + t * d, d, lw.kv_norm, c.rms_norm_eps);
    rope_rotate(kv.data() + t * d, d, w.inv_freq, p + t);
  }
  // Keys in position order: the ring's window (p-W..p-1), then the block's own rows.
  std::vector<const float*> keys;
  for (int64_t j = std::max<int64_t>(0, p - W); j < p; ++j) keys.push_back(rings.ring[s].data() + (j % W) * d);
  for (int64_t t = 0; t < b; ++t) keys.push_back(kv.data() + t * d);
  const int64_t n_keys = static_cast<int64_t>(keys.size());
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  std::vector<float> o(b * Hd), logit(n_keys);
  for (int64_t t = 0; t < b; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const float* qh = q.data() + t * Hd + h * d;
      float mx = lw.sink[h];
      for (int64_t j = 0; j < n_keys; ++j) {
        logit[j] = static_cast<float>(cpu::dot(qh, keys[j], d)) * scale;
        mx = std::max(mx, logit[j]);
      }
      double denom = std::exp(lw.sink[h] - mx);
      for (int64_t j = 0; j < n_keys; ++j) {
        logit[j] = std::exp(logit[j] - mx);
        denom += logit[j];
      }
      float* oh = o.data() + t * Hd + h * d;
      for (int64_t i = 0; i < d; ++i) {
        double acc = 0.0;
        for (int64_t j = 0; j < n_keys; ++j) acc += static_cast<double>(logit[j] / static_cast<float>(denom)) * keys[j][i];
        oh[i] = static_cast<float>(acc);
      }
      rope_rotate(oh, d, w.inv_freq, p + t, -1.0f);  // undo the rotation V picked up (K = V)
    }
  }
  // Grouped output projection: z_g = O_g · wo_a[g]ᵀ, out = z · wo_bᵀ.
  const int64_t group_in = Hd / G;
  std::vector<float> z(b * G * R), row_scratch(group_in);
  for (int64_t g = 0; g < G; ++g)
    for (int64_t t = 0; t < b; ++t)
      for (int64_t r = 0; r < R; ++r) {
        const float* w_row = lw.wo_a.row(g * R + r, group_in, row_scratch.data());  // wo_a [G·R, group_in]
        z[t * G * R + g * R + r] = static_cast<float>(cpu::dot(o.data() + t * Hd + g * group_in, w_row, group_in));
      }
  out.assign(b * D, 0.0f);
  cpu::linear(z.data(), b, G * R, lw.wo_b, D, out.data());
}

}  // namespace

DsparkBlock dspark_block(const DsparkWeights& w, const DsparkRings& rings, const float* block_emb, int64_t b,
                         ForwardTrace* trace) {
  const DrafterConfig& c = w.config;
  const ModelConfig& sc = w.stage_cfg;
  const int64_t D = c.hidden_size, n = c.hc_mult;
  if (b < 1) throw Error("dspark: a block needs at least one row");
  // The block's embeddings enter every hc stream.
  std::vector<float> X(b * n * D);
  for (int64_t t = 0; t < b; ++t)
    for (int64_t j = 0; j < n; ++j) std::copy(block_emb + t * D, block_emb + (t + 1) * D, X.begin() + (t * n + j) * D);
  std::vector<float> x, y, post, comb;
  const std::vector<int32_t> no_tokens(b, 0);  // learned routing never reads token ids
  for (int64_t s = 0; s < c.num_layers; ++s) {
    const cpu::LayerWeights& lw = w.stages[s];
    cpu::hc_pre(cpu::exact_arithmetic(), sc, X, b, lw.hc_attn, x, post, comb);
    for (int64_t t = 0; t < b; ++t) cpu::rms_norm(x.data() + t * D, D, lw.attn_norm, c.rms_norm_eps);
    window_attention(w, rings, s, x, b, y);
    cpu::hc_post(sc, X, b, y, post, comb);
    cpu::hc_pre(cpu::exact_arithmetic(), sc, X, b, lw.hc_ffn, x, post, comb);
    for (int64_t t = 0; t < b; ++t) cpu::rms_norm(x.data() + t * D, D, lw.ffn_norm, c.rms_norm_eps);
    ForwardTrace router;
    cpu::moe(cpu::exact_arithmetic(), sc, lw, s, no_tokens, x, y, trace ? &router : nullptr);
    cpu::hc_post(sc, X, b, y, post, comb);
    if (trace) {
      const std::string S = "stage." + std::to_string(s) + ".";
      for (const char* what : {"experts", "margin"}) {
        const std::string from = "router." + std::to_string(s) + "." + what;
        cpu::trace_put(trace, S + "router." + what, router.shapes[from], std::move(router.arrays[from]));
      }
      cpu::trace_put(trace, S + "hidden", {b, n, D}, X);
    }
  }
  // hc head: pre-weighted collapse of the streams (prenorm), then the norm (final).
  DsparkBlock out;
  out.prenorm.resize(b * D);
  std::vector<float> flat(n * D), mix(n);
  for (int64_t t = 0; t < b; ++t) {
    const float* Xt = X.data() + t * n * D;
    std::copy(Xt, Xt + n * D, flat.begin());
    cpu::rms_norm(flat.data(), n * D, nullptr, c.rms_norm_eps);
    for (int64_t j = 0; j < n; ++j) {
      const float mj = static_cast<float>(cpu::dot(flat.data(), w.hc_head.fn + j * n * D, n * D));
      mix[j] = cpu::sigmoid(mj * w.hc_head.scale[0] + w.hc_head.base[j]) + static_cast<float>(c.hc_eps);
    }
    for (int64_t i = 0; i < D; ++i) {
      double acc = 0.0;
      for (int64_t j = 0; j < n; ++j) acc += static_cast<double>(mix[j]) * Xt[j * D + i];
      out.prenorm[t * D + i] = static_cast<float>(acc);
    }
  }
  out.final = out.prenorm;
  for (int64_t t = 0; t < b; ++t) cpu::rms_norm(out.final.data() + t * D, D, w.norm, c.rms_norm_eps);
  return out;
}

}  // namespace memra
