// The CUDA backend (cuda_backend.h): validation, rounds, the layer pipeline over the devices,
// logits and traces.
#include "cuda_backend.h"

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "ab_switch.h"
#include "core/error.h"
#include "cuda_check.h"
#include "model/model.h"
#include "pdl.h"
#include "synthetic_weights.h"

namespace memra::cuda {

namespace {

class CudaState final : public State {
 public:
  explicit CudaState(int64_t capacity) : State(capacity) {}
  void advance_by(int64_t tokens) { advance(tokens); }
};

// MEMRA_CUDA_GRAPHS, read at each round (so a benchmark can compare both ways on one backend).
bool graphs_enabled() { return switch_on("MEMRA_CUDA_GRAPHS"); }

double us_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
}

// Synthetic weights, made once a process for each (geometry, seed, device, layers, ends) while a
// backend holds them: they are a function of those alone, and a second copy of a V4-Flash layer
// is 13 GB (`memra bench` runs cuda and cuda-fast side by side). Here, not in the .cu: the
// memra-emu build instruments .cu atomics for its race checks.
std::shared_ptr<const DeviceWeights> shared_synthetic_weights(const ModelConfig& cfg, uint64_t seed, int device,
                                                              int first_layer, int last_layer, bool embed, bool head) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<const DeviceWeights>> made;
  const std::string key = cfg.geometry_json().dump() + "|" + std::to_string(seed) + "|" + std::to_string(device) + "|" +
                          std::to_string(first_layer) + "|" + std::to_string(last_layer) + "|" + (embed ? "e" : "-") +
                          (head ? "h" : "-");
  std::lock_guard<std::mutex> lock(mutex);
  if (auto held = made[key].lock()) return held;
  std::shared_ptr<const DeviceWeights> w = synthetic_weights(cfg, seed, device, first_layer, last_layer, embed, head);
  made[key] = w;
  return w;
}

}  // namespace

void check_supported(const ModelConfig& c) {
  auto refuse = [](const std::string& what) {
    throw Error("the CUDA backend does not support this model: " + what, "run it with --backend cpu");
  };
  if (c.hc_mult < 1 || c.hc_mult > kMaxHc) refuse("hc_mult " + std::to_string(c.hc_mult) + " (at most 8)");
  if (c.num_experts_per_tok > 16) refuse("num_experts_per_tok " + std::to_string(c.num_experts_per_tok) + " (at most 16)");
  if (c.n_routed_experts > 6144) refuse("n_routed_experts " + std::to_string(c.n_routed_experts) + " (at most 6144)");
  if (c.n_shared_experts != 1) refuse("n_shared_experts " + std::to_string(c.n_shared_experts) + " (exactly 1)");
  if (c.head_dim > 12288 || c.index_head_dim > 12288) refuse("head_dim above 12288");
  if ((c.num_attention_heads * c.head_dim) % std::max<int64_t>(c.o_groups, 1) != 0)
    refuse("num_attention_heads·head_dim not divisible by o_groups");
  if (c.scoring_func != "sqrtsoftplus" && c.scoring_func != "sigmoid" && c.scoring_func != "softmax")
    refuse("scoring_func " + c.scoring_func);
}

struct CudaBackend::Item {
  const SequenceStep* step = nullptr;
  CudaTrunkComponent* trunk = nullptr;
  int64_t pos0 = 0, T = 0, done = 0;
};

CudaBackend::CudaBackend(const RealizationInfo& realization, const Model& model, const BackendOptions& options)
    : realization_(realization), model_(model), cfg_(model.config()) {
  if (realization.device != Device::kCuda)
    throw Error("realization " + std::string(realization.name) + " does not run on CUDA");
  check_supported(cfg_);
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  std::vector<int> devices = options.devices.empty() ? std::vector<int>{0} : options.devices;
  std::set<int> distinct;
  for (int d : devices) {
    if (d < 0 || d >= count)
      throw Error("CUDA device " + std::to_string(d) + " does not exist (" + std::to_string(count) + " visible)",
                  "list them with memra devices");
    if (!distinct.insert(d).second) throw Error("CUDA device " + std::to_string(d) + " is listed twice in --devices");
  }
  if (static_cast<int64_t>(devices.size()) > cfg_.num_hidden_layers)
    throw Error("--devices lists " + std::to_string(devices.size()) + " GPUs for a model of " +
                    std::to_string(cfg_.num_hidden_layers) + " layers",
                "use at most one GPU per layer");
  placement_ = split_layers(devices, cfg_.num_hidden_layers);
  for (size_t s = 0; s + 1 < devices.size(); ++s) {  // peer access both ways where the topology allows
    for (auto [a, b] : {std::pair{devices[s], devices[s + 1]}, std::pair{devices[s + 1], devices[s]}}) {
      int can = 0;
      check(cudaDeviceCanAccessPeer(&can, a, b), "cudaDeviceCanAccessPeer");
      if (!can) continue;  // cudaMemcpyPeerAsync then stages through the host
      DeviceGuard guard(a);
      const cudaError_t err = cudaDeviceEnablePeerAccess(b, 0);
      if (err == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
      else check(err, "cudaDeviceEnablePeerAccess");
    }
  }
  const bool fast = !realization.exact;
  const int S = placement_.shards();
  for (int s = 0; s < S; ++s) {
    int first = -1, last = -1;
    for (int l = 0; l < cfg_.num_hidden_layers; ++l)
      if (placement_.layer_shard[l] == s) {
        if (first < 0) first = l;
        last = l + 1;
      }
    if (first < 0) first = last = 0;
    weights_.push_back(options.synthetic_seed
                           ? shared_synthetic_weights(cfg_, options.synthetic_seed, placement_.devices[s], first, last, s == 0, s == S - 1)
                           : upload_weights(model, placement_.devices[s], first, last, s == 0, s == S - 1));
    shards_.push_back(std::make_unique<Shard>(cfg_, placement_.devices[s], fast));
    shards_.back()->set_moe_path(options.moe_per_expert ? MoePath::kPerExpert : MoePath::kFused);
    if (options.time_linears) shards_.back()->set_time_linears();
  }
  handoff_.assign(S, nullptr);
  for (int s = 1; s < S; ++s) {
    DeviceGuard guard(placement_.devices[s - 1]);
    check(cudaEventCreateWithFlags(&handoff_[s], cudaEventDisableTiming), "cudaEventCreate");
  }
  round_rows_ = switch_count("MEMRA_CUDA_ROUND_ROWS", fast ? 2048 : 256);
  pinned_logits_ = switch_on("MEMRA_CUDA_PINNED_LOGITS");
  logits_out_ = switch_on("MEMRA_CUDA_LOGITS_OUT");
  logits_out_host_max_ = static_cast<size_t>(switch_zero_or_count("MEMRA_CUDA_LOGITS_OUT_HOST_KIB", 64 << 10)) << 10;
  if (const char* p = std::getenv("MEMRA_CUDA_PROFILE_FORWARDS")) {
    for (const char* c = p; *c;) {
      char* end = nullptr;
      const long long v = std::strtoll(c, &end, 10);
      if (end == c) break;
      profile_forwards_.push_back(v);
      c = *end == ',' ? end + 1 : end;
    }
  }
}

CudaBackend::~CudaBackend() {
  if (!graphs_.empty() || !phase_events_.empty()) {
    DeviceGuard guard(placement_.devices[0]);
    for (auto& [k, e] : graphs_) cudaGraphExecDestroy(e);
    for (cudaEvent_t e : phase_events_) cudaEventDestroy(e);
  }
  for (int s = 1; s < static_cast<int>(handoff_.size()); ++s)
    if (handoff_[s]) {
      int prev = -1;
      cudaGetDevice(&prev);
      cudaSetDevice(placement_.devices[s - 1]);
      cudaEventDestroy(handoff_[s]);
      if (prev >= 0) cudaSetDevice(prev);
    }
}

HostBuffer CudaBackend::host_buffer(size_t bytes) const {
  void* p = nullptr;
  DeviceGuard guard(placement_.devices[0]);
  const cudaError_t err = cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocPortable);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw Error("cannot allocate " + std::to_string(bytes) + " bytes of pinned host memory (" + cudaGetErrorString(err) + ")",
                "free host memory, or snapshot a smaller state");
  }
  return HostBuffer(static_cast<uint8_t*>(p), bytes, [](uint8_t* q) { cudaFreeHost(q); });
}

void CudaBackend::set_probes(const ForwardProbes& probes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  probes_ = probes;
}

std::map<std::string, double> CudaBackend::device_report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  double weights = 0, scratch = 0, ms = 0, flop = 0, fp8_bytes = 0, fp8_values = 0, fp4_bytes = 0, fp4_values = 0;
  for (const auto& w : weights_) {
    weights += static_cast<double>(w->up.bytes());
    fp8_bytes += static_cast<double>(w->up.fp8().bytes), fp8_values += static_cast<double>(w->up.fp8().values);
    fp4_bytes += static_cast<double>(w->up.fp4().bytes), fp4_values += static_cast<double>(w->up.fp4().values);
  }
  std::map<std::string, SiteTime> sites;
  for (const auto& s : shards_) {
    scratch += static_cast<double>(s->scratch_bytes());
    double m = 0, f = 0;
    s->collect_linear_timing(&m, &f);
    ms += m, flop += f;
    s->collect_timeline(sites);
  }
  std::map<std::string, double> out = {{"weights_bytes", weights}, {"scratch_bytes", scratch},
                                       {"weights_holders", static_cast<double>(weights_.empty() ? 0 : weights_[0].use_count())}};
  // Packed matrices (codes + scales as stored) and their logical values, when the model has any.
  if (fp8_values > 0) out["weights_fp8_bytes"] = fp8_bytes, out["weights_fp8_values"] = fp8_values;
  if (fp4_values > 0) out["weights_fp4_bytes"] = fp4_bytes, out["weights_fp4_values"] = fp4_values;
  if (flop > 0) out["linear_ms"] = ms, out["linear_flop"] = flop;
  for (const auto& [name, t] : sites) out["timeline_ms:" + name] = t.ms, out["timeline_launches:" + name] = t.launches;
  if (!shards_.empty()) {  // MEMRA_CUDA_GRAPH_MARKS=1: "graph_mark_us:NNNN stream site", in enqueue order
    const auto marks = shards_[0]->collect_graph_marks();
    char key[48];
    for (size_t i = 0; i < marks.size(); ++i) {
      std::snprintf(key, sizeof key, "graph_mark_us:%04zu ", i);
      out[key + marks[i].first] = marks[i].second;
    }
  }
  if (phase_forwards_ > 0) {  // ForwardProbes::phases: means over the forwards since the last report
    for (const auto& [k, v] : phase_sums_) out["phase_us:" + k] = v / static_cast<double>(phase_forwards_);
    out["phase_forwards"] = static_cast<double>(phase_forwards_);
  }
  phase_sums_.clear();
  phase_forwards_ = 0;
  if (graph_kernels_ > 0) {
    out["graph_kernels"] = static_cast<double>(graph_kernels_);
    out["graph_kernel_edges"] = static_cast<double>(graph_kernel_edges_);
    out["graph_programmatic_edges"] = static_cast<double>(graph_programmatic_edges_);
    out["graph_critical_kernels"] = static_cast<double>(graph_critical_kernels_);
  }
  return out;
}

namespace {

// The most kernels on one dependency path of the graph (edges through event or memcpy nodes count
// as dependencies, those nodes not as kernels): however wide the graph, a round takes at least that
// many dependent launches one after another (bench: × the measured launch step).
template <typename IsKernel>
int64_t longest_kernel_chain(const std::vector<cudaGraphNode_t>& nodes, const std::vector<cudaGraphNode_t>& from,
                             const std::vector<cudaGraphNode_t>& to, IsKernel&& is_kernel) {
  std::map<cudaGraphNode_t, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = i;
  std::vector<std::vector<size_t>> next(nodes.size());
  std::vector<int> pending(nodes.size(), 0);
  for (size_t e = 0; e < from.size(); ++e) {
    const auto a = index.find(from[e]), b = index.find(to[e]);
    if (a == index.end() || b == index.end()) continue;
    next[a->second].push_back(b->second);
    ++pending[b->second];
  }
  std::vector<int64_t> depth(nodes.size(), 0);  // kernels on the longest path ending at the node
  std::vector<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.push_back(i), depth[i] = is_kernel(nodes[i]);
  int64_t longest = 0;
  while (!ready.empty()) {  // Kahn's order: a node's depth is final when its last predecessor is done
    const size_t i = ready.back();
    ready.pop_back();
    longest = std::max(longest, depth[i]);
    for (size_t j : next[i]) {
      depth[j] = std::max(depth[j], depth[i] + (is_kernel(nodes[j]) ? 1 : 0));
      if (--pending[j] == 0) ready.push_back(j);
    }
  }
  return longest;
}

}  // namespace

// The last captured round's kernels, kernel → kernel edges, and how many of those are programmatic
// (launch.cuh): device_report() shows whether PDL reached the graph.
void CudaBackend::count_graph(cudaGraph_t graph) const {
  size_t n_nodes = 0, n_edges = 0;
  check(cudaGraphGetNodes(graph, nullptr, &n_nodes), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(n_nodes);
  if (n_nodes > 0) check(cudaGraphGetNodes(graph, nodes.data(), &n_nodes), "cudaGraphGetNodes");
  check(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &n_edges), "cudaGraphGetEdges");
  std::vector<cudaGraphNode_t> from(n_edges), to(n_edges);
  std::vector<cudaGraphEdgeData> data(n_edges);
  if (n_edges > 0) check(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &n_edges), "cudaGraphGetEdges");
  auto is_kernel = [](cudaGraphNode_t node) {
    cudaGraphNodeType t;
    return cudaGraphNodeGetType(node, &t) == cudaSuccess && t == cudaGraphNodeTypeKernel;
  };
  int64_t kernels = 0, kernel_edges = 0, programmatic = 0;
  for (cudaGraphNode_t node : nodes) kernels += is_kernel(node);
  for (size_t i = 0; i < n_edges; ++i) {
    if (!is_kernel(from[i]) || !is_kernel(to[i])) continue;
    ++kernel_edges;
    programmatic += data[i].type == cudaGraphDependencyTypeProgrammatic;
  }
  graph_kernels_ = kernels, graph_kernel_edges_ = kernel_edges, graph_programmatic_edges_ = programmatic;
  graph_critical_kernels_ = longest_kernel_chain(nodes, from, to, is_kernel);
}

std::unique_ptr<State> CudaBackend::new_state(int64_t capacity) const {
  auto state = std::make_unique<CudaState>(capacity);
  state->attach(std::make_unique<CudaTrunkComponent>(this, cfg_, placement_, capacity));
  return state;
}

CudaTrunkComponent& CudaBackend::trunk_of(const State& state) const {
  auto* trunk = dynamic_cast<CudaTrunkComponent*>(state.component("trunk"));
  if (!trunk || trunk->owner() != this)
    throw Error("the state was not made by this " + name() + " backend",
                "make states with the backend that runs them (new_state, or restore into one)");
  return *trunk;
}

std::vector<float> CudaBackend::last_logits(const State& state) const {
  CudaTrunkComponent& trunk = trunk_of(state);
  if (state.position() == 0) return {};
  std::vector<float> out(cfg_.vocab_size);
  DeviceGuard guard(placement_.devices[placement_.last()]);
  trunk.trunk().sync();
  check(cudaMemcpy(out.data(), trunk.trunk().last_logits(), out.size() * sizeof(float), cudaMemcpyDeviceToHost),
        "last logits copy");
  return out;
}

void CudaBackend::sync() const {
  for (const auto& s : shards_) s->sync();
}

void CudaBackend::forward(std::span<const SequenceStep> batch) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto entry = std::chrono::steady_clock::now();
  validate_batch(cfg_, batch);  // states present and distinct, capacity, token ids: before any state moves
  ++forwards_;
  const bool profiled = std::find(profile_forwards_.begin(), profile_forwards_.end(), forwards_) != profile_forwards_.end();
  if (profiled) cudaProfilerStart();
  struct StopProfiler {
    bool on;
    ~StopProfiler() {
      if (on) cudaProfilerStop();
    }
  } stop_profiler{profiled};
  std::vector<Item> items;
  for (const SequenceStep& step : batch) {
    Item it;
    it.step = &step;
    it.trunk = &trunk_of(*step.state);
    if (!dynamic_cast<CudaState*>(step.state))
      throw Error("internal: a CUDA trunk component in a state the CUDA backend did not make");
    it.pos0 = step.state->position();
    it.T = static_cast<int64_t>(step.tokens.size());
    // A journal describes the last forward only (State::rewind keeping rows).
    if (step.journal && it.T > 0) it.trunk->trunk().start_journal(it.pos0, it.T);
    else it.trunk->trunk().drop_journal();
    if (it.T > 0) items.push_back(it);
  }
  auto round_start = entry;  // a later round's host work is timed from the previous round's end
  for (;;) {
    std::vector<int> in_round;
    std::vector<int64_t> take;
    int64_t budget = round_rows_;
    for (int i = 0; i < static_cast<int>(items.size()) && budget > 0; ++i) {
      const int64_t left = items[i].T - items[i].done;
      if (left == 0) continue;
      in_round.push_back(i);
      take.push_back(std::min(left, budget));
      budget -= take.back();
    }
    if (in_round.empty()) break;
    run_round(items, in_round, take, round_start);
    round_start = std::chrono::steady_clock::now();
    for (size_t j = 0; j < in_round.size(); ++j) items[in_round[j]].done += take[j];
  }
  if (probes_.phases) {
    phase_sums_["host_total"] += us_since(entry);
    ++phase_forwards_;
  }
  for (const Item& it : items) {
    static_cast<CudaState*>(it.step->state)->advance_by(it.T);
    if (ForwardTrace* tr = it.step->trace) {  // shapes of the arrays run_round appended
      const int64_t n = cfg_.hc_mult, D = cfg_.hidden_size, k = cfg_.num_experts_per_tok, K = cfg_.index_topk;
      for (int64_t l = 0; l < cfg_.num_hidden_layers; ++l) {
        const std::string L = std::to_string(l);
        if (tr->arrays.count("hidden." + L)) tr->shapes["hidden." + L] = {it.T, n, D};
        if (!tr->arrays.count("router." + L + ".experts")) continue;  // a taps-only trace
        tr->shapes["router." + L + ".experts"] = {it.T, k};
        if (cfg_.mlp_layer_types[l] == MlpKind::kLearned)
          tr->shapes["router." + L + ".margin"] = tr->shapes["router." + L + ".scale"] = {it.T};
        if (cfg_.layer_types[l] == LayerKind::kCSA) {
          tr->shapes["indexer." + L + ".selected"] = {it.T, K};
          tr->shapes["indexer." + L + ".margin"] = tr->shapes["indexer." + L + ".scale"] = {it.T};
        }
      }
    }
  }
}

void CudaBackend::run_round(std::vector<Item>& items, const std::vector<int>& in_round, const std::vector<int64_t>& take,
                            std::chrono::steady_clock::time_point start) const {
  const int S = placement_.shards();
  const int64_t V = cfg_.vocab_size;
  RoundPlan plan;
  struct Out {
    int seq = 0;
    int64_t logit_begin = 0, logit_count = 0;  // in the round's logit rows
    bool last = false;                         // this round holds the sequence's final token
  };
  std::vector<Out> outs;
  bool tracing = false;
  for (size_t j = 0; j < in_round.size(); ++j) {
    const Item& it = items[in_round[j]];
    const int s = plan_add_sequence(plan, cfg_, static_cast<int32_t>(it.pos0 + it.done),
                                    it.step->tokens.subspan(it.done, take[j]));
    if (it.step->journal) plan.seqs[s].journal_row = static_cast<int32_t>(it.done);
    Out o;
    o.seq = s;
    o.last = it.done + take[j] == it.T;
    o.logit_begin = static_cast<int64_t>(plan.logit_rows.size());
    const int32_t row0 = plan.seqs[s].row0;
    if (it.step->logits || it.step->journal) {  // a journal keeps every row's logits
      for (int64_t t = 0; t < take[j]; ++t) plan.logit_rows.push_back(row0 + static_cast<int32_t>(t));
    } else if (o.last) {
      plan.logit_rows.push_back(row0 + static_cast<int32_t>(take[j] - 1));
    }
    o.logit_count = static_cast<int64_t>(plan.logit_rows.size()) - o.logit_begin;
    outs.push_back(o);
    tracing = tracing || it.step->trace;
  }
  // Traces that ask for "hidden.L" arrays only (a drafter's taps, ForwardTrace::only) are served
  // by device copies inside the round (Shard::set_taps), so such a round keeps its graph and side
  // streams; any other trace records every stage launch by launch.
  bool taps_only = tracing;
  std::vector<int> tapped;  // layers, ascending
  for (int i : in_round) {
    const ForwardTrace* tr = items[i].step->trace;
    if (!tr) continue;
    if (tr->only.empty()) taps_only = false;
    for (const std::string& name : tr->only) {
      const std::string prefix = "hidden.";
      char* end = nullptr;
      const long l = name.rfind(prefix, 0) == 0 ? std::strtol(name.c_str() + prefix.size(), &end, 10) : -1;
      if (l < 0 || l >= cfg_.num_hidden_layers || !end || *end != '\0') {
        taps_only = false;
        continue;
      }
      if (std::find(tapped.begin(), tapped.end(), static_cast<int>(l)) == tapped.end()) tapped.push_back(static_cast<int>(l));
    }
  }
  std::sort(tapped.begin(), tapped.end());
  if (!taps_only) tapped.clear();
  for (int s = 0; s < S; ++s) {
    std::vector<int> mine;  // the tapped layers this device runs
    for (int l : tapped)
      if (l >= weights_[s]->first && l < weights_[s]->first + static_cast<int>(weights_[s]->layers.size())) mine.push_back(l);
    shards_[s]->set_taps(std::move(mine));
  }
  const bool staged_tracing = tracing && !taps_only;  // the launch-by-launch trace of every stage
  // The caller's logits through pinned staging up to this many bytes a round (past it the staging
  // would pin more host memory than the copy's setup is worth): a D2H into the caller's pageable
  // memory is staged by the driver, 7-8 us more a decode step (run 221, H100; MEMRA_CUDA_PINNED_LOGITS=0).
  constexpr size_t kStagedLogitsMax = size_t{64} << 20;
  struct Staged {
    float* to;
    size_t at, bytes;
  };
  std::vector<Staged> unstage;  // the caller's rows: staging → its memory after the round's sync
  std::vector<size_t> staged_at(in_round.size(), 0);
  size_t staged = 0;
  for (size_t j = 0; j < in_round.size(); ++j) {
    const Item& it = items[in_round[j]];
    if (!it.step->logits || outs[j].logit_count == 0) continue;
    const size_t bytes = static_cast<size_t>(outs[j].logit_count * V) * sizeof(float);
    staged_at[j] = staged;
    unstage.push_back({it.step->logits + it.done * V, staged, bytes});
    staged += bytes;
  }
  const bool stage_logits = pinned_logits_ && staged > 0 && staged <= kStagedLogitsMax;
  if (stage_logits) logits_host_.ensure(staged, "logits staging");
  else unstage.clear();  // straight into the caller's memory (pageable)
  // One device: the head's logits_out moves the rows for the trunk's last logits and the journal
  // inside the round (run 222), and the caller's rows into the staging up to logits_out_host_max_
  // bytes a round; the rest is copied after the round.
  const bool dev_by_kernel = logits_out_ && S == 1;
  const bool host_by_kernel = dev_by_kernel && stage_logits && staged <= logits_out_host_max_;
  if (dev_by_kernel) {
    plan.logit_dests.resize(plan.logit_rows.size());
    bool any = false;
    for (size_t j = 0; j < in_round.size(); ++j) {
      const Item& it = items[in_round[j]];
      const Out& o = outs[j];
      for (int64_t t = 0; t < o.logit_count; ++t) {
        LogitDest& d = plan.logit_dests[o.logit_begin + t];
        if (o.last && t == o.logit_count - 1) d.to[0] = it.trunk->trunk().last_logits();
        if (it.step->logits && host_by_kernel) d.to[1] = reinterpret_cast<float*>(logits_host_.get() + staged_at[j]) + t * V;
        if (it.step->journal) d.to[2] = it.trunk->trunk().journal_logits() + (it.done + t) * V;
        any = any || d.to[0] || d.to[1] || d.to[2];
      }
    }
    if (!any) plan.logit_dests.clear();  // nothing for the kernel to move
  }
  for (int s = 0; s < S; ++s) {
    std::vector<const LayerDev*> tables;
    for (int i : in_round) tables.push_back(items[i].trunk->trunk().table(s));
    shards_[s]->upload_plan(plan, tables, probes_.timeline, probes_.graph_marks, /*copy_now=*/false);
  }
  // One CUDA graph per launch signature replays a whole round (embedding, layers, head) with one
  // launch: the exact realization on one device, untraced, fused MoE (nothing in it waits on the
  // host). The plan's contents (positions, states, tokens) were uploaded above and are read on the
  // device, so one graph serves every decode step of a batch shape within the shape's buckets
  // (Shard::upload_plan). MEMRA_CUDA_GRAPHS=0 (or ForwardProbes::no_graphs) launches each kernel instead.
  Shard& first_shard = *shards_[0];
  std::optional<PdlOff> no_pdl;  // a timeline round times each launch alone
  if (first_shard.timeline_on()) no_pdl.emplace();
  const bool graphs = graphs_enabled() && !probes_.no_graphs && S == 1 && realization_.exact && !staged_tracing &&
                      first_shard.moe_path() == MoePath::kFused && !sync_each_launch() && !first_shard.timeline_on();
  // ForwardProbes::phases (one device): events before the plan's copy, before the round, after it
  // and after the logits copies; the host's clock at the same points.
  const bool phased = probes_.phases && S == 1;
  if (phased && phase_events_.empty()) {
    DeviceGuard guard(first_shard.device());
    phase_events_.assign(4, nullptr);
    for (cudaEvent_t& e : phase_events_) check(cudaEventCreate(&e), "cudaEventCreate (phases)");
  }
  auto phase_event = [&](int i) {
    if (phased) check(cudaEventRecord(phase_events_[i], first_shard.stream()), "cudaEventRecord (phases)");
  };
  if (phased) phase_sums_["host_plan"] += us_since(start);
  phase_event(0);
  // before the round, outside its graph: a memcpy node at its head made the graph 10 us longer (run
  // 221), a kernel reading the staged plan there saved nothing (run 222)
  for (const auto& sh : shards_) sh->copy_plan();
  phase_event(1);
  const auto launch_start = std::chrono::steady_clock::now();
  if (graphs) {
    DeviceGuard guard(first_shard.device());
    const std::vector<uint64_t> sig = first_shard.launch_signature();
    auto it = graphs_.find(sig);
    if (it == graphs_.end()) {
      if (graphs_.size() >= 32) {  // a bounded cache: shapes changed a lot, start again
        for (auto& [k, e] : graphs_) cudaGraphExecDestroy(e);
        graphs_.clear();
      }
      cudaGraph_t graph = nullptr;
      check(cudaStreamBeginCapture(first_shard.stream(), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
      try {
        first_shard.embed(weights_[0]->ends);
        const DeviceWeights& dw = *weights_[0];
        for (size_t li = 0; li < dw.layers.size(); ++li) first_shard.layer(dw.layers[li], dw.first + static_cast<int>(li), nullptr);
        first_shard.head(weights_[0]->ends);
      } catch (...) {
        cudaStreamEndCapture(first_shard.stream(), &graph);
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        throw;
      }
      check(cudaStreamEndCapture(first_shard.stream(), &graph), "cudaStreamEndCapture");
      count_graph(graph);
      cudaGraphExec_t exec = nullptr;
      // per-node priorities (pdl.h LaunchPriority: the indexer chain) instead of the launch stream's
      const cudaError_t err = cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority);
      cudaGraphDestroy(graph);
      check(err, "cudaGraphInstantiate");
      it = graphs_.emplace(sig, exec).first;
    }
    check(cudaGraphLaunch(it->second, first_shard.stream()), "cudaGraphLaunch");
    if (phased) phase_sums_["host_launch"] += us_since(launch_start);
  } else {
    shards_[0]->embed(weights_[0]->ends);
    const int R = plan.rows();
    const size_t x_bytes = static_cast<size_t>(R) * cfg_.hc_mult * cfg_.hidden_size * sizeof(float);
    for (int s = 0; s < S; ++s) {
      Shard& sh = *shards_[s];
      if (s > 0) {
        Shard& prev = *shards_[s - 1];
        DeviceGuard guard(prev.device());
        check(cudaMemcpyPeerAsync(sh.X(), sh.device(), prev.X(), prev.device(), x_bytes, prev.stream()),
              "peer copy of the hc streams");
        check(cudaEventRecord(handoff_[s], prev.stream()), "cudaEventRecord (handoff)");
        DeviceGuard guard2(sh.device());
        check(cudaStreamWaitEvent(sh.stream(), handoff_[s], 0), "cudaStreamWaitEvent (handoff)");
      }
      const DeviceWeights& dw = *weights_[s];
      for (size_t li = 0; li < dw.layers.size(); ++li) {
        const int l = dw.first + static_cast<int>(li);
        LayerTrace lt;
        sh.layer(dw.layers[li], l, staged_tracing ? &lt : nullptr);
        if (!staged_tracing) continue;
        const std::string L = std::to_string(l);
        const int64_t nD = cfg_.hc_mult * cfg_.hidden_size, k = cfg_.num_experts_per_tok, K = cfg_.index_topk;
        for (size_t j = 0; j < in_round.size(); ++j) {
          ForwardTrace* tr = items[in_round[j]].step->trace;
          if (!tr) continue;
          const int64_t r0 = plan.seqs[outs[j].seq].row0, T = take[j];
          auto& hid = tr->arrays["hidden." + L];
          hid.insert(hid.end(), lt.hidden.begin() + r0 * nD, lt.hidden.begin() + (r0 + T) * nD);
          auto& ex = tr->arrays["router." + L + ".experts"];
          for (int64_t i = r0 * k; i < (r0 + T) * k; ++i) ex.push_back(static_cast<float>(lt.experts[i]));
          if (cfg_.mlp_layer_types[l] == MlpKind::kLearned) {
            auto& mg = tr->arrays["router." + L + ".margin"];
            mg.insert(mg.end(), lt.router_margin.begin() + r0, lt.router_margin.begin() + r0 + T);
            auto& rs = tr->arrays["router." + L + ".scale"];
            rs.insert(rs.end(), lt.router_scale.begin() + r0, lt.router_scale.begin() + r0 + T);
          }
          if (cfg_.layer_types[l] == LayerKind::kCSA) {
            auto& se = tr->arrays["indexer." + L + ".selected"];
            for (int64_t i = r0 * K; i < (r0 + T) * K; ++i) se.push_back(static_cast<float>(lt.selected[i]));
            auto& im = tr->arrays["indexer." + L + ".margin"];
            im.insert(im.end(), lt.indexer_margin.begin() + r0, lt.indexer_margin.begin() + r0 + T);
            auto& is = tr->arrays["indexer." + L + ".scale"];
            is.insert(is.end(), lt.indexer_scale.begin() + r0, lt.indexer_scale.begin() + r0 + T);
            auto& ib = tr->arrays["indexer." + L + ".boundary"];
            ib.insert(ib.end(), lt.indexer_boundary.begin() + r0, lt.indexer_boundary.begin() + r0 + T);
          }
        }
      }
    }
    shards_[S - 1]->head(weights_[S - 1]->ends);
    if (phased) phase_sums_["host_launch"] += us_since(launch_start);
  }
  phase_event(2);
  if (taps_only) {  // the tapped hc streams, row ranges per traced sequence
    const int64_t nD = cfg_.hc_mult * cfg_.hidden_size;
    for (int s = 0; s < S; ++s)
      for (int l = weights_[s]->first; l < weights_[s]->first + static_cast<int>(weights_[s]->layers.size()); ++l) {
        if (std::find(tapped.begin(), tapped.end(), l) == tapped.end()) continue;
        const std::vector<float> rows = shards_[s]->tap_hidden(l);
        for (size_t j = 0; j < in_round.size(); ++j) {
          ForwardTrace* tr = items[in_round[j]].step->trace;
          if (!tr) continue;
          const int64_t r0 = plan.seqs[outs[j].seq].row0, T = take[j];
          auto& hid = tr->arrays["hidden." + std::to_string(l)];
          hid.insert(hid.end(), rows.begin() + r0 * nD, rows.begin() + (r0 + T) * nD);
        }
      }
  }
  Shard& last = *shards_[S - 1];
  const float* logits = last.logits();
  DeviceGuard guard(last.device());
  for (size_t j = 0; j < in_round.size(); ++j) {
    const Item& it = items[in_round[j]];
    const Out& o = outs[j];
    if (o.last && !dev_by_kernel)
      check(cudaMemcpyAsync(it.trunk->trunk().last_logits(), logits + (o.logit_begin + o.logit_count - 1) * V,
                            V * sizeof(float), cudaMemcpyDeviceToDevice, last.stream()),
            "last logits copy");
    if (it.step->logits && o.logit_count > 0 && !host_by_kernel) {
      const size_t bytes = static_cast<size_t>(o.logit_count * V) * sizeof(float);
      float* to = stage_logits ? reinterpret_cast<float*>(logits_host_.get() + staged_at[j]) : it.step->logits + it.done * V;
      check(cudaMemcpyAsync(to, logits + o.logit_begin * V, bytes, cudaMemcpyDeviceToHost, last.stream()), "logits copy");
    }
    if (it.step->journal && o.logit_count > 0 && !dev_by_kernel)
      check(cudaMemcpyAsync(it.trunk->trunk().journal_logits() + it.done * V, logits + o.logit_begin * V,
                            o.logit_count * V * sizeof(float), cudaMemcpyDeviceToDevice, last.stream()),
            "logits copy (forward journal)");
  }
  phase_event(3);
  for (const auto& sh : shards_) sh->sync();
  for (const Staged& u : unstage) std::memcpy(u.to, logits_host_.get() + u.at, u.bytes);
  if (phased) {
    phase_sums_["host_after_launch"] += us_since(launch_start);
    const char* spans[] = {"device_plan_copy", "device_round", "device_logits_copies"};
    float total = 0;
    for (int i = 0; i < 3; ++i) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, phase_events_[i], phase_events_[i + 1]), "cudaEventElapsedTime (phases)");
      phase_sums_[spans[i]] += ms * 1e3;
      total += ms;
    }
    phase_sums_["device_total"] += total * 1e3;
  }
}

}  // namespace memra::cuda
