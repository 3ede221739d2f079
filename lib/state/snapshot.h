// The in-process snapshot of a decode state: its live cache classes copied to host memory, with the
// geometry needed to rebuild it. restore_decode_state_for() rebuilds a fresh state of any capacity
// ≥ the position whose classes are bit-identical to the snapshot's. The file layer (state_file.h)
// writes and reads these.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/decode_state.h"
#include "model/config.h"

namespace memra {

struct HostSnapshot {
  ModelConfig config;               // geometry the classes belong to
  int64_t pos = 0;                  // tokens processed
  int64_t capacity = 0;             // capacity of the state it was taken from
  std::vector<CacheClass> classes;  // cache_classes(config, state): live values only, stable order

  // Bytes of live values held (f32 elements · 4).
  size_t bytes() const;
};

// Copies the live classes of `state` (throws Error when the state does not fit `config`).
HostSnapshot snapshot_decode_state(const DecodeState& state, const ModelConfig& config);

// A fresh state with `capacity` holding exactly the snapshot's classes. capacity < pos is refused
// (negative Error, exit 1); classes that disagree with expected_cache_classes() are an Error.
DecodeState restore_decode_state_for(const HostSnapshot& host, int64_t capacity);

}  // namespace memra
