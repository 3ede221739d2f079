// The CUDA backend: realizations `cuda` (exact) and `cuda-fast` (realization.h) of the DeepSeek-V4
// forward on one or more GPUs. The model is split by layers over the devices of --devices (the
// embedding on the first, the hc head and LM head on the last); a round's [rows, n, D] hc streams
// move between devices by peer copy. Every kernel is the same on every device, so two GPUs give the
// bits of one (docs/scaling.md).
//
// A forward call runs in rounds of at most round_rows() rows taken from the batch's sequences in
// order; a sequence longer than a round continues in the next one, which on the exact realization
// is the same as chunked prefill and so changes nothing.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "device_state.h"
#include "engine/backend.h"
#include "shard.h"
#include "weights.h"

namespace memra::cuda {

class CudaBackend final : public Backend {
 public:
  CudaBackend(const RealizationInfo& realization, const Model& model, const BackendOptions& options);
  ~CudaBackend() override;

  const RealizationInfo& realization() const override { return realization_; }
  const ModelConfig& config() const override { return cfg_; }
  std::unique_ptr<State> new_state(int64_t capacity) const override;
  void forward(std::span<const SequenceStep> batch) const override;
  std::vector<float> last_logits(const State& state) const override;
  void sync() const override;
  HostBuffer host_buffer(size_t bytes) const override;  // pinned
  std::map<std::string, double> device_report() const override;
  void set_probes(const ForwardProbes& probes) const override;
  const Placement& placement() const { return placement_; }
  int round_rows() const { return round_rows_; }
  // The trunk component of a state made by this backend (throws Error otherwise).
  CudaTrunkComponent& trunk_of(const State& state) const;

 private:
  struct Item;
  void run_round(std::vector<Item>& items, const std::vector<int>& in_round, const std::vector<int64_t>& take,
                 std::chrono::steady_clock::time_point start) const;
  void count_graph(cudaGraph_t graph) const;

  const RealizationInfo& realization_;
  const Model& model_;
  ModelConfig cfg_;
  Placement placement_;
  int round_rows_ = 256;
  // per shard; synthetic ones shared by every backend of the process made from the same (geometry,
  // seed, device, layers, ends): `memra bench` runs cuda and cuda-fast on one copy
  std::vector<std::shared_ptr<const DeviceWeights>> weights_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<cudaEvent_t> handoff_;  // [s]: shard s−1's streams are ready for shard s
  mutable std::mutex mutex_;
  mutable ForwardProbes probes_;  // set_probes: read by each round (run_round)
  // MEMRA_CUDA_PROFILE_FORWARDS=i,j,…: forward calls (counted from 1) run between
  // cudaProfilerStart/Stop, for `ncu --profile-from-start off` (bench/gpu_bench.sh).
  std::vector<int64_t> profile_forwards_;
  mutable int64_t forwards_ = 0;
  // Captured rounds by Shard::launch_signature (one device, exact, untraced): run_round replays them.
  mutable std::map<std::vector<uint64_t>, cudaGraphExec_t> graphs_;
  mutable int64_t graph_kernels_ = 0, graph_kernel_edges_ = 0, graph_programmatic_edges_ = 0;  // the last capture
  mutable int64_t graph_critical_kernels_ = 0;
  // The caller's logits come back through pinned staging (an async copy, then a host memcpy after
  // the round's sync) instead of a copy into pageable memory, which the driver stages itself
  // (MEMRA_CUDA_PINNED_LOGITS=0: that copy; A/B timing, the same bits).
  bool pinned_logits_ = true;
  mutable PinnedBuffer logits_host_;
  // One device: the head's logits_out kernel (logits_out.cu) moves the logit rows to the trunk's last
  // logits, the pinned staging and the journal inside the round (its graph), as the plan's
  // RoundPlan::logit_dests name them; MEMRA_CUDA_LOGITS_OUT=0: the copies after the round (A/B).
  bool logits_out_ = true;
  // The most bytes of the caller's rows a round that logits_out stores into the staging (over the
  // bus, from the SMs); more go by the copy engine after the round (MEMRA_CUDA_LOGITS_OUT_HOST_KIB).
  size_t logits_out_host_max_ = 0;
  // ForwardProbes::phases: events around a round's parts (plan copy, round, logits copies, end),
  // and the phases' sums over the forwards since the last device_report.
  mutable std::vector<cudaEvent_t> phase_events_;
  mutable std::map<std::string, double> phase_sums_;
  mutable int64_t phase_forwards_ = 0;
};

// Checks that `config` is within what the kernels support (throws Error naming the limit).
void check_supported(const ModelConfig& config);

}  // namespace memra::cuda
