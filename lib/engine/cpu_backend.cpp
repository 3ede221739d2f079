// The CPU reference backend: DeepSeek-V4 exactly as docs/architecture (../shared/reference/
// dsv4-architecture.md §3–§5) and transformers 5.17 compute it, in f32 storage with double
// accumulation. Plain loops, one row at a time: a position's result never depends on how the
// tokens were split into calls (chunk widths 1…capacity give bit-identical logits and state).
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
#include "engine/cpu_ops.h"
#include "engine/engine.h"
#include "engine/rope.h"

namespace memra {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct HcWeights {
  const float* fn;     // [(2+n)n, nD]
  const float* base;   // [(2+n)n]
  const float* scale;  // [3]
};

struct CompressorWeights {
  const float* wkv = nullptr;    // [c·w, D]
  const float* wgate = nullptr;  // [c·w, D]
  const float* ape = nullptr;    // [m, c·w]
  const float* norm = nullptr;   // [w]
};

struct LayerWeights {
  LayerKind kind;
  int64_t ratio;  // m (0 for sliding)
  const std::vector<float>* inv_freq;
  HcWeights hc_attn, hc_ffn;
  const float* attn_norm;  // [D]
  const float* ffn_norm;   // [D]
  const float* wq_a;       // [q_l, D]
  const float* q_norm;     // [q_l]
  const float* wq_b;       // [H·d, q_l]
  const float* wkv;        // [d, D]
  const float* kv_norm;    // [d]
  const float* sink;       // [H]
  const float* wo_a;       // [G·R, H·d/G]
  const float* wo_b;       // [D, G·R]
  CompressorWeights compressor;  // CSA/HCA
  CompressorWeights indexer;     // CSA
  const float* idx_wq_b = nullptr;     // [Hi·di, q_l]
  const float* idx_weights = nullptr;  // [Hi, D]
  MlpKind mlp;
  const float* gate;                 // [E, D]
  const float* gate_bias = nullptr;  // [E] (learned)
  const int64_t* tid2eid = nullptr;  // [V, k] (hash)
  std::vector<const float*> w1, w2, w3;  // per expert: [I, D], [D, I], [I, D]
  const float* shared_w1;
  const float* shared_w2;
  const float* shared_w3;
};

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

  void forward(DecodeState& state, std::span<const int32_t> tokens, float* logits,
               ForwardTrace* trace) const override;

 private:
  LayerWeights bind_layer(int64_t l) const;
  // mHC: collapses the n streams of X [T,n,D] into x [T,D]; writes post [T,n] and comb [T,n,n].
  void hc_pre(const std::vector<float>& X, int64_t T, const HcWeights& w, std::vector<float>& x,
              std::vector<float>& post, std::vector<float>& comb) const;
  // X'[t,k,:] = post[t,k]·y[t,:] + Σ_j comb[t,j,k]·X[t,j,:]
  void hc_post(std::vector<float>& X, int64_t T, const std::vector<float>& y, const std::vector<float>& post,
               const std::vector<float>& comb) const;
  void attention(const LayerWeights& lw, int64_t layer, LayerState& ls, int64_t pos0, int64_t T,
                 const std::vector<float>& x, std::vector<float>& out, ForwardTrace* trace) const;
  // Projects rows into the open window, closing entries at window ends (appended to cs.entries).
  void compress_rows(const CompressorWeights& cw, CompressorState& cs, const std::vector<float>* inv_freq,
                     int64_t pos0, int64_t T, const std::vector<float>& x) const;
  void moe(const LayerWeights& lw, int64_t layer, std::span<const int32_t> tokens, const std::vector<float>& x,
           std::vector<float>& out, ForwardTrace* trace) const;
  void expert(const float* x, const float* w1, const float* w2, const float* w3, float* y) const;

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
  w.inv_freq = w.kind == LayerKind::kSliding ? &inv_main_ : &inv_compress_;
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

void CpuBackend::hc_pre(const std::vector<float>& X, int64_t T, const HcWeights& w, std::vector<float>& x,
                        std::vector<float>& post, std::vector<float>& comb) const {
  const int64_t n = cfg_.hc_mult, D = cfg_.hidden_size, nD = n * D, mix_n = (2 + n) * n;
  const float eps = static_cast<float>(cfg_.hc_eps);
  x.assign(T * D, 0.0f);
  post.assign(T * n, 0.0f);
  comb.assign(T * n * n, 0.0f);
  std::vector<float> flat(nD), mix(mix_n), pre(n);
  for (int64_t t = 0; t < T; ++t) {
    const float* Xt = X.data() + t * nD;
    std::copy(Xt, Xt + nD, flat.begin());
    cpu::rms_norm(flat.data(), nD, nullptr, cfg_.rms_norm_eps);
    for (int64_t i = 0; i < mix_n; ++i) mix[i] = static_cast<float>(cpu::dot(flat.data(), w.fn + i * nD, nD));
    for (int64_t j = 0; j < n; ++j) {
      pre[j] = cpu::sigmoid(mix[j] * w.scale[0] + w.base[j]) + eps;
      post[t * n + j] = 2.0f * cpu::sigmoid(mix[n + j] * w.scale[1] + w.base[n + j]);
    }
    float* C = comb.data() + t * n * n;  // [j][k]
    for (int64_t j = 0; j < n; ++j) {
      float* row = C + j * n;
      float mx = kNegInf;
      for (int64_t k = 0; k < n; ++k) {
        row[k] = mix[2 * n + j * n + k] * w.scale[2] + w.base[2 * n + j * n + k];
        mx = std::max(mx, row[k]);
      }
      double s = 0.0;
      for (int64_t k = 0; k < n; ++k) {
        row[k] = std::exp(row[k] - mx);
        s += row[k];
      }
      for (int64_t k = 0; k < n; ++k) row[k] = row[k] / static_cast<float>(s) + eps;
    }
    auto normalize_columns = [&] {
      for (int64_t k = 0; k < n; ++k) {
        double s = 0.0;
        for (int64_t j = 0; j < n; ++j) s += C[j * n + k];
        const float div = static_cast<float>(s) + eps;
        for (int64_t j = 0; j < n; ++j) C[j * n + k] /= div;
      }
    };
    auto normalize_rows = [&] {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int64_t k = 0; k < n; ++k) s += C[j * n + k];
        const float div = static_cast<float>(s) + eps;
        for (int64_t k = 0; k < n; ++k) C[j * n + k] /= div;
      }
    };
    normalize_columns();
    for (int64_t it = 0; it + 1 < cfg_.hc_sinkhorn_iters; ++it) {
      normalize_rows();
      normalize_columns();
    }
    float* xt = x.data() + t * D;
    for (int64_t i = 0; i < D; ++i) {
      double s = 0.0;
      for (int64_t j = 0; j < n; ++j) s += static_cast<double>(pre[j]) * Xt[j * D + i];
      xt[i] = static_cast<float>(s);
    }
  }
}

void CpuBackend::hc_post(std::vector<float>& X, int64_t T, const std::vector<float>& y, const std::vector<float>& post,
                         const std::vector<float>& comb) const {
  const int64_t n = cfg_.hc_mult, D = cfg_.hidden_size;
  std::vector<float> out(n * D);
  for (int64_t t = 0; t < T; ++t) {
    float* Xt = X.data() + t * n * D;
    const float* C = comb.data() + t * n * n;
    const float* yt = y.data() + t * D;
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t i = 0; i < D; ++i) {
        double s = 0.0;
        for (int64_t j = 0; j < n; ++j) s += static_cast<double>(C[j * n + k]) * Xt[j * D + i];
        out[k * D + i] = post[t * n + k] * yt[i] + static_cast<float>(s);
      }
    }
    std::copy(out.begin(), out.end(), Xt);
  }
}

void CpuBackend::compress_rows(const CompressorWeights& cw, CompressorState& cs, const std::vector<float>* inv_freq,
                               int64_t pos0, int64_t T, const std::vector<float>& x) const {
  const int64_t D = cfg_.hidden_size, m = cs.ratio, c = cs.overlap, w = cs.width, cw_n = c * w;
  std::vector<float> kv(T * cw_n), score(T * cw_n);
  cpu::linear(x.data(), T, D, cw.wkv, cw_n, kv.data());
  cpu::linear(x.data(), T, D, cw.wgate, cw_n, score.data());
  std::vector<float> entry(w), p(2 * m);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t pos = pos0 + t, slot = pos % m;
    float* pk = cs.pend_kv.data() + slot * cw_n;
    float* ps = cs.pend_score.data() + slot * cw_n;
    for (int64_t i = 0; i < cw_n; ++i) {
      pk[i] = kv[t * cw_n + i];
      ps[i] = score[t * cw_n + i] + cw.ape[slot * cw_n + i];
    }
    if ((pos + 1) % m != 0) continue;
    // Close window e = (pos+1)/m - 1: softmax over rows, separately per channel (§3.5).
    const int64_t e = (pos + 1) / m - 1;
    const bool has_prev = c == 2 && e > 0;
    for (int64_t ch = 0; ch < w; ++ch) {
      // rows: [prev Ca rows (CSA)] + [current rows, Cb half for CSA]
      const int64_t rows = c * m;
      auto row_kv = [&](int64_t j) -> float {
        if (c == 2 && j < m) return has_prev ? cs.prev_kv[j * w + ch] : 0.0f;
        const int64_t r = c == 2 ? j - m : j;
        return cs.pend_kv[r * cw_n + (c == 2 ? w : 0) + ch];
      };
      auto row_score = [&](int64_t j) -> float {
        if (c == 2 && j < m) return has_prev ? cs.prev_score[j * w + ch] : kNegInf;
        const int64_t r = c == 2 ? j - m : j;
        return cs.pend_score[r * cw_n + (c == 2 ? w : 0) + ch];
      };
      float mx = kNegInf;
      for (int64_t j = 0; j < rows; ++j) mx = std::max(mx, row_score(j));
      double s = 0.0;
      for (int64_t j = 0; j < rows; ++j) {
        p[j] = std::exp(row_score(j) - mx);
        s += p[j];
      }
      double acc = 0.0;
      for (int64_t j = 0; j < rows; ++j) acc += static_cast<double>(row_kv(j)) * (p[j] / static_cast<float>(s));
      entry[ch] = static_cast<float>(acc);
    }
    cpu::rms_norm(entry.data(), w, cw.norm, cfg_.rms_norm_eps);
    rope_rotate(entry.data(), w, *inv_freq, e * m);
    std::copy(entry.begin(), entry.end(), cs.entries.begin() + e * w);
    if (c == 2) {  // the Ca half of this window feeds the next entry
      for (int64_t j = 0; j < m; ++j)
        for (int64_t ch = 0; ch < w; ++ch) {
          cs.prev_kv[j * w + ch] = cs.pend_kv[j * cw_n + ch];
          cs.prev_score[j * w + ch] = cs.pend_score[j * cw_n + ch];
        }
    }
  }
}

// Top-k of scores with ties broken by the lower index; returns ids in selection order.
std::vector<int64_t> topk_lower_index(const std::vector<float>& scores, int64_t k) {
  std::vector<int64_t> idx(scores.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min<int64_t>(k, static_cast<int64_t>(idx.size()));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  });
  idx.resize(k);
  return idx;
}

// k-th largest minus (k+1)-th largest (inf when there is no (k+1)-th).
float selection_margin(std::vector<float> scores, int64_t k) {
  if (static_cast<int64_t>(scores.size()) <= k || k <= 0) return std::numeric_limits<float>::infinity();
  std::sort(scores.begin(), scores.end(), std::greater<float>());
  return scores[k - 1] - scores[k];
}

void trace_put(ForwardTrace* trace, const std::string& name, std::vector<int64_t> shape, std::vector<float> values) {
  if (!trace) return;
  trace->shapes[name] = std::move(shape);
  trace->arrays[name] = std::move(values);
}

void CpuBackend::attention(const LayerWeights& lw, int64_t layer, LayerState& ls, int64_t pos0, int64_t T,
                           const std::vector<float>& x, std::vector<float>& out, ForwardTrace* trace) const {
  const int64_t D = cfg_.hidden_size, H = cfg_.num_attention_heads, d = cfg_.head_dim, ql = cfg_.q_lora_rank;
  const int64_t W = cfg_.sliding_window, G = cfg_.o_groups, R = cfg_.o_lora_rank, Hd = H * d;
  const std::vector<float>& inv = *lw.inv_freq;

  std::vector<float> qr(T * ql), q(T * Hd), kv(T * d);
  cpu::linear(x.data(), T, D, lw.wq_a, ql, qr.data());
  for (int64_t t = 0; t < T; ++t) cpu::rms_norm(qr.data() + t * ql, ql, lw.q_norm, cfg_.rms_norm_eps);
  cpu::linear(qr.data(), T, ql, lw.wq_b, Hd, q.data());
  cpu::linear(x.data(), T, D, lw.wkv, d, kv.data());
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      float* qh = q.data() + t * Hd + h * d;
      cpu::rms_norm(qh, d, nullptr, cfg_.rms_norm_eps);
      rope_rotate(qh, d, inv, pos0 + t);
    }
    cpu::rms_norm(kv.data() + t * d, d, lw.kv_norm, cfg_.rms_norm_eps);
    rope_rotate(kv.data() + t * d, d, inv, pos0 + t);
  }

  // Compressed entries for every window this chunk closes (query t sees only those with e < (t+1)/m).
  const int64_t m = lw.ratio;
  std::vector<std::vector<int64_t>> selected(T);  // CSA: per query, chosen entry ids (ascending)
  if (lw.kind != LayerKind::kSliding) compress_rows(lw.compressor, ls.compressor, lw.inv_freq, pos0, T, x);
  if (lw.kind == LayerKind::kCSA) {
    compress_rows(lw.indexer, ls.indexer, lw.inv_freq, pos0, T, x);
    const int64_t Hi = cfg_.index_n_heads, di = cfg_.index_head_dim, K = cfg_.index_topk;
    std::vector<float> qi(T * Hi * di), wi(T * Hi);
    cpu::linear(qr.data(), T, ql, lw.idx_wq_b, Hi * di, qi.data());
    cpu::linear(x.data(), T, D, lw.idx_weights, Hi, wi.data());
    const float softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(di)));
    const float weight_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Hi)));
    std::vector<float> sel_trace(T * K, -1.0f), margin_trace(T);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t visible = (pos0 + t + 1) / m;
      for (int64_t h = 0; h < Hi; ++h) rope_rotate(qi.data() + (t * Hi + h) * di, di, inv, pos0 + t);
      std::vector<float> scores(visible);
      for (int64_t s = 0; s < visible; ++s) {
        const float* key = ls.indexer.entries.data() + s * di;
        double acc = 0.0;
        for (int64_t h = 0; h < Hi; ++h) {
          float dotv = static_cast<float>(cpu::dot(qi.data() + (t * Hi + h) * di, key, di));
          float term = std::max(dotv, 0.0f) * softmax_scale;
          acc += static_cast<double>(term) * static_cast<double>(wi[t * Hi + h] * weight_scale);
        }
        scores[s] = static_cast<float>(acc);
      }
      selected[t] = topk_lower_index(scores, K);
      std::sort(selected[t].begin(), selected[t].end());
      for (size_t i = 0; i < selected[t].size(); ++i) sel_trace[t * K + i] = static_cast<float>(selected[t][i]);
      margin_trace[t] = selection_margin(scores, K);
    }
    trace_put(trace, "indexer." + std::to_string(layer) + ".selected", {T, K}, std::move(sel_trace));
    trace_put(trace, "indexer." + std::to_string(layer) + ".margin", {T}, std::move(margin_trace));
  }

  // Core attention per query: window rows, then compressed entries, one softmax with the sink.
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  std::vector<float> o(T * Hd);
  std::vector<const float*> keys;
  std::vector<float> logit;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t pos = pos0 + t;
    keys.clear();
    for (int64_t p = std::max<int64_t>(0, pos - W + 1); p <= pos; ++p)
      keys.push_back(p >= pos0 ? kv.data() + (p - pos0) * d : ls.window.data() + (p % W) * d);
    if (lw.kind == LayerKind::kHCA) {
      for (int64_t e = 0; e < (pos + 1) / m; ++e) keys.push_back(ls.compressor.entries.data() + e * d);
    } else if (lw.kind == LayerKind::kCSA) {
      for (int64_t e : selected[t]) keys.push_back(ls.compressor.entries.data() + e * d);
    }
    const int64_t n_keys = static_cast<int64_t>(keys.size());
    logit.resize(n_keys);
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
      rope_rotate(oh, d, inv, pos, -1.0f);  // undo the rotation V picked up (K = V)
    }
  }
  // The window ring takes this chunk's rows only after every query has read the old ones.
  for (int64_t t = std::max<int64_t>(0, T - W); t < T; ++t)
    std::copy(kv.begin() + t * d, kv.begin() + (t + 1) * d, ls.window.begin() + ((pos0 + t) % W) * d);

  // Grouped output projection: z_g = O_g @ wo_a[g]^T, out = z @ wo_b^T.
  const int64_t group_in = Hd / G;
  std::vector<float> z(T * G * R);
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t r = 0; r < R; ++r)
        z[t * G * R + g * R + r] =
            static_cast<float>(cpu::dot(o.data() + t * Hd + g * group_in, lw.wo_a + (g * R + r) * group_in, group_in));
  }
  out.assign(T * D, 0.0f);
  cpu::linear(z.data(), T, G * R, lw.wo_b, D, out.data());
}

void CpuBackend::expert(const float* x, const float* w1, const float* w2, const float* w3, float* y) const {
  const int64_t D = cfg_.hidden_size, I = cfg_.moe_intermediate_size;
  const float limit = static_cast<float>(cfg_.swiglu_limit);
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

void CpuBackend::moe(const LayerWeights& lw, int64_t layer, std::span<const int32_t> tokens, const std::vector<float>& x,
                     std::vector<float>& out, ForwardTrace* trace) const {
  const int64_t T = static_cast<int64_t>(tokens.size()), D = cfg_.hidden_size, E = cfg_.n_routed_experts;
  const int64_t k = cfg_.num_experts_per_tok;
  std::vector<float> logits(T * E);
  cpu::linear(x.data(), T, D, lw.gate, E, logits.data());
  std::vector<float> experts_trace(T * k), margin_trace(T, std::numeric_limits<float>::infinity());
  std::vector<float> routed(D), eo(D), shared(D);
  out.assign(T * D, 0.0f);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> score(E);
    const float* lt = logits.data() + t * E;
    if (cfg_.scoring_func == "sigmoid") {
      for (int64_t e = 0; e < E; ++e) score[e] = cpu::sigmoid(lt[e]);
    } else if (cfg_.scoring_func == "softmax") {
      float mx = *std::max_element(lt, lt + E);
      double s = 0.0;
      for (int64_t e = 0; e < E; ++e) s += (score[e] = std::exp(lt[e] - mx));
      for (int64_t e = 0; e < E; ++e) score[e] /= static_cast<float>(s);
    } else {  // sqrtsoftplus
      for (int64_t e = 0; e < E; ++e) score[e] = std::sqrt(cpu::softplus(lt[e]));
    }
    std::vector<int64_t> idx;
    if (lw.mlp == MlpKind::kHash) {
      const int64_t* row = lw.tid2eid + static_cast<int64_t>(tokens[t]) * k;
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
    for (int64_t i = 0; i < k; ++i) wts[i] = wts[i] / (wsum + 1e-20f) * static_cast<float>(cfg_.routed_scaling_factor);
    // Experts contribute in ascending id order (transformers' index_add_ loop), f32 adds.
    std::vector<int64_t> order(k);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return idx[a] < idx[b]; });
    std::fill(routed.begin(), routed.end(), 0.0f);
    const float* xt = x.data() + t * D;
    for (int64_t i : order) {
      const int64_t e = idx[i];
      expert(xt, lw.w1[e], lw.w2[e], lw.w3[e], eo.data());
      for (int64_t o = 0; o < D; ++o) routed[o] += eo[o] * wts[i];
    }
    expert(xt, lw.shared_w1, lw.shared_w2, lw.shared_w3, shared.data());
    for (int64_t o = 0; o < D; ++o) out[t * D + o] = routed[o] + shared[o];
    std::vector<int64_t> sorted_idx = idx;
    std::sort(sorted_idx.begin(), sorted_idx.end());
    for (int64_t i = 0; i < k; ++i) experts_trace[t * k + i] = static_cast<float>(sorted_idx[i]);
  }
  trace_put(trace, "router." + std::to_string(layer) + ".experts", {T, k}, std::move(experts_trace));
  if (lw.mlp == MlpKind::kLearned)
    trace_put(trace, "router." + std::to_string(layer) + ".margin", {T}, std::move(margin_trace));
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
    hc_pre(X, T, lw.hc_attn, x, post, comb);
    for (int64_t t = 0; t < T; ++t) cpu::rms_norm(x.data() + t * D, D, lw.attn_norm, cfg_.rms_norm_eps);
    attention(lw, l, state.layers[l], pos0, T, x, y, trace);
    hc_post(X, T, y, post, comb);
    hc_pre(X, T, lw.hc_ffn, x, post, comb);
    for (int64_t t = 0; t < T; ++t) cpu::rms_norm(x.data() + t * D, D, lw.ffn_norm, cfg_.rms_norm_eps);
    moe(lw, l, tokens, x, y, trace);
    hc_post(X, T, y, post, comb);
    if (trace) trace_put(trace, "hidden." + std::to_string(l), {T, n, D}, X);
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
