// The DSpark drafter's math on the CPU (drafters.md §5.4; the oracle is tools/oracle/dspark_oracle.py),
// on plain host arrays. Each stage is a DeepSeek-V4 block run through the trunk's own CPU site
// functions (cpu::hc_pre / hc_post / moe, cpu::linear / rms_norm, rope_rotate); only the attention
// differs from the trunk's: block queries at positions p..p+b-1 attend to the stage's ring (K=V of
// main_x at p-W..p-1) and to every row of their own block (bidirectional), one softmax with the
// per-head sink.
//
// State: the per-stage rings are the drafter's persistent state (DsparkRings): one entry per
// committed position, slot = position % W, written from main_x = main_norm(main_proj(taps)) of that
// position. A block at anchor position p reads the W entries p-W..p-1, so `pos` must equal p.
// Shape letters: b block rows, D hidden, n hc_mult, hd head_dim, W window, S stages.
#pragma once
#include <cstdint>
#include <vector>

#include "drafter/drafter_weights.h"
#include "engine/backend.h"
#include "engine/cpu_layer.h"

namespace memra {

// Every DSpark weight bound as f32 pointers into a DrafterWeights (which must outlive it).
struct DsparkWeights {
  explicit DsparkWeights(const DrafterWeights& weights);
  DsparkWeights(const DsparkWeights&) = delete;
  DsparkWeights& operator=(const DsparkWeights&) = delete;

  const DrafterConfig& config;
  ModelConfig stage_cfg;        // what the shared site functions read
  std::vector<float> inv_freq;  // [r/2] plain θ, no YaRN
  const float* main_proj;       // [D, n_taps·D]
  const float* main_norm;       // [D]
  std::vector<cpu::LayerWeights> stages;
  const float* norm;            // [D]
  cpu::HcWeights hc_head;       // fn [n, nD], base [n], scale [1]
};

struct DsparkRings {
  int64_t pos = 0;                           // main positions written = the next anchor position
  std::vector<std::vector<float>> ring;      // [S][W·hd] post-norm, post-rope K=V; slot = position % W
};
DsparkRings make_dspark_rings(const DrafterConfig& config);

// main_x [T, D] = main_norm(main_proj(taps [T, n_taps·D])).
void dspark_main_x(const DsparkWeights& w, const float* taps, int64_t T, float* main_x);
// Stage s's K=V rows [T, hd] = rope(kv_norm(wkv · main_x)) at positions pos0..pos0+T-1.
void dspark_stage_kv(const DsparkWeights& w, int64_t s, const float* main_x, int64_t T, int64_t pos0, float* kv);
// Writes main_x rows [T, D] for positions rings.pos.. into every stage's ring and advances pos.
void dspark_ring_append(const DsparkWeights& w, DsparkRings& rings, const float* main_x, int64_t T);
// Stage s's live ring entries in position order (oldest first): [min(W, pos), hd].
std::vector<float> dspark_ring_window(const DrafterConfig& config, const DsparkRings& rings, int64_t s);
// The inverse: rings at `pos` from every stage's window in position order ([S][min(W, pos)·hd]);
// throws Error when a window has the wrong length.
DsparkRings dspark_rings_from_windows(const DrafterConfig& config, int64_t pos,
                                      const std::vector<std::vector<float>>& windows);

struct DsparkBlock {
  std::vector<float> prenorm;  // [b, D] hc-collapsed, before the norm
  std::vector<float> final;    // [b, D] after the norm (the LM head's input)
};
// The block forward: block_emb [b, D] (the trunk's embeddings of [x_0, noise, ...]) at positions
// rings.pos..rings.pos+b-1. trace (optional): stage.S.hidden [b, n, D], stage.S.router.experts [b, k],
// stage.S.router.margin [b].
DsparkBlock dspark_block(const DsparkWeights& w, const DsparkRings& rings, const float* block_emb, int64_t b,
                         ForwardTrace* trace = nullptr);

}  // namespace memra
