// Synthetic model geometries and filled decode states for the state tests: no checkpoint needed.
#pragma once
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "engine/backend.h"
#include "engine/cpu_state.h"
#include "engine/host_state_backend.h"
#include "engine/decode_state.h"
#include "model/config.h"
#include "state/snapshot.h"

namespace memra::test {

// n tokens in [2, vocab) from a seeded generator (ids 0 and 1 are left to BOS/EOS).
inline std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(2, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> t(n);
  for (auto& x : t) x = d(rng);
  return t;
}

// tiny-a's layer schedule (sliding, CSA 4, HCA 16, CSA 4) at small widths.
inline ModelConfig synthetic_config(int64_t d = 8, int64_t W = 16, int64_t di = 4, int64_t V = 32) {
  ModelConfig c;
  c.source_form = "transformers";
  c.vocab_size = V;
  c.hidden_size = 16;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 2;
  c.head_dim = d;
  c.qk_rope_head_dim = 2;
  c.sliding_window = W;
  c.layer_types = {LayerKind::kSliding, LayerKind::kCSA, LayerKind::kHCA, LayerKind::kCSA};
  c.mlp_layer_types = {MlpKind::kHash, MlpKind::kLearned, MlpKind::kLearned, MlpKind::kLearned};
  c.csa_rate = 4;
  c.hca_rate = 16;
  c.index_n_heads = 2;
  c.index_head_dim = di;
  return c;
}

// tiny-b's schedule (HCA 8, sliding, CSA 4, HCA 8, CSA 4), window 20.
inline ModelConfig synthetic_config_b() {
  ModelConfig c = synthetic_config(6, 20, 4, 24);
  c.num_hidden_layers = 5;
  c.layer_types = {LayerKind::kHCA, LayerKind::kSliding, LayerKind::kCSA, LayerKind::kHCA, LayerKind::kCSA};
  c.mlp_layer_types.assign(5, MlpKind::kLearned);
  c.hca_rate = 8;
  return c;
}

inline void fill_random(std::vector<float>& v, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (auto& x : v) x = dist(rng);
}

// A state at `pos` whose every buffer (live and dead) holds random values.
inline DecodeState random_state(const ModelConfig& config, int64_t pos, int64_t capacity, uint64_t seed) {
  std::mt19937_64 rng(seed);
  DecodeState s = make_decode_state(config, capacity);
  s.pos = pos;
  for (auto& l : s.layers) {
    fill_random(l.window, rng);
    for (CompressorState* c : {&l.compressor, &l.indexer}) {
      fill_random(c->pend_kv, rng);
      fill_random(c->pend_score, rng);
      fill_random(c->prev_kv, rng);
      fill_random(c->prev_score, rng);
      fill_random(c->entries, rng);
    }
  }
  if (pos > 0) {
    s.last_logits.resize(static_cast<size_t>(config.vocab_size));
    fill_random(s.last_logits, rng);
  }
  return s;
}

inline bool bits_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

using memra::HostStateBackend;

// A host snapshot of a plain host state (what a CPU backend's snapshot_state() gives).
inline HostSnapshot snapshot_of(const ModelConfig& config, const DecodeState& s) {
  return HostSnapshot{s.pos, s.capacity, cache_classes(config, s)};
}

// random_state() inside a backend-owned state of `backend`.
inline std::unique_ptr<State> random_backend_state(const Backend& backend, int64_t pos, int64_t capacity, uint64_t seed) {
  std::unique_ptr<State> s = backend.new_state(capacity);
  s->import_classes(pos, cache_classes(backend.config(), random_state(backend.config(), pos, capacity, seed)));
  return s;
}

}  // namespace memra::test
