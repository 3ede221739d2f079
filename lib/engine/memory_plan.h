// The memory plan of a run: bytes a decode state of capacity C needs for a ModelConfig, the copies
// of its live classes that snapshots and restores hold, the scratch of the widest forward call and
// the logits kept for output, checked against a limit before anything is allocated. A request that
// cannot fit is an Error (exit 2) that says how much it needed, instead of an allocation that grows
// until the machine swaps or the kernel kills the process.
//
// The limit is --max-memory (env MEMRA_MAX_MEMORY), by default 3/4 of this machine's memory (the
// smaller of physical memory and the cgroup limit).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "engine/realization.h"
#include "model/config.h"
#include "model/model.h"

namespace memra {

// What a run allocates, in counts.
struct RunShape {
  int64_t capacity = 1;      // decode state capacity (tokens)
  int64_t states = 1;        // decode states alive at once (a gate holds two or three)
  int64_t live_copies = 0;   // copies of the live classes held at once (snapshot, restore, write) …
  int64_t live_position = -1; // … of a state at this position (-1: at `capacity`, the most it can be)
  int64_t chunk = 1;         // widest forward call (tokens)
  bool chunk_logits = false; // the forward call returns every row's logits (--logits, parity, gates)
  int64_t logits_rows = 0;   // rows of [V] logits kept (and serialized) for output
  uint64_t other_bytes = 0;  // anything else the run holds (parity's per-layer traces)
  Device device = Device::kCpu;  // where the backend's states live (kCuda: the host plan omits them)
};

struct MemoryPlan {
  uint64_t model_bytes = 0;    // weights already resident (f32 copies, expert ids)
  uint64_t state_bytes = 0;    // states · decode_state_bytes(capacity)
  uint64_t copies_bytes = 0;   // live_copies · live_state_bytes(live_position)
  uint64_t scratch_bytes = 0;  // forward_scratch_bytes(chunk)
  uint64_t logits_bytes = 0;   // kept logits, and one serialized copy
  uint64_t other_bytes = 0;
  uint64_t total = 0;
  std::string text() const;    // "1.2 GiB (model 10 MiB, decode state 1.1 GiB, ...)"
};

// Bytes of the buffers make_decode_state(config, capacity) allocates (checked: overflow is an Error).
uint64_t decode_state_bytes(const ModelConfig& config, int64_t capacity);
// Bytes of the live cache classes of a state at `position` (what a snapshot or state file holds).
uint64_t live_state_bytes(const ModelConfig& config, int64_t position);
// An upper estimate of what one forward call of `chunk` tokens allocates on the CPU backend for a
// state of `capacity` (activations of every row of the call, per-query attention scores).
uint64_t forward_scratch_bytes(const ModelConfig& config, int64_t chunk, int64_t capacity, bool chunk_logits);

// Host heap bytes a loaded model holds once a backend on `device` has bound its weights: expert ids,
// and for the CPU backends an f32 copy of every weight not stored as aligned f32 (BF16, FP8, FP4
// are decoded once, Model::f32). A CUDA backend keeps its weights in device memory.
uint64_t model_resident_bytes(const Model& model, Device device = Device::kCpu);

MemoryPlan plan_memory(const ModelConfig& config, const RunShape& shape, uint64_t model_bytes);

// min(physical memory + swap, cgroup limit), and min(physical memory, cgroup limit) · 3/4.
uint64_t machine_memory_bytes();
uint64_t default_memory_limit();
// `requested` (bytes; 0 = default_memory_limit()).
uint64_t effective_memory_limit(uint64_t requested);

// Throws Error (exit 2) when plan.total > limit: "<what> needs 20.8 GiB (...), more than the
// 17.2 GiB limit (--max-memory)" with a hint.
void require_fits(const MemoryPlan& plan, uint64_t limit, const std::string& what);

// The largest n in [lo, hi] whose shape(n) fits in `limit` (plans grow with n); lo - 1 when none.
int64_t largest_fitting(const ModelConfig& config, uint64_t model_bytes, uint64_t limit, int64_t lo, int64_t hi,
                        const std::function<RunShape(int64_t)>& shape);

// "1.5 GiB", "512 MiB", "900 B".
std::string format_bytes(uint64_t bytes);

}  // namespace memra
