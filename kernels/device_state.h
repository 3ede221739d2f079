// The trunk's decode state on the GPU(s): the same buffers as the CPU state (lib/engine/
// decode_state.h: window ring, per compressor PEND/PREV/entries, last_logits), f32, in device memory
// on the device that runs each layer. Its classes (names, F32, shapes, order) are exactly the CPU
// trunk's (trunk_layout), so state files move freely between cpu and cuda.
//
// Export is D2H, import is H2D into a state of equal or larger capacity, both bit-exact: a class is
// a verbatim copy of the live rows (the window ring re-ordered oldest first, in at most two runs).
// Two paths: export_classes()/import_classes() (pageable vectors, staged through two pinned buffers
// so the D2H of one chunk overlaps the host copy of the previous one), and export_stream()/
// import_stream() straight into caller-owned pinned memory (Backend::host_buffer) with a callback
// per finished chunk, so hashing runs while later chunks are in flight: what snapshots and state
// files use (lib/state/snapshot.h).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "device_buffer.h"
#include "engine/backend.h"
#include "engine/decode_state.h"
#include "model/config.h"
#include "ops.h"

namespace memra::cuda {

// Which layers run where: layer l on devices[layer_shard[l]]; the last shard also holds the head
// and last_logits, the first the embedding.
struct Placement {
  std::vector<int> devices;      // CUDA device ids in pipeline order
  std::vector<int> layer_shard;  // [L]
  int shards() const { return static_cast<int>(devices.size()); }
  int last() const { return shards() - 1; }
};
// Contiguous, balanced: shard s runs layers [s·L/S, (s+1)·L/S).
Placement split_layers(const std::vector<int>& devices, int64_t layers);

using Part = TrunkPart;  // engine/decode_state.h

struct ClassSpec {
  ClassLayout layout;
  int layer = -1;
  bool indexer = false;
  Part part = Part::kWindow;
};
// The trunk's classes at `pos`: trunk_class_specs (engine/decode_state.h) with f32 layouts; the
// mark's (trunk_mark_specs: without the append-only entries).
std::vector<ClassSpec> trunk_specs(const ModelConfig& config, int64_t pos);
std::vector<ClassSpec> mark_specs(const ModelConfig& config, int64_t pos);

// A contiguous device range that maps to [offset, offset + bytes) of the classes laid end to end.
struct Segment {
  int shard = 0;
  const uint8_t* ptr = nullptr;
  size_t bytes = 0;
  size_t offset = 0;
};

class DeviceTrunk {
 public:
  DeviceTrunk(const ModelConfig& config, const Placement& placement, int64_t capacity);
  ~DeviceTrunk();
  DeviceTrunk(const DeviceTrunk&) = delete;
  DeviceTrunk& operator=(const DeviceTrunk&) = delete;

  int64_t capacity() const { return capacity_; }
  const Placement& placement() const { return placement_; }
  const LayerDev* table(int shard) const { return tables_[shard]; }  // device [L]
  const LayerDev& layer(int l) const { return host_layers_[l]; }     // device pointers, on the host
  float* last_logits() const { return last_logits_; }                // [V] on the last shard
  size_t device_bytes() const;

  // Class bytes end to end, in `specs` order, as device ranges.
  std::vector<Segment> segments(const std::vector<ClassSpec>& specs, int64_t pos) const;
  // Back to the state of a fresh sequence (zeros; CSA PREV scores −inf). Asynchronous on the copy streams.
  void reset();
  // The same for every buffer but the compressors' entries (append-only): what a mark puts back.
  void reset_mutable();
  // Every buffer but the entries (the window rings, PEND, PREV, last_logits), whole, copied
  // device to device into `into` (one buffer a device, from the trunk's pool) and back: a mark that
  // never leaves the device (DeviceMark): one copy a device, as those buffers sit end to end. Both
  // wait for the copies, but a restore told not to (the work that follows on copy_stream queues
  // behind it).
  void save_mutable(std::vector<DeviceBuffer>& into) const;
  void restore_mutable(const std::vector<DeviceBuffer>& from, bool wait = true);
  // The pool marks take their buffers from and give them back to (shared: a mark may outlive it).
  struct MarkPool {
    std::mutex mutex;
    std::vector<std::vector<DeviceBuffer>> free;
  };
  const std::shared_ptr<MarkPool>& mark_pool() const { return mark_pool_; }
  cudaStream_t copy_stream(int shard) const { return streams_[shard]; }
  int device(int shard) const { return placement_.devices[shard]; }
  void sync() const;

  // The journal of the last forward when it asked for one (SequenceStep::journal): each layer's
  // window and compressor rows (LayerDev / CompressorDev journal_*) and the logits [J, V], one
  // allocation a device, made on the state's first journaled forward and grown to the longest (the
  // layer tables are uploaded again then). start_journal waits for the state's copy streams.
  void start_journal(int64_t pos0, int64_t rows);
  void drop_journal() { journal_pos0_ = -1, journal_rows_ = 0; }
  int64_t journal_pos0() const { return journal_pos0_; }  // −1: none
  int64_t journal_rows() const { return journal_rows_; }
  float* journal_logits() const { return journal_logits_; }  // [J, V] on the last shard

 private:
  ModelConfig cfg_;
  Placement placement_;
  int64_t capacity_;
  std::vector<DeviceBuffer> memory_;    // one allocation per shard
  // The layer tables (host_layers_, each device its own layers) to the devices; waits for them.
  void upload_tables();
  // The mutable span to (to_mark) or from a mark's buffers; waits for the copies if told to.
  void copy_mutable(const std::vector<DeviceBuffer>& mark, bool to_mark, bool wait) const;

  std::vector<LayerDev*> tables_;       // per shard, device pointer
  std::vector<LayerDev> host_layers_;   // [L]
  std::vector<std::vector<std::pair<float*, size_t>>> minus_inf_;  // per shard: CSA PREV score ranges
  float* last_logits_ = nullptr;
  std::vector<cudaStream_t> streams_;
  size_t table_bytes_ = 0;             // the layer table's block: every buffer but the entries follows it
  std::vector<size_t> mutable_bytes_;  // per shard: their span, end to end (aligned)
  std::shared_ptr<MarkPool> mark_pool_ = std::make_shared<MarkPool>();
  std::vector<DeviceBuffer> journal_memory_;  // per shard, empty until the first journaled forward
  int64_t journal_capacity_ = 0;              // J
  int64_t journal_pos0_ = -1, journal_rows_ = 0;
  float* journal_logits_ = nullptr;
};

// The trunk as a StateComponent of a cuda/cuda-fast state.
class CudaTrunkComponent final : public StateComponent {
 public:
  CudaTrunkComponent(const void* owner, const ModelConfig& config, const Placement& placement, int64_t capacity);

  std::string name() const override { return "trunk"; }
  std::string class_prefix() const override { return ""; }
  std::vector<ClassLayout> layout(int64_t pos) const override;
  std::vector<CacheClass> export_classes(int64_t pos) const override;
  void import_classes(int64_t pos, const std::vector<CacheClass>& classes) override;
  // A mark: every buffer but the entries, copied on the device (DeviceTrunk::save_mutable); back to
  // it: the copy the other way. With MEMRA_CUDA_HOST_MARK=1 (A/B timing) the host form instead: the
  // live classes but the entries (mark_specs), D2H; back to it: reset_mutable(), H2D. Same bits.
  std::shared_ptr<const ComponentMark> export_mark(int64_t pos) const override;
  void import_mark(int64_t pos, const ComponentMark& mark) override;
  // Back to the mark, then the journaled forward's first rows by position (keep_rows.cu) and
  // last_logits from the journal's row rows − 1.
  void import_mark_keeping(int64_t pos, const ComponentMark& mark, int64_t rows) override;

  // Bytes of every live class at pos, end to end (what export_stream writes).
  size_t live_bytes(int64_t pos) const;
  // D2H of every live class, laid end to end, into `dst` (pinned: full PCIe rate), every chunk
  // enqueued at once on the copy streams of the devices holding it; on_chunk(offset, bytes) as each
  // chunk lands, each class's chunks in order (StreamHasher hashes classes in parallel while later
  // chunks copy); the order across classes is the StreamPlan's.
  void export_stream(int64_t pos, uint8_t* dst, size_t size, const ChunkFn& on_chunk) const override;
  // Class hashes made on the devices holding the classes (class_hash.cu), beside export_stream's
  // copies: the host reads none of those bytes again. Streams of ≤ 240 bytes (XXH3's short paths)
  // are hashed on the host from the landed bytes.
  bool hashes_in_place() const override { return true; }
  void export_stream_hashed(int64_t pos, uint8_t* dst, size_t size, const ChunkFn& on_chunk,
                            std::vector<Hash128>& hashes) const override;
  // The devices' half alone, no copies (memra_cuda_test bandwidth times it apart): class_hash() of
  // every class whose stream passes 240 bytes, the others' entries zero.
  std::vector<Hash128> device_class_hashes(int64_t pos) const;
  // How export_stream orders and cuts its copies. Interleaved: round-robin over the classes (largest
  // first) in chunks of `chunk` bytes, so every hashing thread has a class whose newest bytes just
  // landed (still in the host's last-level cache) instead of one thread trailing a 38 MiB class it
  // reads back from DRAM. Not interleaved: class after class, largest first.
  struct StreamPlan {
    bool interleave = true;
    size_t chunk = size_t(4) << 20;
  };
  void set_stream_plan(StreamPlan plan) { plan_ = plan; }
  // H2D from `src` (export_stream's layout at pos) after a reset.
  void import_stream(int64_t pos, const uint8_t* src, size_t size) override;

  const void* owner() const { return owner_; }
  DeviceTrunk& trunk() { return trunk_; }
  const DeviceTrunk& trunk() const { return trunk_; }

 private:
  void check_classes(int64_t pos, const std::vector<CacheClass>& classes, const std::vector<ClassSpec>& specs) const;
  // The mark's buffers back (a device mark: the device copy; a host one: reset_mutable(), H2D).
  // wait = false: a device mark's copy may still be in flight on the copy streams on return.
  void put_back(int64_t pos, const ComponentMark& mark, bool wait = true);
  std::vector<CacheClass> export_specs(int64_t pos, const std::vector<ClassSpec>& specs) const;
  // H2D of `classes` (exactly `specs`) after reset() (full) or reset_mutable().
  void import_specs(int64_t pos, const std::vector<CacheClass>& classes, const std::vector<ClassSpec>& specs, bool full);

  // The class hashes on the devices (class_hash.cu) with `beside` run between their launch and their
  // wait (the copies); the streams of ≤ 240 bytes (and a class split over devices or more than two
  // runs, which segments() never makes) hashed on the host from `landed` (the classes end to end, as
  // beside left them), or left zero without it.
  std::vector<Hash128> hash_on_devices(int64_t pos, const std::function<void()>& beside, const uint8_t* landed) const;

  const void* owner_;
  ModelConfig cfg_;
  DeviceTrunk trunk_;
  mutable PinnedBuffer staging_[2];
  mutable std::vector<Scratch<uint8_t>> hash_memory_;  // per shard: descriptors, digests, prefixes
  StreamPlan plan_;
};

}  // namespace memra::cuda
