// Host snapshots of decode states: a thin layer over cache_classes()/decode_state_from_classes()
// that remembers the geometry, so a restore needs nothing but the snapshot and a capacity.
#include "state/snapshot.h"

namespace memra {

size_t HostSnapshot::bytes() const {
  size_t n = 0;
  for (const auto& c : classes) n += c.values.size() * sizeof(float);
  return n;
}

HostSnapshot snapshot_decode_state(const DecodeState& state, const ModelConfig& config) {
  HostSnapshot host;
  host.config = config;
  host.pos = state.pos;
  host.capacity = state.capacity;
  host.classes = cache_classes(config, state);
  return host;
}

DecodeState restore_decode_state_for(const HostSnapshot& host, int64_t capacity) {
  return decode_state_from_classes(host.config, host.pos, capacity, host.classes);
}

}  // namespace memra
