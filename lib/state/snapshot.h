// The in-process snapshot of a decode state: every component's live classes copied to the host
// (Backend-owned states export them; a device-resident state copies device → host). restore_state()
// rebuilds a fresh state of any capacity ≥ the position on any backend of the same model whose
// classes are bit-identical to the snapshot's. The file layer (state_file.h) writes and reads these.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/backend.h"

namespace memra {

struct HostSnapshot {
  int64_t pos = 0;                  // tokens processed
  int64_t capacity = 0;             // capacity of the state it was taken from
  std::vector<CacheClass> classes;  // State::export_classes(): live values only, stable order

  size_t bytes() const;  // bytes of live values held
};

HostSnapshot snapshot_state(const State& state);

// A fresh state with `capacity` holding exactly the snapshot's classes. capacity < pos is refused
// (negative Error, exit 1); classes that disagree with the state's layout are an Error naming them.
// `attach` adds components beyond the backend's (a drafter) to the empty state before the import.
std::unique_ptr<State> restore_state(const Backend& backend, const HostSnapshot& host, int64_t capacity,
                                     const std::function<void(State&)>& attach = {});

}  // namespace memra
