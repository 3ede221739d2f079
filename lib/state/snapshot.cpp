// Host snapshots of decode states through the backend interface (snapshot.h).
#include "state/snapshot.h"

#include "engine/engine.h"

namespace memra {

size_t HostSnapshot::bytes() const {
  size_t n = 0;
  for (const auto& c : classes) n += c.bytes.size();
  return n;
}

HostSnapshot snapshot_state(const State& state) {
  HostSnapshot host;
  host.pos = state.position();
  host.capacity = state.capacity();
  host.classes = state.export_classes();
  return host;
}

std::unique_ptr<State> restore_state(const Backend& backend, const HostSnapshot& host, int64_t capacity,
                                     const std::function<void(State&)>& attach) {
  return state_from_classes(backend, host.pos, capacity, host.classes, attach);
}

}  // namespace memra
