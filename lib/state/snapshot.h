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

#include "core/hash.h"
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

// The fast snapshot: every class streamed (State::export_stream) into one buffer of the backend's
// host memory (pinned on CUDA) and hashed class by class (class_hash): where the bytes live by the
// components that can (the CUDA trunk, on its devices, beside the copies), the rest on worker
// threads while later ranges are still in flight. What write_state_file needs, without a second
// pass. in_place false: every class hashed on the host from the bytes that landed.
struct StreamedSnapshot {
  int64_t pos = 0;
  int64_t capacity = 0;
  std::vector<ClassLayout> layout;  // every class, in order
  HostBuffer bytes;                 // the classes end to end
  std::vector<Hash128> hashes;      // class_hash() of each, in order

  size_t size() const;  // bytes of the classes
};
StreamedSnapshot stream_snapshot(const Backend& backend, const State& state, int threads = 0, bool in_place = true);
// Its core: the state's classes streamed into `dst` (size bytes) and class_hash() of each, hashed
// as stream_snapshot says.
std::vector<Hash128> export_hashed(const State& state, uint8_t* dst, size_t size, int threads = 0, bool in_place = true);
// The host's half, for any streamed export: `run_export` streams the classes of `layout` into `dst`
// (calling the ChunkFn it is given as ranges land); returns class_hash() of each class, hashed on
// worker threads as it lands, but those marked in hashed_elsewhere (their entries zero).
std::vector<Hash128> hash_stream(const std::vector<ClassLayout>& layout, const uint8_t* dst,
                                 const std::function<void(const ChunkFn&)>& run_export, int threads = 0,
                                 const std::vector<bool>& hashed_elsewhere = {});

// A fresh state of `capacity` from classes laid end to end (State::import_stream). `layout` must be
// the new state's layout at `pos` (names, dtypes, shapes), else a negative Error naming the first
// difference (a class no component holds, a missing one). `attach` adds components beyond the
// backend's (a drafter) to the empty state before the import.
std::unique_ptr<State> restore_stream(const Backend& backend, int64_t pos, int64_t capacity,
                                      const std::vector<ClassLayout>& layout, const uint8_t* bytes, size_t size,
                                      const std::function<void(State&)>& attach = {});

}  // namespace memra
