// The backend interface: one per realization (realization.h). A backend owns the decode states it
// makes (host memory on the CPU, device memory on CUDA); everything outside a backend sees a state
// only through this interface: its position and capacity, its classes exported to the host
// (bit-exact), a state rebuilt from classes, and the last logits. Snapshot, restore, the gates and
// greedy generation are written against it, so a device-resident state leaves them untouched.
//
// A state is a list of named components. The trunk (the model's layers, component "trunk") is
// always first; a drafter attaches its own (rings, anchor, counters) after it. Every class of a
// component carries the component's prefix, except the trunk's, which keep their v1.0 names.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/realization.h"
#include "engine/state_class.h"
#include "model/config.h"

namespace memra {

class Model;

// Class-name prefix of a drafter's component (its rings, anchor and counters).
inline constexpr const char* kDrafterClassPrefix = "drafter.";

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

// One named part of a sequence's state, living where its backend lives.
class StateComponent {
 public:
  virtual ~StateComponent() = default;
  virtual std::string name() const = 0;          // "trunk", "drafter"
  virtual std::string class_prefix() const = 0;  // "" for the trunk, "drafter." for a drafter
  // The classes this component holds at position `pos`, in a stable order (empty ones omitted).
  virtual std::vector<ClassLayout> layout(int64_t pos) const = 0;
  // Host copies of its live classes at `pos` (bit-exact), in layout(pos) order.
  virtual std::vector<CacheClass> export_classes(int64_t pos) const = 0;
  // Replaces its contents with `classes`, which must be exactly layout(pos) (throws Error naming
  // the first disagreement).
  virtual void import_classes(int64_t pos, const std::vector<CacheClass>& classes) = 0;
};

// A saved point of a state to come back to: speculative decoding marks before verifying a block
// and rewinds on partial acceptance, then re-runs the accepted tokens (on an exact realization the
// result is bit-identical to never having run the rejected ones: chunk invariance).
struct StateMark {
  int64_t position = 0;
  std::vector<CacheClass> classes;  // every component's live classes at `position`
};

// A sequence's decode state. Made by Backend::new_state (trunk) and extended by attach().
class State {
 public:
  virtual ~State() = default;
  int64_t position() const { return position_; }  // tokens processed = the next position
  int64_t capacity() const { return capacity_; }  // most tokens it can hold, planned up front
  const std::vector<std::unique_ptr<StateComponent>>& components() const { return components_; }
  StateComponent* component(const std::string& name) const;  // null when absent
  void attach(std::unique_ptr<StateComponent> component);      // throws on a duplicate name

  // Every component's classes at the current position, in component order.
  std::vector<ClassLayout> layout() const;
  std::vector<CacheClass> export_classes() const;
  // Sets the position and imports each component's classes (selected by prefix). A class that no
  // component claims is refused by name; so is a missing one. Throws Error (negative, exit 1).
  void import_classes(int64_t pos, const std::vector<CacheClass>& classes);

  // The state as it is now, and back to it (any later position, same components).
  StateMark mark() const { return {position_, export_classes()}; }
  void rewind(const StateMark& mark) { import_classes(mark.position, mark.classes); }

 protected:
  State(int64_t capacity) : capacity_(capacity) {}
  // For the backend that owns the state: after a forward over `tokens` tokens.
  void advance(int64_t tokens) { position_ += tokens; }

 private:
  int64_t position_ = 0;
  int64_t capacity_ = 0;
  std::vector<std::unique_ptr<StateComponent>> components_;
};

// One sequence of a batched forward: `tokens` at positions state.position() .. +T-1.
struct SequenceStep {
  State* state = nullptr;
  std::span<const int32_t> tokens;
  float* logits = nullptr;          // [T, V] when non-null (the last row is kept by the state anyway)
  ForwardTrace* trace = nullptr;    // per-stage intermediates when non-null
};

struct BackendOptions {
  std::vector<int> devices;  // CUDA device indices (empty: device 0)
  int threads = 0;           // CPU worker threads (0: one per core)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const RealizationInfo& realization() const = 0;
  virtual const ModelConfig& config() const = 0;
  std::string name() const { return std::string(realization().name); }
  std::string precision_class() const { return std::string(realization().precision_class); }
  int64_t vocab_size() const { return config().vocab_size; }

  // An empty state (position 0) for `capacity` tokens, owned by the caller, living on this
  // backend's device. Throws Error when it cannot be planned (capacity < 1, memory).
  virtual std::unique_ptr<State> new_state(int64_t capacity) const = 0;

  // Runs every sequence of the batch over its tokens and advances each state. On an exact
  // realization each sequence's logits and classes are bit-identical to running it alone. A
  // sequence may appear at most once. Throws Error on a capacity overrun or a bad token id, before
  // any state is modified.
  virtual void forward(std::span<const SequenceStep> batch) const = 0;

  // Logits [V] of position position()-1 (empty at position 0), copied to the host.
  virtual std::vector<float> last_logits(const State& state) const = 0;
  // Waits for outstanding device work (no-op on the CPU).
  virtual void sync() const {}
};

// Checks a batch before a backend touches any state: states present and distinct, capacity for
// every sequence's tokens, token ids inside the vocabulary. Throws Error naming the first problem.
void validate_batch(const ModelConfig& config, std::span<const SequenceStep> batch);

// One factory for every command: `name` is a realization name (realization.h). CUDA realizations
// load libmemra_cuda.so lazily and ask its registration (kernels/, backend_registry.h).
std::unique_ptr<Backend> make_backend(const std::string& name, const Model& model, const BackendOptions& options = {});

}  // namespace memra
