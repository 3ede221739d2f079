// DFlash-family drafter on the CPU (see dflash_forward.h).
#include "drafter/dflash_forward.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "engine/cpu_layer.h"
#include "engine/cpu_ops.h"
#include "engine/rope.h"

namespace memra {

namespace {

// Rotate-half RoPE over the full head (Qwen3): pairs (i, i + hd/2) rotate by inv_freq[i]·position.
void rope_half(float* x, int64_t hd, const std::vector<float>& inv_freq, int64_t position) {
  const int64_t half = hd / 2;
  const float pos = static_cast<float>(position);
  for (int64_t i = 0; i < half; ++i) {
    const float angle = inv_freq[i] * pos;  // f32 product, as inv_freq @ position_ids
    const float c = std::cos(angle), s = std::sin(angle);
    const float a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = b * c + a * s;
  }
}

// K and V rows [T, KVH·hd] of layer l for inputs x [T, D] at positions pos0..
void project_kv(const DflashWeights& w, const DflashWeights::Layer& lw, const float* x, int64_t T, int64_t pos0,
                float* k, float* v) {
  const DrafterConfig& c = w.config;
  const int64_t D = c.hidden_size, hd = c.head_dim, KVH = c.num_key_value_heads;
  cpu::linear(x, T, D, lw.wk, KVH * hd, k);
  cpu::linear(x, T, D, lw.wv, KVH * hd, v);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < KVH; ++h) {
      float* kh = k + (t * KVH + h) * hd;
      cpu::rms_norm(kh, hd, lw.k_norm, c.rms_norm_eps);
      rope_half(kh, hd, w.inv_freq, pos0 + t);
    }
}

}  // namespace

DflashWeights::DflashWeights(const DrafterWeights& weights) : config(weights.config()) {
  const DrafterConfig& c = config;
  if (c.family != DrafterFamily::kDflash) throw Error("DflashWeights: the drafter is not a DFlash-family drafter");
  RopeParams rope;
  rope.theta = c.rope_theta;
  inv_freq = rope_inv_freq(rope, c.head_dim);
  fc = weights.f32("fc.weight");
  hidden_norm = weights.f32("hidden_norm.weight");
  norm = weights.f32("norm.weight");
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    auto f = [&](const std::string& n) { return weights.f32(p + n); };
    layers.push_back({f("input_layernorm.weight"), f("post_attention_layernorm.weight"), f("self_attn.q_proj.weight"),
                      f("self_attn.k_proj.weight"), f("self_attn.v_proj.weight"), f("self_attn.o_proj.weight"),
                      f("self_attn.q_norm.weight"), f("self_attn.k_norm.weight"), f("mlp.gate_proj.weight"),
                      f("mlp.up_proj.weight"), f("mlp.down_proj.weight")});
  }
}

DflashContext make_dflash_context(const DrafterConfig& c) {
  DflashContext ctx;
  ctx.k.resize(c.num_layers);
  ctx.v.resize(c.num_layers);
  return ctx;
}

void dflash_ctx_features(const DflashWeights& w, const float* taps, int64_t T, float* ctx) {
  const int64_t D = w.config.hidden_size;
  cpu::linear(taps, T, w.config.n_taps() * D, w.fc, D, ctx);
  for (int64_t t = 0; t < T; ++t) cpu::rms_norm(ctx + t * D, D, w.hidden_norm, w.config.rms_norm_eps);
}

void dflash_context_append(const DflashWeights& w, DflashContext& context, const float* ctx, int64_t T) {
  const int64_t row = w.config.num_key_value_heads * w.config.head_dim;
  std::vector<float> k(T * row), v(T * row);
  for (int64_t l = 0; l < w.config.num_layers; ++l) {
    project_kv(w, w.layers[l], ctx, T, context.pos, k.data(), v.data());
    context.k[l].insert(context.k[l].end(), k.begin(), k.end());
    context.v[l].insert(context.v[l].end(), v.begin(), v.end());
  }
  context.pos += T;
}

void dflash_context_truncate(const DrafterConfig& c, DflashContext& context, int64_t pos) {
  if (pos < 0 || pos > context.pos) throw Error("dflash: cannot truncate the context to " + std::to_string(pos));
  const int64_t row = c.num_key_value_heads * c.head_dim;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    context.k[l].resize(pos * row);
    context.v[l].resize(pos * row);
  }
  context.pos = pos;
}

DflashBlock dflash_block(const DflashWeights& w, const DflashContext& context, const float* block_emb, int64_t b,
                         ForwardTrace* trace) {
  const DrafterConfig& c = w.config;
  const int64_t D = c.hidden_size, H = c.num_attention_heads, KVH = c.num_key_value_heads, hd = c.head_dim;
  const int64_t I = c.intermediate_size, row = KVH * hd, group = H / KVH, P = context.pos;
  if (b < 1) throw Error("dflash: a block needs at least one row");
  std::vector<float> x(block_emb, block_emb + b * D), h(b * D), q(b * H * hd), kb(b * row), vb(b * row);
  std::vector<float> o(b * H * hd), y(b * D), g(b * I), u(b * I);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  std::vector<float> logit(P + b);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const DflashWeights::Layer& lw = w.layers[l];
    h = x;
    for (int64_t t = 0; t < b; ++t) cpu::rms_norm(h.data() + t * D, D, lw.input_norm, c.rms_norm_eps);
    cpu::linear(h.data(), b, D, lw.wq, H * hd, q.data());
    for (int64_t t = 0; t < b; ++t)
      for (int64_t hh = 0; hh < H; ++hh) {
        float* qh = q.data() + (t * H + hh) * hd;
        cpu::rms_norm(qh, hd, lw.q_norm, c.rms_norm_eps);
        rope_half(qh, hd, w.inv_freq, P + t);
      }
    project_kv(w, lw, h.data(), b, P, kb.data(), vb.data());
    const bool causal = c.layer_causal[l];
    const int64_t W = c.layer_sliding[l] && c.sliding_window ? *c.sliding_window : 0;
    const std::vector<float>& kc = context.k[l];
    const std::vector<float>& vc = context.v[l];
    for (int64_t t = 0; t < b; ++t) {
      const int64_t qp = P + t;
      auto visible = [&](int64_t kp) {
        if (causal && kp > qp) return false;
        if (W > 0 && (qp - kp >= W || (!causal && kp - qp >= W))) return false;
        return true;
      };
      for (int64_t hh = 0; hh < H; ++hh) {
        const int64_t kvh = hh / group;
        const float* qh = q.data() + (t * H + hh) * hd;
        auto key = [&](int64_t j) { return j < P ? kc.data() + j * row + kvh * hd : kb.data() + (j - P) * row + kvh * hd; };
        auto val = [&](int64_t j) { return j < P ? vc.data() + j * row + kvh * hd : vb.data() + (j - P) * row + kvh * hd; };
        float mx = cpu::kNegInf;
        for (int64_t j = 0; j < P + b; ++j) {
          logit[j] = visible(j) ? static_cast<float>(cpu::dot(qh, key(j), hd)) * scale : cpu::kNegInf;
          mx = std::max(mx, logit[j]);
        }
        double denom = 0.0;
        for (int64_t j = 0; j < P + b; ++j) {
          logit[j] = visible(j) ? std::exp(logit[j] - mx) : 0.0f;
          denom += logit[j];
        }
        float* oh = o.data() + (t * H + hh) * hd;
        for (int64_t i = 0; i < hd; ++i) {
          double acc = 0.0;
          for (int64_t j = 0; j < P + b; ++j)
            if (logit[j] != 0.0f) acc += static_cast<double>(logit[j] / static_cast<float>(denom)) * val(j)[i];
          oh[i] = static_cast<float>(acc);
        }
      }
    }
    cpu::linear(o.data(), b, H * hd, lw.wo, D, y.data());
    for (int64_t i = 0; i < b * D; ++i) x[i] += y[i];
    h = x;
    for (int64_t t = 0; t < b; ++t) cpu::rms_norm(h.data() + t * D, D, lw.post_norm, c.rms_norm_eps);
    cpu::linear(h.data(), b, D, lw.gate, I, g.data());
    cpu::linear(h.data(), b, D, lw.up, I, u.data());
    for (int64_t i = 0; i < b * I; ++i) g[i] = cpu::silu(g[i]) * u[i];
    cpu::linear(g.data(), b, I, lw.down, D, y.data());
    for (int64_t i = 0; i < b * D; ++i) x[i] += y[i];
    if (trace) cpu::trace_put(trace, "layer." + std::to_string(l) + ".hidden", {b, D}, x);
  }
  DflashBlock out{x, x};
  for (int64_t t = 0; t < b; ++t) cpu::rms_norm(out.final.data() + t * D, D, w.norm, c.rms_norm_eps);
  return out;
}

}  // namespace memra
