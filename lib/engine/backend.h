// The backend interface: CPU reference now, CUDA next. A backend runs the DeepSeek-V4 forward over
// a run of tokens at the state's position and advances the state.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine/decode_state.h"

namespace memra {

// Per-stage intermediates that parity compares (filled only when requested).
//  hidden.L            [T, n, D]  hc streams after layer L
//  router.L.experts    [T, k]     selected experts (learned layers; hash layers: tid2eid rows)
//  router.L.margin     [T]        selection score k-th minus (k+1)-th (learned layers)
//  indexer.L.selected  [T, K]     CSA top-k entry ids, -1 padded, ascending
//  indexer.L.margin    [T]        K-th minus (K+1)-th score (inf when all entries selected)
struct ForwardTrace {
  std::map<std::string, std::vector<float>> arrays;
  std::map<std::string, std::vector<int64_t>> shapes;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;             // "cpu", "cuda"
  virtual std::string precision_class() const = 0;  // e.g. "cpu-f32-exact"
  virtual int64_t vocab_size() const = 0;
  virtual DecodeState new_state(int64_t capacity) const = 0;
  // Processes tokens at positions state.pos .. state.pos+T-1 in one call and advances the state.
  // logits (may be null) receives [T, V]. Throws Error when capacity would be exceeded.
  virtual void forward(DecodeState& state, std::span<const int32_t> tokens, float* logits,
                       ForwardTrace* trace = nullptr) const = 0;
};

}  // namespace memra
