// The layer loop both CPU realizations share (cpu_layer.h forward_batch): every row of every
// sequence goes through each row-wise op together (mHC, norms, MoE, the head); attention runs per
// sequence on its own state. A row's result never depends on its neighbours, so on the exact
// arithmetic a batch gives each sequence exactly the bits it gets alone.
//
// Shape letters: R rows of the batch (all sequences' tokens), T one sequence's tokens, D hidden,
// n hc_mult, V vocab.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/cpu_layer.h"
#include "engine/cpu_ops.h"

namespace memra::cpu {

void forward_batch(const Arithmetic& ar, const ModelConfig& cfg, const ModelWeights& w, std::span<const SequenceStep> batch,
                   const std::vector<DecodeState*>& states, const std::vector<TrunkJournal*>& journals) {
  const int64_t D = cfg.hidden_size, n = cfg.hc_mult, V = cfg.vocab_size;
  // The journal of sequence b when its step asks for one, started at its first position.
  auto journal_of = [&](size_t b) -> TrunkJournal* {
    return b < journals.size() && batch[b].journal ? journals[b] : nullptr;
  };
  for (size_t b = 0; b < batch.size(); ++b)
    if (TrunkJournal* j = journal_of(b)) j->start(cfg, states[b]->pos, static_cast<int64_t>(batch[b].tokens.size()));
  std::vector<int64_t> row0;  // first row of each sequence in the concatenated rows
  std::vector<int32_t> tokens;
  for (const auto& s : batch) {
    row0.push_back(static_cast<int64_t>(tokens.size()));
    tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
  }
  const int64_t R = static_cast<int64_t>(tokens.size());
  if (R == 0) return;
  ForwardTrace* trace = batch.size() == 1 ? batch[0].trace : nullptr;

  std::vector<float> X(R * n * D), erow(D);  // [R, n, D]; erow [D]: a decoded embedding row
  for (int64_t t = 0; t < R; ++t) {
    const float* e = w.embed.row(tokens[t], D, erow.data());
    for (int64_t j = 0; j < n; ++j) std::copy(e, e + D, X.begin() + (t * n + j) * D);
  }

  std::vector<float> x, post, comb, y(R * D), xs, ys;
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
    const LayerWeights& lw = w.layers[l];
    hc_pre(ar, cfg, X, R, lw.hc_attn, x, post, comb);
    for (int64_t t = 0; t < R; ++t) rms_norm(x.data() + t * D, D, lw.attn_norm, cfg.rms_norm_eps);
    for (size_t b = 0; b < batch.size(); ++b) {  // attention reads and advances each sequence's own state
      const int64_t T = static_cast<int64_t>(batch[b].tokens.size());
      if (T == 0) continue;
      DecodeState& st = *states[b];
      xs.assign(x.begin() + row0[b] * D, x.begin() + (row0[b] + T) * D);
      TrunkJournal* j = journal_of(b);
      attention(ar, cfg, lw, l, st.layers[l], st.pos, T, xs, ys, trace, j ? &j->layers[l] : nullptr);
      std::copy(ys.begin(), ys.end(), y.begin() + row0[b] * D);
    }
    hc_post(cfg, X, R, y, post, comb);
    hc_pre(ar, cfg, X, R, lw.hc_ffn, x, post, comb);
    for (int64_t t = 0; t < R; ++t) rms_norm(x.data() + t * D, D, lw.ffn_norm, cfg.rms_norm_eps);
    moe(ar, cfg, lw, l, tokens, x, y, trace);
    hc_post(cfg, X, R, y, post, comb);
    if (trace) trace_put(trace, "hidden." + std::to_string(l), {R, n, D}, X);
  }

  // hc head, final norm and LM head (f32 logits) for the rows whose logits are wanted: all rows of
  // a sequence with a logits buffer or a journal, else its last row only.
  auto all_rows = [&](size_t b) { return batch[b].logits || journal_of(b); };
  std::vector<int64_t> rows;
  for (size_t b = 0; b < batch.size(); ++b) {
    const int64_t T = static_cast<int64_t>(batch[b].tokens.size());
    for (int64_t t = all_rows(b) ? 0 : T - 1; t < T; ++t) rows.push_back(row0[b] + t);
  }
  std::vector<float> h(rows.size() * D), out(rows.size() * V);
  for (size_t i = 0; i < rows.size(); ++i) hc_head(cfg, w, X.data() + rows[i] * n * D, h.data() + i * D);
  ar.linear(h.data(), static_cast<int64_t>(rows.size()), D, w.head, V, out.data());

  size_t i = 0;
  for (size_t b = 0; b < batch.size(); ++b) {
    const SequenceStep& s = batch[b];
    const int64_t T = static_cast<int64_t>(s.tokens.size());
    if (T == 0) continue;
    const int64_t n_rows = all_rows(b) ? T : 1;
    if (s.logits) std::copy(out.begin() + i * V, out.begin() + (i + n_rows) * V, s.logits);
    if (TrunkJournal* j = journal_of(b)) std::copy(out.begin() + i * V, out.begin() + (i + n_rows) * V, j->logits.begin());
    DecodeState& st = *states[b];
    st.last_logits.assign(out.begin() + (i + n_rows - 1) * V, out.begin() + (i + n_rows) * V);
    st.pos += T;
    i += n_rows;
  }
}

}  // namespace memra::cpu
