// The DFlash-family drafter's math on the CPU (z-lab DFlashDraftModel; the oracle is the `dflash`
// package, tools/oracle/dflash_oracle.py), on plain host arrays:
//   ctx = hidden_norm(fc(taps))                               shared by every draft layer
//   per layer: h = input_layernorm(x); q = q_norm(Wq h) at the block positions;
//     K = k_norm(Wk [ctx ; h]), V = Wv [ctx ; h] at [ctx positions ; block positions] (ctx is not
//     layer-normed); rotate-half RoPE over the full head_dim; attention bidirectional within the
//     block unless the layer is causal, limited to the window on sliding layers; x += o_proj;
//     x += down(silu(gate(h')) · up(h')), h' = post_attention_layernorm(x)
//   prenorm = x, final = norm(x).
// State: a context row's K/V depend only on its taps and position, so the drafter keeps, per layer,
// K and V of every committed position (DflashContext); rollback = truncation. Shape letters: b block
// rows, D hidden, H heads, KVH kv heads, hd head_dim, I MLP width, P committed positions.
#pragma once
#include <cstdint>
#include <vector>

#include "drafter/drafter_weights.h"
#include "engine/backend.h"

namespace memra {

struct DflashWeights {
  explicit DflashWeights(const DrafterWeights& weights);
  DflashWeights(const DflashWeights&) = delete;
  DflashWeights& operator=(const DflashWeights&) = delete;

  struct Layer {
    const float *input_norm, *post_norm;      // [D]
    const float *wq, *wk, *wv, *wo;           // [H·hd, D], [KVH·hd, D], [KVH·hd, D], [D, H·hd]
    const float *q_norm, *k_norm;             // [hd]
    const float *gate, *up, *down;            // [I, D], [I, D], [D, I]
  };
  const DrafterConfig& config;
  std::vector<float> inv_freq;  // [hd/2]
  const float* fc;              // [D, n_taps·D]
  const float* hidden_norm;     // [D]
  const float* norm;            // [D]
  std::vector<Layer> layers;
};

struct DflashContext {
  int64_t pos = 0;                     // committed positions held = the next anchor position
  std::vector<std::vector<float>> k;   // [L][P·KVH·hd] post-k_norm, post-RoPE
  std::vector<std::vector<float>> v;   // [L][P·KVH·hd]
};
DflashContext make_dflash_context(const DrafterConfig& config);

// ctx [T, D] = hidden_norm(fc(taps [T, n_taps·D])).
void dflash_ctx_features(const DflashWeights& w, const float* taps, int64_t T, float* ctx);
// Appends the K/V of ctx rows [T, D] at positions context.pos.. to every layer; advances pos.
void dflash_context_append(const DflashWeights& w, DflashContext& context, const float* ctx, int64_t T);
// Drops every position >= pos (rollback).
void dflash_context_truncate(const DrafterConfig& config, DflashContext& context, int64_t pos);

struct DflashBlock {
  std::vector<float> prenorm;  // [b, D] last layer's output
  std::vector<float> final;    // [b, D] after the norm
};
// block_emb [b, D] at positions context.pos..+b-1; trace (optional): layer.L.hidden [b, D].
DflashBlock dflash_block(const DflashWeights& w, const DflashContext& context, const float* block_emb, int64_t b,
                         ForwardTrace* trace = nullptr);

}  // namespace memra
