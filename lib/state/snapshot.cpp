// Host snapshots of decode states through the backend interface (snapshot.h).
#include "state/snapshot.h"

#include <cstring>

#include "core/error.h"
#include "engine/engine.h"
#include "state/stream_hash.h"

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

size_t StreamedSnapshot::size() const {
  size_t n = 0;
  for (const auto& l : layout) n += l.nbytes();
  return n;
}

StreamedSnapshot stream_snapshot(const Backend& backend, const State& state, int threads, bool in_place) {
  StreamedSnapshot s;
  s.pos = state.position();
  s.capacity = state.capacity();
  s.layout = state.layout();
  const size_t total = s.size();
  s.bytes = backend.host_buffer(total);
  s.hashes = export_hashed(state, s.bytes.data(), total, threads, in_place);
  return s;
}

std::vector<Hash128> export_hashed(const State& state, uint8_t* dst, size_t size, int threads, bool in_place) {
  const std::vector<ClassLayout> layout = state.layout();
  const std::vector<bool> elsewhere = in_place ? state.hashed_in_place() : std::vector<bool>{};
  std::vector<Hash128> placed(layout.size());
  std::vector<Hash128> out = hash_stream(
      layout, dst,
      [&](const ChunkFn& landed) {
        if (in_place)
          state.export_stream_hashed(dst, size, landed, placed);
        else
          state.export_stream(dst, size, landed);
      },
      threads, elsewhere);
  for (size_t k = 0; k < out.size(); ++k)
    if (k < elsewhere.size() && elsewhere[k]) out[k] = placed[k];
  return out;
}

std::vector<Hash128> hash_stream(const std::vector<ClassLayout>& layout, const uint8_t* dst,
                                 const std::function<void(const ChunkFn&)>& run_export, int threads,
                                 const std::vector<bool>& hashed_elsewhere) {
  StreamHasher hasher(layout, dst, threads, hashed_elsewhere);
  run_export([&](size_t offset, size_t n) { hasher.land(offset, n); });
  return hasher.finish();
}

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

std::unique_ptr<State> restore_stream(const Backend& backend, int64_t pos, int64_t capacity,
                                      const std::vector<ClassLayout>& layout, const uint8_t* bytes, size_t size,
                                      const std::function<void(State&)>& attach) {
  if (capacity < pos)
    throw negative("capacity " + std::to_string(capacity) + " is smaller than the state's position " + std::to_string(pos),
                   "restore with a capacity of at least " + std::to_string(pos));
  std::unique_ptr<State> state = backend.new_state(capacity);
  if (attach) attach(*state);
  const std::vector<ClassLayout> want = state->layout(pos);
  for (size_t i = 0; i < std::max(want.size(), layout.size()); ++i) {
    if (i >= layout.size()) throw negative("state class " + want[i].name + " is missing (a state at position " +
                                           std::to_string(pos) + " of this model has it)");
    if (i >= want.size() || layout[i].name != want[i].name) {
      if (layout[i].name.rfind(kDrafterClassPrefix, 0) == 0)
        throw negative("state class " + layout[i].name + " belongs to a drafter, and this model's state has none",
                       "restore with the drafter the state was written with (--drafter)");
      throw negative("state class " + layout[i].name + " is not held by this model's state at position " +
                     std::to_string(pos) + (i < want.size() ? " (expected " + want[i].name + ")" : ""));
    }
    if (layout[i].dtype != want[i].dtype || layout[i].shape != want[i].shape)
      throw negative("state class " + layout[i].name + " is " + dtype_name(layout[i].dtype) + " " + shape_text(layout[i].shape) +
                     ", expected " + dtype_name(want[i].dtype) + " " + shape_text(want[i].shape));
  }
  state->import_stream(pos, bytes, size);
  return state;
}

}  // namespace memra
