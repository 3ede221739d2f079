// Attention on the CPU: q/kv projections with RoPE, the CSA/HCA compressors, the lightning indexer
// and core attention over window + compressed entries with the sink, then the grouped output.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "engine/cpu_gemm.h"
#include "engine/cpu_layer.h"
#include "engine/cpu_ops.h"
#include "engine/faults.h"
#include "engine/rope.h"
#include "numerics/qat.h"

namespace memra::cpu {

namespace {

// The official code's QAT simulations (numerics/qat.h, Arithmetic::qat): a main kv row or entry
// [d] has its non-RoPE dims FP8-quantised in blocks of 64; an indexer query head or key [di] is
// Hadamard-rotated, then FP4-quantised in blocks of 32. Where d − r is not a multiple of 64 the
// last block is shorter (the official kernels need whole blocks; memra's fixtures are smaller).
void qat_entry(const ModelConfig& cfg, bool indexer, float* v, int64_t n) {
  if (indexer) {
    hadamard_transform(v, n);
    fp4_quant_dequant(v, n, 32);
  } else {
    fp8_quant_dequant(v, n - cfg.qk_rope_head_dim, 64);
  }
}

}  // namespace

void compress_rows(const Arithmetic& ar, const ModelConfig& cfg, const CompressorWeights& cw, CompressorState& cs,
                   const std::vector<float>* inv_freq, int64_t pos0, int64_t T, const std::vector<float>& x,
                   CompressorJournal* journal) {
  const int64_t D = cfg.hidden_size, m = cs.ratio, c = cs.overlap, w = cs.width, cw_n = c * w;
  std::vector<float> kv(T * cw_n), score(T * cw_n);
  ar.linear(x.data(), T, D, cw.wkv, cw_n, kv.data());  // f32 projections (an f32 island)
  ar.linear(x.data(), T, D, cw.wgate, cw_n, score.data());
  std::vector<float> entry(w), p(2 * m);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t pos = pos0 + t, slot = pos % m;
    float* st = score.data() + t * cw_n;  // ape added in place: the row PEND takes
    for (int64_t i = 0; i < cw_n; ++i) st[i] += cw.ape[slot * cw_n + i];
    put_pending_row(cs, pos, kv.data() + t * cw_n, st);
    if (journal) {
      std::copy(kv.begin() + t * cw_n, kv.begin() + (t + 1) * cw_n, journal->kv.begin() + t * cw_n);
      std::copy(st, st + cw_n, journal->score.begin() + t * cw_n);
    }
    // Close window e = (pos+1)/m - 1: softmax over rows, separately per channel (§3.5).
    const int64_t e = closing_entry(cs, pos);
    if (e < 0) continue;
    const bool has_prev = c == 2 && e > 0 && !(T == 1 && MEMRA_FAULT("carry_lost"));
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
    cpu::rms_norm(entry.data(), w, cw.norm, cfg.rms_norm_eps);
    rope_rotate(entry.data(), w, *inv_freq, e * m);
    if (ar.qat) qat_entry(cfg, cw.indexer, entry.data(), w);
    std::copy(entry.begin(), entry.end(), cs.entries.begin() + e * w);
    carry_window(cs);  // CSA: the Ca half of this window feeds the next entry
  }
}

// Top-k of scores with ties broken by the lower index; returns ids in selection order.
std::vector<int64_t> topk_lower_index(const std::vector<float>& scores, int64_t k) {
  std::vector<int64_t> idx(scores.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min<int64_t>(k, static_cast<int64_t>(idx.size()));
  const bool higher = MEMRA_FAULT("tie_higher_index");
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && (a < b) != higher);
  });
  idx.resize(k);
  return idx;
}

SelectionEdge selection_edge(std::vector<float> scores, int64_t k) {
  if (static_cast<int64_t>(scores.size()) <= k || k <= 0)
    return {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()};
  // The k-th largest in place; everything after it is not larger, so the (k+1)-th is their maximum.
  std::nth_element(scores.begin(), scores.begin() + (k - 1), scores.end(), std::greater<float>());
  const float kth = scores[k - 1];
  return {kth, kth - *std::max_element(scores.begin() + k, scores.end())};
}

float selection_scale(const std::vector<float>& scores) {
  float m = 0.0f;
  for (float v : scores) m = std::max(m, std::fabs(v));
  return m;
}

void trace_put(ForwardTrace* trace, const std::string& name, std::vector<int64_t> shape, std::vector<float> values) {
  if (!trace) return;
  trace->shapes[name] = std::move(shape);
  trace->arrays[name] = std::move(values);
}

void attention(const Arithmetic& ar, const ModelConfig& cfg, const LayerWeights& lw, int64_t layer, LayerState& ls,
               int64_t pos0, int64_t T, const std::vector<float>& x, std::vector<float>& out, ForwardTrace* trace,
               LayerJournal* journal) {
  const int64_t D = cfg.hidden_size, H = cfg.num_attention_heads, d = cfg.head_dim, ql = cfg.q_lora_rank;
  const int64_t W = cfg.sliding_window, G = cfg.o_groups, R = cfg.o_lora_rank, Hd = H * d;
  const std::vector<float>& inv = *lw.inv_freq;

  std::vector<float> qr(T * ql), q(T * Hd), kv(T * d);
  ar.linear(x.data(), T, D, lw.wq_a, ql, qr.data());
  for (int64_t t = 0; t < T; ++t) cpu::rms_norm(qr.data() + t * ql, ql, lw.q_norm, cfg.rms_norm_eps);
  ar.linear(qr.data(), T, ql, lw.wq_b, Hd, q.data());
  ar.linear(x.data(), T, D, lw.wkv, d, kv.data());
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      float* qh = q.data() + t * Hd + h * d;
      cpu::rms_norm(qh, d, nullptr, cfg.rms_norm_eps);
      rope_rotate(qh, d, inv, pos0 + t);
    }
    cpu::rms_norm(kv.data() + t * d, d, lw.kv_norm, cfg.rms_norm_eps);
    rope_rotate(kv.data() + t * d, d, inv, pos0 + t);
    if (ar.qat) qat_entry(cfg, false, kv.data() + t * d, d);
  }

  // Compressed entries for every window this chunk closes (query t sees only those with e < (t+1)/m).
  const int64_t m = lw.ratio;
  std::vector<std::vector<int64_t>> selected(T);  // CSA: per query, chosen entry ids (ascending)
  if (lw.kind != LayerKind::kSliding)
    compress_rows(ar, cfg, lw.compressor, ls.compressor, lw.inv_freq, pos0, T, x, journal ? &journal->compressor : nullptr);
  if (lw.kind == LayerKind::kCSA) {
    compress_rows(ar, cfg, lw.indexer, ls.indexer, lw.inv_freq, pos0, T, x, journal ? &journal->indexer : nullptr);
    const int64_t Hi = cfg.index_n_heads, di = cfg.index_head_dim, K = cfg.index_topk;
    std::vector<float> qi(T * Hi * di), wi(T * Hi);
    ar.linear(qr.data(), T, ql, lw.idx_wq_b, Hi * di, qi.data());
    ar.linear(x.data(), T, D, lw.idx_weights, Hi, wi.data());
    const float softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(di)));
    const float weight_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Hi)));
    std::vector<float> sel_trace(T * K, -1.0f), margin_trace(T), scale_trace(T), boundary_trace(T);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t visible = (pos0 + t + 1) / m;
      for (int64_t h = 0; h < Hi; ++h) {
        rope_rotate(qi.data() + (t * Hi + h) * di, di, inv, pos0 + t);
        if (ar.qat) qat_entry(cfg, true, qi.data() + (t * Hi + h) * di, di);
      }
      std::vector<float> scores(visible);
      for (int64_t s = 0; s < visible; ++s) {
        const float* key = ls.indexer.entries.data() + s * di;
        double acc = 0.0;
        for (int64_t h = 0; h < Hi; ++h) {
          const float* qh = qi.data() + (t * Hi + h) * di;
          float dotv = ar.fast ? dot_fast(qh, key, di) : static_cast<float>(cpu::dot(qh, key, di));
          float term = std::max(dotv, 0.0f) * softmax_scale;
          acc += static_cast<double>(term) * static_cast<double>(wi[t * Hi + h] * weight_scale);
        }
        scores[s] = static_cast<float>(acc);
      }
      selected[t] = topk_lower_index(scores, K);
      std::sort(selected[t].begin(), selected[t].end());
      for (size_t i = 0; i < selected[t].size(); ++i) sel_trace[t * K + i] = static_cast<float>(selected[t][i]);
      if (trace) {  // only traces read them: an untraced forward pays no per-row selection
        const SelectionEdge edge = selection_edge(scores, K);
        boundary_trace[t] = edge.boundary;
        margin_trace[t] = edge.margin;
        scale_trace[t] = selection_scale(scores);
      }
    }
    trace_put(trace, "indexer." + std::to_string(layer) + ".selected", {T, K}, std::move(sel_trace));
    trace_put(trace, "indexer." + std::to_string(layer) + ".margin", {T}, std::move(margin_trace));
    trace_put(trace, "indexer." + std::to_string(layer) + ".scale", {T}, std::move(scale_trace));
    trace_put(trace, "indexer." + std::to_string(layer) + ".boundary", {T}, std::move(boundary_trace));
  }

  // Core attention per query: window rows, then compressed entries, one softmax with the sink.
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  std::vector<float> o(T * Hd);
  std::vector<const float*> keys;
  std::vector<float> logit;
  const bool sink_dropped = MEMRA_FAULT("sink_dropped"), inverse_rope = !MEMRA_FAULT("inverse_rope_skipped");
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
        logit[j] = (ar.fast ? dot_fast(qh, keys[j], d) : static_cast<float>(cpu::dot(qh, keys[j], d))) * scale;
        mx = std::max(mx, logit[j]);
      }
      double denom = sink_dropped ? 0.0 : std::exp(lw.sink[h] - mx);
      for (int64_t j = 0; j < n_keys; ++j) {
        logit[j] = std::exp(logit[j] - mx);
        denom += logit[j];
      }
      float* oh = o.data() + t * Hd + h * d;
      if (ar.fast) {  // f32 accumulation over keys
        std::fill(oh, oh + d, 0.0f);
        for (int64_t j = 0; j < n_keys; ++j) {
          const float p = logit[j] / static_cast<float>(denom);
          for (int64_t i = 0; i < d; ++i) oh[i] += p * keys[j][i];
        }
      } else {
        for (int64_t i = 0; i < d; ++i) {
          double acc = 0.0;
          for (int64_t j = 0; j < n_keys; ++j)
            acc += static_cast<double>(logit[j] / static_cast<float>(denom)) * keys[j][i];
          oh[i] = static_cast<float>(acc);
        }
      }
      if (inverse_rope) rope_rotate(oh, d, inv, pos, -1.0f);  // undo the rotation V picked up (K = V)
    }
  }
  // The window ring takes this chunk's rows only after every query has read the old ones.
  for (int64_t t = std::max<int64_t>(0, T - W); t < T; ++t)
    std::copy(kv.begin() + t * d, kv.begin() + (t + 1) * d, ls.window.begin() + ((pos0 + t) % W) * d);
  if (journal) std::copy(kv.begin(), kv.end(), journal->window.begin());

  // Grouped output projection: z_g = O_g @ wo_a[g]^T, out = z @ wo_b^T.
  const int64_t group_in = Hd / G;
  std::vector<float> z(T * G * R), og(T * group_in), zg(T * R);
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t t = 0; t < T; ++t)
      std::copy(o.begin() + t * Hd + g * group_in, o.begin() + t * Hd + (g + 1) * group_in, og.begin() + t * group_in);
    ar.linear(og.data(), T, group_in, lw.wo_a.rows_from(g * R, group_in), R, zg.data());
    for (int64_t t = 0; t < T; ++t) std::copy(zg.begin() + t * R, zg.begin() + (t + 1) * R, z.begin() + t * G * R + g * R);
  }
  out.assign(T * D, 0.0f);
  ar.linear(z.data(), T, G * R, lw.wo_b, D, out.data());
}

}  // namespace memra::cpu
