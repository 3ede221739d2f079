// The trunk's device-resident decode state (device_state.h).
#include "device_state.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "ab_switch.h"
#include "core/error.h"
#include "core/shape_text.h"
#include "cuda_check.h"
#include "engine/decode_state.h"
#include "ops.h"
#include "state/class_hash.h"

namespace memra::cuda {

namespace {

constexpr size_t kAlign = 256;
constexpr size_t kChunk = size_t(32) << 20;  // transfer chunk: large enough for full PCIe rate

size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

int64_t ratio_of(const ModelConfig& c, int64_t l) { return c.compress_ratio(l); }

// Pieces of the flat range [begin, end) over `segs`, in order.
template <typename F>
void for_pieces(const std::vector<Segment>& segs, size_t begin, size_t end, F&& f) {
  for (const Segment& s : segs) {
    const size_t a = std::max(begin, s.offset), b = std::min(end, s.offset + s.bytes);
    if (a < b) f(s, a, b - a);
  }
}

// The engine's table entries with f32 layouts (one conversion for the full and the mark tables).
std::vector<ClassSpec> with_layouts(std::vector<TrunkClassSpec> table) {
  std::vector<ClassSpec> out;
  for (TrunkClassSpec& t : table) {
    ClassSpec s;
    s.layout.name = std::move(t.name);
    s.layout.dtype = DType::kF32;
    s.layout.shape = std::move(t.shape);
    s.layer = static_cast<int>(t.layer);
    s.indexer = t.indexer;
    s.part = t.part;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

Placement split_layers(const std::vector<int>& devices, int64_t layers) {
  Placement p;
  p.devices = devices.empty() ? std::vector<int>{0} : devices;
  const int64_t S = p.shards();
  for (int64_t l = 0; l < layers; ++l) p.layer_shard.push_back(static_cast<int>(l * S / std::max<int64_t>(layers, 1)));
  return p;
}

std::vector<ClassSpec> trunk_specs(const ModelConfig& config, int64_t pos) {
  return with_layouts(trunk_class_specs(config, pos));
}

std::vector<ClassSpec> mark_specs(const ModelConfig& config, int64_t pos) {
  return with_layouts(trunk_mark_specs(config, pos));
}

DeviceTrunk::DeviceTrunk(const ModelConfig& config, const Placement& placement, int64_t capacity)
    : cfg_(config), placement_(placement), capacity_(capacity) {
  if (capacity < 1) throw Error("decode state capacity " + std::to_string(capacity) + " is less than 1");
  if (capacity >= std::numeric_limits<int32_t>::max())
    throw Error("decode state capacity " + std::to_string(capacity) + " is too large for the CUDA backend (< 2^31)");
  const int S = placement.shards(), L = static_cast<int>(cfg_.num_hidden_layers);
  const int64_t d = cfg_.head_dim, W = cfg_.sliding_window, di = cfg_.index_head_dim;
  host_layers_.assign(L, LayerDev{});
  tables_.assign(S, nullptr);
  minus_inf_.assign(S, {});
  streams_.assign(S, nullptr);
  // Plan each shard's allocation: [table][mutable buffers, last_logits last][entries]. The mutable
  // ones (all but the entries) sit end to end so that a device mark is one copy a device.
  table_bytes_ = align_up(sizeof(LayerDev) * std::max(L, 1));
  std::vector<size_t> size(S, table_bytes_);
  struct Plan {
    float** ptr;
    size_t floats;
    int shard;
    bool minus_inf;
    bool entries;  // append-only (engine/decode_state.h): left alone by reset_mutable()
  };
  std::vector<Plan> plans;
  auto want = [&](float** ptr, size_t floats, int shard, bool minus_inf = false, bool entries = false) {
    plans.push_back({ptr, floats, shard, minus_inf, entries});
  };
  for (int l = 0; l < L; ++l) {
    const int s = placement.layer_shard[l];
    LayerDev& ld = host_layers_[l];
    want(&ld.window, static_cast<size_t>(W * d), s);
    const int64_t m = ratio_of(cfg_, l);
    auto comp = [&](CompressorDev& c, int64_t cc, int64_t w) {
      want(&c.pend_kv, static_cast<size_t>(m * cc * w), s);
      want(&c.pend_score, static_cast<size_t>(m * cc * w), s);
      if (cc == 2) {
        want(&c.prev_kv, static_cast<size_t>(m * w), s);
        want(&c.prev_score, static_cast<size_t>(m * w), s, true);
      }
      want(&c.entries, static_cast<size_t>((capacity / m) * w), s, false, true);
      c.m = static_cast<int32_t>(m), c.c = static_cast<int32_t>(cc), c.w = static_cast<int32_t>(w);
    };
    if (cfg_.layer_types[l] == LayerKind::kCSA) {
      comp(ld.cmp, 2, d);
      comp(ld.idx, 2, di);
    } else if (cfg_.layer_types[l] == LayerKind::kHCA) {
      comp(ld.cmp, 1, d);
    }
  }
  want(&last_logits_, static_cast<size_t>(cfg_.vocab_size), placement.last());
  std::stable_partition(plans.begin(), plans.end(), [](const Plan& p) { return !p.entries; });
  std::vector<size_t> offsets(plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    offsets[i] = size[plans[i].shard];
    size[plans[i].shard] += align_up(plans[i].floats * sizeof(float));
  }
  for (int s = 0; s < S; ++s) {
    memory_.emplace_back(placement.devices[s], size[s], "decode state");
    DeviceGuard guard(placement.devices[s]);
    check(cudaStreamCreateWithFlags(&streams_[s], cudaStreamNonBlocking), "cudaStreamCreate (state copies)");
  }
  mutable_bytes_.assign(S, 0);
  for (size_t i = 0; i < plans.size(); ++i) {
    uint8_t* base = memory_[plans[i].shard].as<uint8_t>();
    *plans[i].ptr = reinterpret_cast<float*>(base + offsets[i]);
    if (plans[i].minus_inf) minus_inf_[plans[i].shard].push_back({*plans[i].ptr, plans[i].floats});
    if (!plans[i].entries) mutable_bytes_[plans[i].shard] += align_up(plans[i].floats * sizeof(float));
  }
  for (int s = 0; s < S; ++s) tables_[s] = memory_[s].as<LayerDev>();
  upload_tables();
  reset();
  sync();
}

void DeviceTrunk::upload_tables() {
  const int L = static_cast<int>(cfg_.num_hidden_layers);
  for (int s = 0; s < placement_.shards(); ++s) {
    std::vector<LayerDev> table(std::max(L, 1));  // this device's layers; the others stay empty
    for (int l = 0; l < L; ++l)
      if (placement_.layer_shard[l] == s) table[l] = host_layers_[l];
    DeviceGuard guard(placement_.devices[s]);
    check(cudaMemcpyAsync(tables_[s], table.data(), sizeof(LayerDev) * table.size(), cudaMemcpyHostToDevice, streams_[s]),
          "upload of the state's layer table");
    check(cudaStreamSynchronize(streams_[s]), "upload of the state's layer table");
  }
}

DeviceTrunk::~DeviceTrunk() {
  for (int s = 0; s < static_cast<int>(streams_.size()); ++s) {
    if (!streams_[s]) continue;
    int prev = -1;
    cudaGetDevice(&prev);
    cudaSetDevice(placement_.devices[s]);
    cudaStreamSynchronize(streams_[s]);
    cudaStreamDestroy(streams_[s]);
    if (prev >= 0) cudaSetDevice(prev);
  }
}

size_t DeviceTrunk::device_bytes() const {
  size_t b = 0;
  for (const auto& m : memory_) b += m.bytes();
  for (const auto& m : journal_memory_) b += m.bytes();
  return b;
}

void DeviceTrunk::start_journal(int64_t pos0, int64_t rows) {
  if (pos0 < 0 || rows < 1) throw Error("a forward journal needs a position ≥ 0 and at least one row");
  if (rows > journal_capacity_) {
    sync();  // no copy of this state is in flight (a forward has synchronised its own streams)
    const int S = placement_.shards(), L = static_cast<int>(cfg_.num_hidden_layers);
    const size_t J = static_cast<size_t>(rows), d = static_cast<size_t>(cfg_.head_dim);
    std::vector<size_t> size(S, 0);
    std::vector<std::pair<float**, size_t>> plans;  // (pointer, floats) in order, per shard below
    std::vector<int> plan_shard;
    auto want = [&](float** ptr, size_t floats, int shard) {
      plans.push_back({ptr, floats});
      plan_shard.push_back(shard);
      size[shard] += align_up(floats * sizeof(float));
    };
    for (int l = 0; l < L; ++l) {
      const int s = placement_.layer_shard[l];
      LayerDev& ld = host_layers_[l];
      want(&ld.journal_window, J * d, s);
      for (CompressorDev* c : {&ld.cmp, &ld.idx}) {
        if (c->m == 0) continue;
        want(&c->journal_kv, J * static_cast<size_t>(c->c * c->w), s);
        want(&c->journal_score, J * static_cast<size_t>(c->c * c->w), s);
      }
    }
    want(&journal_logits_, J * static_cast<size_t>(cfg_.vocab_size), placement_.last());
    journal_memory_.clear();
    for (int s = 0; s < S; ++s) journal_memory_.emplace_back(placement_.devices[s], std::max<size_t>(size[s], 1), "forward journal");
    std::vector<size_t> used(S, 0);
    for (size_t i = 0; i < plans.size(); ++i) {
      const int s = plan_shard[i];
      *plans[i].first = reinterpret_cast<float*>(journal_memory_[s].as<uint8_t>() + used[s]);
      used[s] += align_up(plans[i].second * sizeof(float));
    }
    upload_tables();  // the kernels find the journal through the layer tables
    journal_capacity_ = rows;
  }
  journal_pos0_ = pos0;
  journal_rows_ = rows;
}

void DeviceTrunk::reset() {
  for (int s = 0; s < placement_.shards(); ++s) {
    DeviceGuard guard(placement_.devices[s]);
    check(cudaMemsetAsync(memory_[s].as<uint8_t>() + table_bytes_, 0, memory_[s].bytes() - table_bytes_, streams_[s]),
          "reset of the decode state");
    for (const auto& [ptr, n] : minus_inf_[s])
      check_launch(fill_f32(ptr, static_cast<int64_t>(n), -std::numeric_limits<float>::infinity(), streams_[s]),
                   "fill_f32 (state reset)");
  }
}

void DeviceTrunk::reset_mutable() {
  for (int s = 0; s < placement_.shards(); ++s) {
    DeviceGuard guard(placement_.devices[s]);
    check(cudaMemsetAsync(memory_[s].as<uint8_t>() + table_bytes_, 0, mutable_bytes_[s], streams_[s]),
          "reset of the decode state (a mark's parts)");
    for (const auto& [ptr, n] : minus_inf_[s])
      check_launch(fill_f32(ptr, static_cast<int64_t>(n), -std::numeric_limits<float>::infinity(), streams_[s]),
                   "fill_f32 (state reset)");
  }
}

void DeviceTrunk::save_mutable(std::vector<DeviceBuffer>& into) const {
  into.resize(placement_.shards());
  for (int s = 0; s < placement_.shards(); ++s)
    if (into[s].bytes() < mutable_bytes_[s]) into[s] = DeviceBuffer(placement_.devices[s], mutable_bytes_[s], "state mark");
  copy_mutable(into, true, true);
}

void DeviceTrunk::restore_mutable(const std::vector<DeviceBuffer>& from, bool wait) {
  if (static_cast<int>(from.size()) != placement_.shards()) throw Error("internal: a device mark of another placement");
  copy_mutable(from, false, wait);
}

void DeviceTrunk::copy_mutable(const std::vector<DeviceBuffer>& mark, bool to_mark, bool wait) const {
  for (int s = 0; s < placement_.shards(); ++s) {
    if (mutable_bytes_[s] == 0) continue;
    DeviceGuard guard(placement_.devices[s]);
    uint8_t* live = memory_[s].as<uint8_t>() + table_bytes_;
    check(cudaMemcpyAsync(to_mark ? mark[s].as<uint8_t>() : live, to_mark ? live : mark[s].as<uint8_t>(),
                          mutable_bytes_[s], cudaMemcpyDeviceToDevice, streams_[s]),
          to_mark ? "state mark (device copy)" : "rewind to a state mark (device copy)");
  }
  if (wait) sync();
}

void DeviceTrunk::sync() const {
  for (int s = 0; s < placement_.shards(); ++s) {
    DeviceGuard guard(placement_.devices[s]);
    check(cudaStreamSynchronize(streams_[s]), "decode state copy");
  }
}

std::vector<Segment> DeviceTrunk::segments(const std::vector<ClassSpec>& specs, int64_t pos) const {
  std::vector<Segment> out;
  size_t offset = 0;
  const int64_t d = cfg_.head_dim, W = cfg_.sliding_window;
  for (const ClassSpec& spec : specs) {
    const size_t bytes = spec.layout.nbytes();
    if (spec.part == Part::kLastLogits) {
      out.push_back({placement_.last(), reinterpret_cast<const uint8_t*>(last_logits_), bytes, offset});
      offset += bytes;
      continue;
    }
    const int shard = placement_.layer_shard[spec.layer];
    const LayerDev& ld = host_layers_[spec.layer];
    const CompressorDev& c = spec.indexer ? ld.idx : ld.cmp;
    if (spec.part == Part::kWindow) {
      // rows oldest first: position pos − rows + i lives in slot (pos − rows + i) % W: ≤ 2 runs.
      const int64_t rows = spec.layout.shape[0], s0 = (pos - rows) % W;
      const int64_t first = std::min(rows, W - s0);
      const size_t row_bytes = static_cast<size_t>(d) * sizeof(float);
      out.push_back({shard, reinterpret_cast<const uint8_t*>(ld.window + s0 * d), first * row_bytes, offset});
      if (rows > first)
        out.push_back({shard, reinterpret_cast<const uint8_t*>(ld.window), (rows - first) * row_bytes, offset + first * row_bytes});
      offset += bytes;
      continue;
    }
    const float* src = nullptr;
    switch (spec.part) {
      case Part::kEntries: src = c.entries; break;
      case Part::kPendKv: src = c.pend_kv; break;
      case Part::kPendScore: src = c.pend_score; break;
      case Part::kPrevKv: src = c.prev_kv; break;
      case Part::kPrevScore: src = c.prev_score; break;
      default: break;
    }
    out.push_back({shard, reinterpret_cast<const uint8_t*>(src), bytes, offset});
    offset += bytes;
  }
  return out;
}

CudaTrunkComponent::CudaTrunkComponent(const void* owner, const ModelConfig& config, const Placement& placement,
                                       int64_t capacity)
    : owner_(owner), cfg_(config), trunk_(config, placement, capacity) {}

std::vector<ClassLayout> CudaTrunkComponent::layout(int64_t pos) const {
  std::vector<ClassLayout> out;
  for (auto& s : trunk_specs(cfg_, pos)) out.push_back(std::move(s.layout));
  return out;
}

size_t CudaTrunkComponent::live_bytes(int64_t pos) const {
  size_t b = 0;
  for (const auto& s : trunk_specs(cfg_, pos)) b += s.layout.nbytes();
  return b;
}

std::vector<CacheClass> CudaTrunkComponent::export_classes(int64_t pos) const {
  if (pos < 0 || pos > trunk_.capacity())
    throw Error("cannot export a state at position " + std::to_string(pos) + " (capacity " +
                std::to_string(trunk_.capacity()) + ")");
  return export_specs(pos, trunk_specs(cfg_, pos));
}

namespace {

// A mark on the device (CudaTrunkComponent::export_mark): the trunk's mutable buffers, whole, one
// buffer a device, taken from the trunk's pool and given back to it when the mark goes.
class DeviceMark final : public ComponentMark {
 public:
  DeviceMark(const DeviceTrunk& trunk, int64_t pos) : owner(&trunk), position(pos), pool_(trunk.mark_pool()) {
    {
      std::lock_guard<std::mutex> lock(pool_->mutex);
      if (!pool_->free.empty()) {
        buffers = std::move(pool_->free.back());
        pool_->free.pop_back();
      }
    }
    trunk.save_mutable(buffers);
  }
  ~DeviceMark() override {
    std::lock_guard<std::mutex> lock(pool_->mutex);
    if (pool_->free.size() < 4) pool_->free.push_back(std::move(buffers));  // else freed here
  }
  size_t bytes() const override {
    size_t n = 0;
    for (const auto& b : buffers) n += b.bytes();
    return n;
  }

  const DeviceTrunk* owner;
  int64_t position;
  std::vector<DeviceBuffer> buffers;

 private:
  std::shared_ptr<DeviceTrunk::MarkPool> pool_;
};

// MEMRA_CUDA_HOST_MARK=1 (A/B timing): the host form of a mark, the live classes but the entries.
bool host_marks() {
  static const bool on = switch_one("MEMRA_CUDA_HOST_MARK");
  return on;
}

}  // namespace

std::shared_ptr<const ComponentMark> CudaTrunkComponent::export_mark(int64_t pos) const {
  if (pos < 0 || pos > trunk_.capacity())
    throw Error("cannot mark a state at position " + std::to_string(pos) + " (capacity " +
                std::to_string(trunk_.capacity()) + ")");
  if (host_marks()) return std::make_shared<ClassesMark>(export_specs(pos, mark_specs(cfg_, pos)));
  return std::make_shared<DeviceMark>(trunk_, pos);  // its copies queue behind the state's own
}

void CudaTrunkComponent::put_back(int64_t pos, const ComponentMark& mark, bool wait) {
  if (const auto* dm = dynamic_cast<const DeviceMark*>(&mark)) {
    if (dm->owner != &trunk_ || dm->position != pos)
      throw Error("cannot rewind to a mark of another state or position (marked at " + std::to_string(dm->position) +
                  ", rewinding to " + std::to_string(pos) + ")");
    trunk_.restore_mutable(dm->buffers, wait);
    return;
  }
  import_specs(pos, mark_classes_of(mark), mark_specs(cfg_, pos), false);
}

std::vector<CacheClass> CudaTrunkComponent::export_specs(int64_t pos, const std::vector<ClassSpec>& specs) const {
  const std::vector<Segment> segs = trunk_.segments(specs, pos);
  std::vector<CacheClass> out;
  std::vector<size_t> class_off;
  size_t total = 0;
  for (const auto& s : specs) {
    class_off.push_back(total);
    total += s.layout.nbytes();
    out.emplace_back(s.layout, std::vector<uint8_t>(s.layout.nbytes()));
  }
  class_off.push_back(total);
  trunk_.sync();
  // Chunk c: D2H into staging[c % 2]; while it flies, the host copies chunk c−1 out of the other one.
  const size_t chunk = std::min(kChunk, std::max<size_t>(total, 1));
  staging_[0].ensure(chunk, "state export staging");
  staging_[1].ensure(chunk, "state export staging");
  const size_t n_chunks = (total + chunk - 1) / chunk;
  std::vector<cudaEvent_t> events(trunk_.placement().shards() * 2, nullptr);
  auto event_of = [&](int shard, int buf) -> cudaEvent_t& { return events[shard * 2 + buf]; };
  auto enqueue = [&](size_t c) {
    const size_t begin = c * chunk, end = std::min(total, begin + chunk);
    uint8_t* dst = staging_[c % 2].get();
    std::vector<bool> touched(trunk_.placement().shards(), false);
    for_pieces(segs, begin, end, [&](const Segment& s, size_t at, size_t n) {
      DeviceGuard guard(trunk_.device(s.shard));
      check(cudaMemcpyAsync(dst + (at - begin), s.ptr + (at - s.offset), n, cudaMemcpyDeviceToHost,
                            trunk_.copy_stream(s.shard)),
            "state export (D2H)");
      touched[s.shard] = true;
    });
    for (int sh = 0; sh < trunk_.placement().shards(); ++sh) {
      if (!touched[sh]) continue;
      DeviceGuard guard(trunk_.device(sh));
      cudaEvent_t& ev = event_of(sh, static_cast<int>(c % 2));
      if (!ev) check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
      check(cudaEventRecord(ev, trunk_.copy_stream(sh)), "cudaEventRecord");
    }
    return touched;
  };
  auto finish = [&](size_t c, const std::vector<bool>& touched) {
    for (int sh = 0; sh < trunk_.placement().shards(); ++sh)
      if (touched[sh]) check(cudaEventSynchronize(event_of(sh, static_cast<int>(c % 2))), "state export (D2H)");
    const size_t begin = c * chunk, end = std::min(total, begin + chunk);
    const uint8_t* src = staging_[c % 2].get();
    for (size_t k = 0; k + 1 < class_off.size(); ++k) {
      const size_t a = std::max(begin, class_off[k]), b = std::min(end, class_off[k + 1]);
      if (a < b) std::memcpy(out[k].bytes.data() + (a - class_off[k]), src + (a - begin), b - a);
    }
  };
  std::vector<bool> pending;
  try {
    for (size_t c = 0; c < n_chunks; ++c) {
      std::vector<bool> touched = enqueue(c);
      if (c > 0) finish(c - 1, pending);
      pending = std::move(touched);
    }
    if (n_chunks > 0) finish(n_chunks - 1, pending);
  } catch (...) {
    trunk_.sync();
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
    throw;
  }
  for (cudaEvent_t e : events)
    if (e) cudaEventDestroy(e);
  return out;
}

void CudaTrunkComponent::check_classes(int64_t pos, const std::vector<CacheClass>& classes,
                                       const std::vector<ClassSpec>& specs) const {
  if (pos < 0) throw Error("decode state position " + std::to_string(pos) + " is negative");
  if (pos > trunk_.capacity())
    throw negative("capacity " + std::to_string(trunk_.capacity()) + " is smaller than the state's position " +
                       std::to_string(pos),
                   "restore with a capacity of at least " + std::to_string(pos));
  for (size_t i = 0; i < std::max(specs.size(), classes.size()); ++i) {
    if (i >= classes.size())
      throw Error("cache class " + specs[i].layout.name + " is missing (a state at position " + std::to_string(pos) +
                  " has it)");
    if (i >= specs.size())
      throw Error("cache class " + classes[i].name + " is not expected at position " + std::to_string(pos));
    const ClassLayout& want = specs[i].layout;
    const CacheClass& have = classes[i];
    if (have.name != want.name)
      throw Error("cache class " + std::to_string(i) + " is " + have.name + ", expected " + want.name);
    if (have.dtype != want.dtype)
      throw Error("cache class " + have.name + " is " + dtype_name(have.dtype) + ", expected " + dtype_name(want.dtype));
    if (have.shape != want.shape)
      throw Error("cache class " + have.name + " has shape " + shape_text(have.shape) + ", expected " +
                  shape_text(want.shape));
    if (have.bytes.size() != want.nbytes())
      throw Error("cache class " + have.name + " holds " + std::to_string(have.bytes.size()) + " bytes, its shape needs " +
                  std::to_string(want.nbytes()));
  }
}

void CudaTrunkComponent::import_classes(int64_t pos, const std::vector<CacheClass>& classes) {
  trunk_.drop_journal();
  import_specs(pos, classes, trunk_specs(cfg_, pos), true);
}

void CudaTrunkComponent::import_mark(int64_t pos, const ComponentMark& mark) {
  trunk_.drop_journal();
  put_back(pos, mark);
}

void CudaTrunkComponent::import_mark_keeping(int64_t pos, const ComponentMark& mark, int64_t rows) {
  const int64_t j0 = trunk_.journal_pos0(), jn = trunk_.journal_rows();
  if (j0 < 0 || j0 != pos || rows < 0 || rows > jn)
    throw Error("cannot keep " + std::to_string(rows) + " rows of a forward from position " + std::to_string(pos) +
                    ": the state holds " +
                    (j0 < 0 ? std::string("no journal")
                            : "a journal of " + std::to_string(jn) + " rows from " + std::to_string(j0)),
                "run the forward with SequenceStep::journal, and rewind before any other forward");
  trunk_.drop_journal();
  put_back(pos, mark, false);  // keep_rows and the logits' copy queue behind it on the copy streams
  if (rows == 0) return trunk_.sync();
  const Placement& pl = trunk_.placement();
  for (int s = 0; s < pl.shards(); ++s) {
    KeepArgs a;
    a.layers = trunk_.table(s);
    a.first = static_cast<int>(std::find(pl.layer_shard.begin(), pl.layer_shard.end(), s) - pl.layer_shard.begin());
    a.count = static_cast<int>(std::count(pl.layer_shard.begin(), pl.layer_shard.end(), s));
    a.pos0 = static_cast<int32_t>(pos);
    a.rows = static_cast<int32_t>(rows);
    a.d = static_cast<int>(cfg_.head_dim);
    a.W = static_cast<int>(cfg_.sliding_window);
    DeviceGuard guard(trunk_.device(s));
    check_launch(keep_rows(a, trunk_.copy_stream(s)), "keep_rows");
  }
  {
    const int64_t V = cfg_.vocab_size;
    DeviceGuard guard(trunk_.device(pl.last()));
    check(cudaMemcpyAsync(trunk_.last_logits(), trunk_.journal_logits() + (rows - 1) * V, V * sizeof(float),
                          cudaMemcpyDeviceToDevice, trunk_.copy_stream(pl.last())),
          "last logits from the forward journal");
  }
  trunk_.sync();
}

void CudaTrunkComponent::import_specs(int64_t pos, const std::vector<CacheClass>& classes,
                                      const std::vector<ClassSpec>& specs, bool full) {
  check_classes(pos, classes, specs);
  const std::vector<Segment> segs = trunk_.segments(specs, pos);
  std::vector<size_t> class_off;
  size_t total = 0;
  for (const auto& s : specs) {
    class_off.push_back(total);
    total += s.layout.nbytes();
  }
  class_off.push_back(total);
  trunk_.sync();
  if (full)
    trunk_.reset();
  else
    trunk_.reset_mutable();
  // Chunk c: host copy into staging[c % 2] (after that buffer's previous H2D finished), then H2D.
  const size_t chunk = std::min(kChunk, std::max<size_t>(total, 1));
  staging_[0].ensure(chunk, "state import staging");
  staging_[1].ensure(chunk, "state import staging");
  const int S = trunk_.placement().shards();
  std::vector<cudaEvent_t> events(S * 2, nullptr);
  std::vector<bool> in_flight(S * 2, false);
  try {
    for (size_t c = 0; c * chunk < total; ++c) {
      const int b = static_cast<int>(c % 2);
      for (int sh = 0; sh < S; ++sh)
        if (in_flight[sh * 2 + b]) check(cudaEventSynchronize(events[sh * 2 + b]), "state import (H2D)");
      const size_t begin = c * chunk, end = std::min(total, begin + chunk);
      uint8_t* stage = staging_[b].get();
      for (size_t k = 0; k + 1 < class_off.size(); ++k) {
        const size_t a = std::max(begin, class_off[k]), e = std::min(end, class_off[k + 1]);
        if (a < e) std::memcpy(stage + (a - begin), classes[k].bytes.data() + (a - class_off[k]), e - a);
      }
      std::vector<bool> touched(S, false);
      for_pieces(segs, begin, end, [&](const Segment& s, size_t at, size_t n) {
        DeviceGuard guard(trunk_.device(s.shard));
        check(cudaMemcpyAsync(const_cast<uint8_t*>(s.ptr) + (at - s.offset), stage + (at - begin), n,
                              cudaMemcpyHostToDevice, trunk_.copy_stream(s.shard)),
              "state import (H2D)");
        touched[s.shard] = true;
      });
      for (int sh = 0; sh < S; ++sh) {
        in_flight[sh * 2 + b] = touched[sh];
        if (!touched[sh]) continue;
        DeviceGuard guard(trunk_.device(sh));
        if (!events[sh * 2 + b]) check(cudaEventCreateWithFlags(&events[sh * 2 + b], cudaEventDisableTiming), "cudaEventCreate");
        check(cudaEventRecord(events[sh * 2 + b], trunk_.copy_stream(sh)), "cudaEventRecord");
      }
    }
    trunk_.sync();
  } catch (...) {
    trunk_.sync();
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
    throw;
  }
  for (cudaEvent_t e : events)
    if (e) cudaEventDestroy(e);
}

void CudaTrunkComponent::export_stream(int64_t pos, uint8_t* dst, size_t size, const ChunkFn& on_chunk) const {
  if (pos < 0 || pos > trunk_.capacity())
    throw Error("cannot export a state at position " + std::to_string(pos) + " (capacity " +
                std::to_string(trunk_.capacity()) + ")");
  const std::vector<ClassSpec> specs = trunk_specs(cfg_, pos);
  const std::vector<Segment> segs = trunk_.segments(specs, pos);
  std::vector<size_t> begin;  // class k's bytes: [begin[k], begin[k + 1])
  size_t total = 0;
  for (const auto& s : specs) {
    begin.push_back(total);
    total += s.layout.nbytes();
  }
  begin.push_back(total);
  if (size < total) throw Error("export buffer of " + std::to_string(size) + " bytes is smaller than the state's " +
                                std::to_string(total));
  // Largest classes first (StreamPlan says whether their chunks interleave), each class's chunks in
  // order: a caller hashing class by class (StreamHasher) has many classes in flight early, and only
  // small ones left at the end.
  std::vector<size_t> order(specs.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return begin[a + 1] - begin[a] > begin[b + 1] - begin[b]; });
  struct Chunk {
    size_t offset, bytes;
  };
  const size_t step = std::max<size_t>(plan_.chunk, 4096);
  std::vector<Chunk> chunks;
  if (plan_.interleave) {
    for (size_t round = 0, more = 1; more; ++round) {
      more = 0;
      for (size_t k : order) {
        const size_t a = begin[k] + round * step;
        if (a >= begin[k + 1]) continue;
        chunks.push_back({a, std::min(step, begin[k + 1] - a)});
        more = 1;
      }
    }
  } else {
    for (size_t k : order)
      for (size_t a = begin[k]; a < begin[k + 1]; a += step) chunks.push_back({a, std::min(step, begin[k + 1] - a)});
  }
  trunk_.sync();
  const int S = trunk_.placement().shards();
  std::vector<cudaEvent_t> events(chunks.size() * S, nullptr);
  auto release = [&] {
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
  };
  try {
    for (size_t c = 0; c < chunks.size(); ++c) {  // enqueue everything: the copy engines stay busy
      std::vector<bool> touched(S, false);
      for_pieces(segs, chunks[c].offset, chunks[c].offset + chunks[c].bytes, [&](const Segment& s, size_t at, size_t n) {
        DeviceGuard guard(trunk_.device(s.shard));
        check(cudaMemcpyAsync(dst + at, s.ptr + (at - s.offset), n, cudaMemcpyDeviceToHost, trunk_.copy_stream(s.shard)),
              "state export (D2H)");
        touched[s.shard] = true;
      });
      for (int sh = 0; sh < S; ++sh) {
        if (!touched[sh]) continue;
        DeviceGuard guard(trunk_.device(sh));
        check(cudaEventCreateWithFlags(&events[c * S + sh], cudaEventDisableTiming), "cudaEventCreate");
        check(cudaEventRecord(events[c * S + sh], trunk_.copy_stream(sh)), "cudaEventRecord");
      }
    }
    for (size_t c = 0; c < chunks.size(); ++c) {  // … while the host consumes the chunks as they land
      for (int sh = 0; sh < S; ++sh)
        if (events[c * S + sh]) check(cudaEventSynchronize(events[c * S + sh]), "state export (D2H)");
      if (on_chunk) on_chunk(chunks[c].offset, chunks[c].bytes);
    }
  } catch (...) {
    trunk_.sync();
    release();
    throw;
  }
  release();
}

std::vector<Hash128> CudaTrunkComponent::hash_on_devices(int64_t pos, const std::function<void()>& beside,
                                                         const uint8_t* landed) const {
  if (pos < 0 || pos > trunk_.capacity())
    throw Error("cannot export a state at position " + std::to_string(pos) + " (capacity " +
                std::to_string(trunk_.capacity()) + ")");
  constexpr size_t kShortStream = 240;  // XXH3's short paths end here; class_hash.cu is the long one
  const std::vector<ClassSpec> specs = trunk_specs(cfg_, pos);
  const std::vector<Segment> segs = trunk_.segments(specs, pos);
  const int S = trunk_.placement().shards();
  // Per device: its classes' descriptors, the digests' room, then the prefixes, uploaded as one block.
  struct DeviceJobs {
    std::vector<size_t> classes;
    std::vector<HashClassDev> desc;
    std::string prefixes;
    std::vector<uint64_t> out;
    cudaStream_t stream = nullptr;
  };
  std::vector<DeviceJobs> jobs(S);
  std::vector<std::pair<size_t, size_t>> on_host;  // (class, offset): streams of ≤ 240 bytes, split classes
  size_t offset = 0;
  for (size_t k = 0; k < specs.size(); ++k) {
    const ClassLayout& l = specs[k].layout;
    const size_t n = l.nbytes(), at = offset;
    offset += n;
    const std::string prefix = class_hash_prefix({l.name, dtype_name(l.dtype), &l.shape, nullptr, n});
    HashClassDev d;
    int parts = 0, shard = -1;
    bool split = false;  // more than two runs, or on two devices: never made by segments(), hashed on the host
    for_pieces(segs, at, at + n, [&](const Segment& s, size_t from, size_t bytes) {
      split = split || parts == 2 || (shard >= 0 && s.shard != shard);
      if (split) return;
      shard = s.shard;
      d.part[parts] = s.ptr + (from - s.offset);
      d.part_bytes[parts++] = bytes;
    });
    if (prefix.size() + n <= kShortStream || split || shard < 0) {
      on_host.emplace_back(k, at);
      continue;
    }
    d.prefix_bytes = prefix.size();
    d.prefix = reinterpret_cast<const uint8_t*>(jobs[shard].prefixes.size());  // an offset until uploaded
    jobs[shard].prefixes += prefix;
    jobs[shard].desc.push_back(d);
    jobs[shard].classes.push_back(k);
  }
  const Xxh3Keys keys = xxh3_keys(xxh3_default_secret());
  if (hash_memory_.size() != static_cast<size_t>(S)) hash_memory_.resize(S);
  auto wait_all = [&] {
    for (int sh = 0; sh < S; ++sh) {
      if (!jobs[sh].stream) continue;
      DeviceGuard guard(trunk_.device(sh));
      cudaStreamSynchronize(jobs[sh].stream);
      cudaStreamDestroy(jobs[sh].stream);
      jobs[sh].stream = nullptr;
    }
  };
  trunk_.sync();
  try {
    for (int sh = 0; sh < S; ++sh) {
      DeviceJobs& j = jobs[sh];
      if (j.desc.empty()) continue;
      DeviceGuard guard(trunk_.device(sh));
      static_assert(sizeof(HashClassDev) % 8 == 0);
      const size_t desc_bytes = j.desc.size() * sizeof(HashClassDev), out_bytes = 2 * j.desc.size() * sizeof(uint64_t);
      uint8_t* base = hash_memory_[sh].ensure(trunk_.device(sh), desc_bytes + out_bytes + j.prefixes.size(), "state class hashes");
      for (HashClassDev& d : j.desc) d.prefix = base + desc_bytes + out_bytes + reinterpret_cast<size_t>(d.prefix);
      check(cudaStreamCreateWithFlags(&j.stream, cudaStreamNonBlocking), "cudaStreamCreate (class hashes)");
      check(cudaMemcpyAsync(base, j.desc.data(), desc_bytes, cudaMemcpyHostToDevice, j.stream), "class hashes (H2D)");
      check(cudaMemcpyAsync(base + desc_bytes + out_bytes, j.prefixes.data(), j.prefixes.size(), cudaMemcpyHostToDevice, j.stream),
            "class hashes (H2D)");
      check(class_hashes_device(reinterpret_cast<const HashClassDev*>(base), static_cast<int>(j.desc.size()), keys,
                                reinterpret_cast<uint64_t*>(base + desc_bytes), j.stream),
            "class_hashes_device");
    }
    if (beside) beside();
    for (int sh = 0; sh < S; ++sh) {  // a pageable D2H waits for its stream: only now
      DeviceJobs& j = jobs[sh];
      if (!j.stream) continue;
      DeviceGuard guard(trunk_.device(sh));
      j.out.resize(2 * j.desc.size());
      check(cudaMemcpyAsync(j.out.data(), hash_memory_[sh].get() + j.desc.size() * sizeof(HashClassDev),
                            j.out.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost, j.stream),
            "class hashes (D2H)");
      check(cudaStreamSynchronize(j.stream), "class hashes");
    }
  } catch (...) {
    wait_all();
    throw;
  }
  wait_all();
  std::vector<Hash128> hashes(specs.size());
  for (const DeviceJobs& j : jobs)
    for (size_t c = 0; c < j.classes.size(); ++c) hashes[j.classes[c]] = Hash128{j.out[2 * c], j.out[2 * c + 1]};
  if (landed)
    for (const auto& [k, at] : on_host) {
      const ClassLayout& l = specs[k].layout;
      hashes[k] = class_hash({l.name, dtype_name(l.dtype), &l.shape, landed + at, l.nbytes()});
    }
  return hashes;
}

std::vector<Hash128> CudaTrunkComponent::device_class_hashes(int64_t pos) const { return hash_on_devices(pos, {}, nullptr); }

void CudaTrunkComponent::export_stream_hashed(int64_t pos, uint8_t* dst, size_t size, const ChunkFn& on_chunk,
                                              std::vector<Hash128>& hashes) const {
  hashes = hash_on_devices(pos, [&] { export_stream(pos, dst, size, on_chunk); }, dst);
}

void CudaTrunkComponent::import_stream(int64_t pos, const uint8_t* src, size_t size) {
  trunk_.drop_journal();
  if (pos < 0) throw Error("decode state position " + std::to_string(pos) + " is negative");
  if (pos > trunk_.capacity())
    throw negative("capacity " + std::to_string(trunk_.capacity()) + " is smaller than the state's position " +
                       std::to_string(pos),
                   "restore with a capacity of at least " + std::to_string(pos));
  const std::vector<ClassSpec> specs = trunk_specs(cfg_, pos);
  const std::vector<Segment> segs = trunk_.segments(specs, pos);
  size_t total = 0;
  for (const auto& s : specs) total += s.layout.nbytes();
  if (size < total) throw Error("import buffer of " + std::to_string(size) + " bytes is smaller than the state's " +
                                std::to_string(total));
  trunk_.sync();
  trunk_.reset();
  for_pieces(segs, 0, total, [&](const Segment& s, size_t at, size_t n) {
    DeviceGuard guard(trunk_.device(s.shard));
    check(cudaMemcpyAsync(const_cast<uint8_t*>(s.ptr) + (at - s.offset), src + at, n, cudaMemcpyHostToDevice,
                          trunk_.copy_stream(s.shard)),
          "state import (H2D)");
  });
  trunk_.sync();
}

}  // namespace memra::cuda
