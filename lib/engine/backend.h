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
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/hash.h"
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
  // When non-empty: the arrays the caller will read; a backend may record just these. Asking for
  // "hidden.L" arrays only (a drafter's taps) lets the CUDA backend keep the round in its graph.
  std::vector<std::string> only;
};

// Host memory that a backend's device copies to and from at full speed: pinned on a CUDA backend,
// plain (64-byte aligned) otherwise. Made by Backend::host_buffer, owned by the caller.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(uint8_t* data, size_t size, std::function<void(uint8_t*)> release)
      : data_(data), size_(size), release_(std::move(release)) {}
  ~HostBuffer() { reset(); }
  HostBuffer(HostBuffer&& o) noexcept { *this = std::move(o); }
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = o.data_, size_ = o.size_, release_ = std::move(o.release_);
      o.data_ = nullptr, o.size_ = 0;
    }
    return *this;
  }
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void reset() {
    if (data_ && release_) release_(data_);
    data_ = nullptr, size_ = 0;
  }
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::function<void(uint8_t*)> release_;
};

// A streamed export reports each range [offset, offset + bytes) of the destination once it holds
// its final bytes. Ranges of one class arrive in order; ranges of different classes in any order.
using ChunkFn = std::function<void(size_t offset, size_t bytes)>;

// One component's part of a StateMark (StateComponent::export_mark): what it needs to come back to
// the mark's position, made and read only by the component kind that exported it. Host classes
// (ClassesMark) or device memory the mark owns (the CUDA trunk's: a device-to-device copy, no host
// round trip).
class ComponentMark {
 public:
  virtual ~ComponentMark() = default;
  virtual size_t bytes() const = 0;  // what it holds, host or device
};

// The host form: the classes a component chose to keep.
class ClassesMark final : public ComponentMark {
 public:
  explicit ClassesMark(std::vector<CacheClass> c) : classes(std::move(c)) {}
  size_t bytes() const override;
  std::vector<CacheClass> classes;
};
// `mark`'s classes; throws Error when it is a mark of another kind (another backend's state).
const std::vector<CacheClass>& mark_classes_of(const ComponentMark& mark);

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

  // The fast path of snapshots and restores: the live classes at `pos`, laid end to end in
  // layout(pos) order, streamed into `dst` (size ≥ their bytes; pinned memory from
  // Backend::host_buffer copies at full speed) with on_chunk called as each range lands, so the
  // caller can hash classes while later ranges are still in flight. Bit-exact like export_classes.
  // Default: export_classes() and one range per class.
  virtual void export_stream(int64_t pos, uint8_t* dst, size_t size, const ChunkFn& on_chunk) const;
  // The inverse: replaces its contents with the classes at `pos` laid end to end in `src`
  // (export_stream's layout). Default: import_classes().
  virtual void import_stream(int64_t pos, const uint8_t* src, size_t size);
  // Hashing where the bytes live: a component that can (the CUDA trunk, on its devices) makes each
  // class's class_hash() beside its streamed export, so the host does not read those bytes again
  // (a snapshot's host memory then carries each byte once, not twice). The hashes attest the bytes
  // the component holds; a restore checks them against the bytes it reads.
  virtual bool hashes_in_place() const { return false; }
  // export_stream, with hashes[k] = class_hash() of class k of layout(pos) (resized to fit). Only
  // where hashes_in_place(); the default throws.
  virtual void export_stream_hashed(int64_t pos, uint8_t* dst, size_t size, const ChunkFn& on_chunk,
                                    std::vector<Hash128>& hashes) const;

  // A mark to come back to (State::mark / rewind): what running positions past `pos` can change,
  // and putting it back from a later position. A component leaves out what later positions only
  // append past pos's live rows (the trunk's closed compressor entries, a DFlash drafter's context),
  // so a mark's size does not grow with the context. Default: every class (a ClassesMark); the CUDA
  // trunk keeps its mark on the device.
  virtual std::shared_ptr<const ComponentMark> export_mark(int64_t pos) const;
  virtual void import_mark(int64_t pos, const ComponentMark& mark);
  // Back to a mark at `pos`, then forward by the first `rows` rows of the journaled forward that ran
  // from it (SequenceStep::journal), without running them again: the component as if only those rows
  // had run. State::rewind calls it for rows > 0 on the trunk only (the component a trunk forward
  // advances; the others go back with import_mark); the default refuses.
  virtual void import_mark_keeping(int64_t pos, const ComponentMark& mark, int64_t rows);
};

// A saved point of a state to come back to: speculative decoding marks before verifying a block
// and rewinds on partial acceptance, keeping the accepted rows of the journaled verify (or running
// them again). On an exact realization a row's state is the same however the rows were split into
// forwards (chunk invariance), so either way the result is bit-identical to never having run the
// rejected ones.
struct StateMark {
  int64_t position = 0;
  std::vector<std::shared_ptr<const ComponentMark>> components;  // per component, its export_mark(position)
  size_t bytes() const;
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

  // Every component's classes at the current position (or at `pos`), in component order.
  std::vector<ClassLayout> layout() const { return layout(position_); }
  std::vector<ClassLayout> layout(int64_t pos) const;
  std::vector<CacheClass> export_classes() const;
  // Streamed forms (StateComponent::export_stream): every component's classes end to end in
  // layout() order; import_stream checks capacity like import_classes and sets the position. The
  // caller has checked that the bytes are layout(pos)'s (names, dtypes, shapes).
  void export_stream(uint8_t* dst, size_t size, const ChunkFn& on_chunk) const;
  void import_stream(int64_t pos, const uint8_t* src, size_t size);
  // Per class of layout(): whether its component hashes it in place (StateComponent::hashes_in_place).
  std::vector<bool> hashed_in_place() const;
  // export_stream, with the classes of components that hash in place hashed there: those entries
  // of `hashes` (layout().size()) set, the others left as they are. on_chunk is called for every
  // range, as export_stream does.
  void export_stream_hashed(uint8_t* dst, size_t size, const ChunkFn& on_chunk, std::vector<Hash128>& hashes) const;
  // Sets the position and imports each component's classes (selected by prefix). A class that no
  // component claims is refused by name; so is a missing one. Throws Error (negative, exit 1).
  void import_classes(int64_t pos, const std::vector<CacheClass>& classes);

  // The state as it is now, and back to it from any later position (same components): the
  // components' export_mark / import_mark.
  StateMark mark() const;
  // Back to the mark; with kept_rows > 0, keeping the first kept_rows rows of the journaled forward
  // that ran from it (SequenceStep::journal; no forward since): the trunk keeps them
  // (import_mark_keeping), the other components, which a trunk forward does not advance, go back to
  // the mark; the position becomes mark.position + kept_rows. Throws Error when there is no such
  // journal.
  void rewind(const StateMark& mark, int64_t kept_rows = 0);

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
  // Keep a journal of this forward beside the state (each row's window kv, compressor rows and
  // logits) so that State::rewind(mark, rows) can keep its first rows without running them again.
  // Any later forward or import of the state drops it.
  bool journal = false;
};

struct BackendOptions {
  std::vector<int> devices;  // CUDA device indices (empty: device 0)
  int threads = 0;           // CPU worker threads (0: one per core)
  // The official inference code's QAT simulations in the attention path (numerics/qat.h: FP8
  // quant-dequant of window and compressed kv, Hadamard + FP4 of the indexer q/k). CPU realizations
  // only; state files record it.
  bool qat = false;
  // CUDA: run every MoE layer through one linear per expert instead of the fused kernels
  // (`memra gate fused-moe` compares the two paths by bits).
  bool moe_per_expert = false;
  // CUDA: weights made on the device from this seed instead of read from the model, which then
  // needs only its config (Model::synthetic). `memra bench` runs DeepSeek-V4 geometries without a
  // checkpoint this way; the values (kernels/synthetic_weights.cu, bench/transformers_bench.py)
  // are reproducible on any machine. 0: the model's own weights.
  uint64_t synthetic_seed = 0;
  // CUDA: time every linear (device_report's linear_ms / linear_flop), as MEMRA_CUDA_TIME_LINEARS=1
  // does for any command; `memra bench` asks cuda-fast's prefill for it.
  bool time_linears = false;
};

// How a backend observes or runs its next forwards, for `memra bench` (kernels/): what the switches
// MEMRA_CUDA_TIMELINE=1, MEMRA_CUDA_GRAPH_MARKS=1 and MEMRA_CUDA_GRAPHS=0 do for any command, set on
// one backend object instead of in the process's environment. Each forward reads them at its start.
// The CPU has none of them.
struct ForwardProbes {
  bool timeline = false;     // every launch alone (PDL off), device time by site: "timeline_ms:<site>"
  bool graph_marks = false;  // when each site ends inside the CUDA graph: "graph_mark_us:<n> <stream> <site>"
  bool no_graphs = false;    // kernel by kernel instead of replaying captured CUDA graphs
  // where a forward's wall time goes, host and device (events around the plan's copy, the round and
  // the logits copies): "phase_us:<phase>", means over the forwards since the last device_report
  bool phases = false;
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
  // Whether the QAT simulations are on (BackendOptions::qat); recorded in state files.
  virtual bool qat() const { return false; }
  // Host memory for State::export_stream / import_stream (HostBuffer). Default: plain memory.
  virtual HostBuffer host_buffer(size_t bytes) const;
  // Numbers for reports (memra bench): device bytes by purpose (weights_bytes, scratch_bytes) and,
  // when the backend times its linears (BackendOptions::time_linears), linear_ms and linear_flop
  // accumulated since the last call; with the timeline probe (ForwardProbes), "timeline_ms:<site>"
  // and "timeline_launches:<site>" of every launch since the last call (kernels/timeline.h); with the
  // graph marks, those of the last round. Empty on the CPU.
  virtual std::map<std::string, double> device_report() const { return {}; }
  // The probes of the forwards that follow (ForwardProbes; the default ignores them).
  virtual void set_probes(const ForwardProbes&) const {}
};

// Checks a batch before a backend touches any state: states present and distinct, capacity for
// every sequence's tokens, token ids inside the vocabulary. Throws Error naming the first problem.
void validate_batch(const ModelConfig& config, std::span<const SequenceStep> batch);

// One factory for every command: `name` is a realization name (realization.h). CUDA realizations
// load libmemra_cuda.so lazily and ask its registration (kernels/, backend_registry.h).
std::unique_ptr<Backend> make_backend(const std::string& name, const Model& model, const BackendOptions& options = {});

}  // namespace memra
