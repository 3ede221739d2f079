// One device's share of a forward (shard.h): plan upload, scratch, and the layer sites in the
// CPU reference's order (lib/engine/cpu_backend.cpp, cpu_attention.cpp, cpu_moe.cpp, cpu_mhc.cpp).
#include "shard.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "ab_switch.h"
#include "core/error.h"
#include "cuda_check.h"
#include "pdl.h"
#include "engine/cpu_layer.h"
#include "linear_fast.h"

namespace memra::cuda {

namespace {

size_t align_up(size_t v) { return (v + 255) / 256 * 256; }

// cuda-fast rounds of at least this many rows run the MoE as per-expert cuBLAS GEMMs.
constexpr int kFastPerExpertRows = 128;
// cuda-fast linears on packed (FP8/FP4) weights with fewer rows than this run the exact kernel on
// the packed codes (decode steps, small experts' row groups); larger ones dequantise and use cuBLAS.
constexpr int kFastDenseRows = 64;
// cuda-fast rounds of at least this many rows run the core attention on tensor cores.
constexpr int kFastAttentionRows = 64;
// The tensor-core attention's 16-bit outputs go to wo_a's cuBLAS GEMM (LinearArgs::x16), which the
// exact kernels refuse: every round it takes must also take cuBLAS for a packed wo_a.
static_assert(kFastAttentionRows >= kFastDenseRows);
// cuda-fast rounds of at least this many rows score the indexer on tensor cores (indexer_fast.cu)
// and make hc_pre's mix as a TF32 GEMM (Shard::hc_mix_fast).
constexpr int kFastIndexerRows = 64;
constexpr int kFastHcMixRows = 64;

// The 16-bit type cuda-fast's cuBLAS GEMM takes its activations in, for weights of type t on a round
// of `rows`: the weights' own bf16 / f16, a packed matrix's bf16 (dequantised from kFastDenseRows rows
// on; below that the exact kernel reads its codes), none (kF32) for f32 weights (TF32 on f32 rows).
WType fast_activation_type(WType t, int rows) {
  if (wtype_packed(t)) return rows >= kFastDenseRows ? WType::kBF16 : WType::kF32;
  return t == WType::kBF16 || t == WType::kF16 ? t : WType::kF32;
}
// Buckets of the visible compressed entries (upload_plan).
constexpr int kCsaBucket = 1024;
constexpr int kHcaBucket = 256;

Scoring scoring_of(const std::string& s) {
  if (s == "sigmoid") return Scoring::kSigmoid;
  if (s == "softmax") return Scoring::kSoftmax;
  return Scoring::kSqrtSoftplus;
}

}  // namespace

int plan_add_sequence(RoundPlan& plan, const ModelConfig& cfg, int32_t pos0, std::span<const int32_t> tokens) {
  const int s = plan.seq_count();
  SeqDesc d;
  d.pos0 = pos0;
  d.T = static_cast<int32_t>(tokens.size());
  d.row0 = plan.rows();
  plan.seqs.push_back(d);
  for (size_t t = 0; t < tokens.size(); ++t) {
    const int32_t pos = pos0 + static_cast<int32_t>(t);
    plan.tokens.push_back(tokens[t]);
    plan.row_pos.push_back(pos);
    plan.row_seq.push_back(s);
    if (cfg.csa_rate > 0) {
      plan.max_visible_csa = std::max<int>(plan.max_visible_csa, (pos + 1) / cfg.csa_rate);
      if ((pos + 1) % cfg.csa_rate == 0) plan.closings_csa.push_back({s, static_cast<int32_t>((pos + 1) / cfg.csa_rate - 1)});
    }
    if (cfg.hca_rate > 0) {
      plan.max_visible_hca = std::max<int>(plan.max_visible_hca, (pos + 1) / cfg.hca_rate);
      if ((pos + 1) % cfg.hca_rate == 0) plan.closings_hca.push_back({s, static_cast<int32_t>((pos + 1) / cfg.hca_rate - 1)});
    }
  }
  return s;
}

Shard::Shard(const ModelConfig& config, int device, bool fast) : cfg_(config), device_(device), fast_(fast) {
  DeviceGuard guard(device_);
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  main_stream_ = stream_;
  for (cudaStream_t& s : side_) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate (side)");
  for (cudaEvent_t* e : {&fork_event_, &qr_ready_})
    check(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate (fork/join)");
  for (cudaEvent_t& e : join_event_) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate (fork/join)");
  overlap_env_ = switch_on("MEMRA_CUDA_OVERLAP");
  if (fast_) {
    const cublasStatus_t st = cublasCreate(&cublas_);
    if (st != CUBLAS_STATUS_SUCCESS) check_text(cublasGetStatusString(st), "cublasCreate");
  }
  max_keys_ = attention_max_keys(static_cast<int>(cfg_.head_dim), device_);
  time_linears_ = switch_one("MEMRA_CUDA_TIME_LINEARS");
  hc_split_ = switch_on("MEMRA_CUDA_HC_SPLIT");
  hc_post_epilogue_ = switch_on("MEMRA_CUDA_HC_POST_EPILOGUE");
  hc_norm_ = switch_on("MEMRA_CUDA_HC_NORM");
  comb_apart_ = switch_on("MEMRA_CUDA_HC_COMB_APART");
  if (switch_on("MEMRA_CUDA_INDEXER_PRIORITY")) {
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    indexer_priority_ = greatest;  // 0 where the device has one priority
  }
  side_chains_ = switch_on("MEMRA_CUDA_SIDE_CHAINS");
}

namespace {

// Long enough for the host to enqueue a whole decode round (or one layer of per-expert launches)
// behind it: the timeline then sees the device's own time per launch.
constexpr double kTimelineSpinMs = 40.0;

// The indexer chain goes first (launch priority) up to this many visible compressed entries: measured
// at 512 (2k, −4 us a CSA layer) and 8192 (32k, +3.6 us), runs 96-97; the boundary is the top-k's
// cluster form's (topk.cu).
constexpr int kIndexerPriorityEntries = 2048;

}  // namespace

void Shard::launched(cudaError_t err, const char* what) {
  check_launch(err, what);
  if (timeline_on_) timeline_->mark(site_prefix_ + what);
  if (marks_on_) {
    const char* on = "main";
    for (int i = 0; i < kSides; ++i)
      if (stream_ == side_[i] && stream_ != main_stream_) on = kSideNames[i];
    marks_->add(stream_, std::string(on) + " " + site_prefix_ + what);
  }
}

std::vector<std::pair<std::string, double>> Shard::collect_graph_marks() const {
  DeviceGuard guard(device_);
  if (!marks_on_ || !marks_) return {};
  return marks_->collect(main_stream_);
}

// Launches inside the scope go to `to` (every launcher reads Shard::stream_ when it is called).
class OnStream {
 public:
  OnStream(Shard& shard, cudaStream_t to) : shard_(shard), saved_(shard.stream_) { shard.stream_ = to; }
  ~OnStream() { shard_.stream_ = saved_; }
  OnStream(const OnStream&) = delete;
  OnStream& operator=(const OnStream&) = delete;

 private:
  Shard& shard_;
  cudaStream_t saved_;
};

bool Shard::overlap(const LayerTrace* trace) const {
  return overlap_env_ && !fast_ && !trace && !time_linears_ && !timeline_on_ && moe_path_ == MoePath::kFused &&
         !sync_each_launch();
}

void Shard::fork_to(int side) {
  check(cudaEventRecord(fork_event_, main_stream_), "cudaEventRecord (fork)");
  check(cudaStreamWaitEvent(side_[side], fork_event_, 0), "cudaStreamWaitEvent (fork)");
}

void Shard::hc_mix_fast(HcPreArgs& hp, const char* what) {
  // MEMRA_CUDA_HC_MIX_GEMM=0 (A/B timing): hc_pre's own f32 mix kernels at every row count.
  static const bool on = switch_on("MEMRA_CUDA_HC_MIX_GEMM");
  hp.mix_given = hp.mix_unscaled = fast_ && on && hp.partial && hp.rows >= kFastHcMixRows;
  if (!hp.mix_given) return;
  const int nD = hp.n * hp.D, M = (2 + hp.n) * hp.n;
  // partial [rows, M] = X [rows, nD] · fnᵀ: a linear with f32 weights, which cuda-fast runs on TF32.
  DevMatrix fn;
  fn.ptr = hp.fn, fn.type = WType::kF32, fn.rows = M, fn.cols = nD;
  run_linear(matrix_args(fn, hp.X, nD, hp.rows, hp.partial, M), what);  // hc_pre scales it by the rows' rms
}

// hc_comb for the hc_pre just launched, on kSideComb; join_comb() before comb's first reader.
void Shard::launch_comb(const HcPreArgs& hp, const char* what) {
  fork_to(kSideComb);
  {
    OnStream on(*this, side_[kSideComb]);
    launched(hc_comb(hp, stream_), what);
  }
  comb_pending_ = true;
}

void Shard::join_comb() {
  if (!comb_pending_) return;
  join_from(kSideComb);
  comb_pending_ = false;
}

void Shard::join_from(int side) {
  check(cudaEventRecord(join_event_[side], side_[side]), "cudaEventRecord (join)");
  check(cudaStreamWaitEvent(main_stream_, join_event_[side], 0), "cudaStreamWaitEvent (join)");
}

void Shard::link(int from, int to) {
  check(cudaEventRecord(join_event_[from], side_[from]), "cudaEventRecord (link)");
  check(cudaStreamWaitEvent(side_[to], join_event_[from], 0), "cudaStreamWaitEvent (link)");
}

void Shard::collect_timeline(std::map<std::string, SiteTime>& into) {
  DeviceGuard guard(device_);
  if (timeline_) timeline_->collect(into);
}

void Shard::time_begin() {
  const size_t i = 2 * timing_flop_.size();
  while (timing_events_.size() < i + 2) {
    cudaEvent_t e;
    check(cudaEventCreate(&e), "cudaEventCreate (linear timing)");
    timing_events_.push_back(e);
  }
  check(cudaEventRecord(timing_events_[i], stream_), "cudaEventRecord (linear timing)");
}

void Shard::time_end(double flop) {
  check(cudaEventRecord(timing_events_[2 * timing_flop_.size() + 1], stream_), "cudaEventRecord (linear timing)");
  timing_flop_.push_back(flop);
}

void Shard::collect_linear_timing(double* ms, double* flop) {
  DeviceGuard guard(device_);
  check(cudaStreamSynchronize(stream_), "stream synchronisation");
  *ms = *flop = 0;
  for (size_t p = 0; p < timing_flop_.size(); ++p) {
    float t = 0;
    check(cudaEventElapsedTime(&t, timing_events_[2 * p], timing_events_[2 * p + 1]), "cudaEventElapsedTime (linear timing)");
    *ms += t;
    *flop += timing_flop_[p];
  }
  timing_flop_.clear();
}

Shard::~Shard() {
  int prev = -1;
  cudaGetDevice(&prev);
  cudaSetDevice(device_);
  if (stream_) cudaStreamSynchronize(stream_);
  if (cublas_) cublasDestroy(cublas_);
  for (cudaEvent_t e : timing_events_) cudaEventDestroy(e);
  for (cudaEvent_t e : {fork_event_, qr_ready_})
    if (e) cudaEventDestroy(e);
  for (cudaEvent_t e : join_event_)
    if (e) cudaEventDestroy(e);
  for (cudaStream_t s : side_)
    if (s) cudaStreamDestroy(s);
  if (stream_) cudaStreamDestroy(stream_);
  if (prev >= 0) cudaSetDevice(prev);
}

std::vector<float> Shard::tap_hidden(int layer) const {
  DeviceGuard guard(device_);
  const auto tap = std::find(tap_layers_.begin(), tap_layers_.end(), layer);
  if (tap == tap_layers_.end()) throw Error("internal: layer " + std::to_string(layer) + " was not tapped this round");
  const size_t count = static_cast<size_t>(rows()) * cfg_.hc_mult * cfg_.hidden_size;
  std::vector<float> out(count);
  check(cudaMemcpyAsync(out.data(), taps_.get() + static_cast<size_t>(tap - tap_layers_.begin()) * count, count * sizeof(float),
                        cudaMemcpyDeviceToHost, stream_),
        "tap copy (hc streams, to the host)");
  check(cudaStreamSynchronize(stream_), "tap copy (hc streams, to the host)");
  return out;
}

void Shard::sync() const {
  DeviceGuard guard(device_);
  check(cudaStreamSynchronize(stream_), "stream synchronisation");
}

std::vector<uint64_t> Shard::launch_signature() const {
  std::vector<uint64_t> sig = {static_cast<uint64_t>(plan_.rows()), static_cast<uint64_t>(plan_.seq_count()),
                               plan_.logit_rows.size(), plan_.closings_csa.size(), plan_.closings_hca.size(),
                               static_cast<uint64_t>(csa_bucket_), static_cast<uint64_t>(hca_bucket_),
                               static_cast<uint64_t>(moe_path_ == MoePath::kFused), static_cast<uint64_t>(hc_split_),
                               static_cast<uint64_t>(marks_on_), plan_.logit_dests.size(),
                               reinterpret_cast<uint64_t>(plan_dev_.get()), reinterpret_cast<uint64_t>(conv_.get()),
                               reinterpret_cast<uint64_t>(x16_.get()), reinterpret_cast<uint64_t>(hc_partial_.get()), reinterpret_cast<uint64_t>(taps_.get())};
  for (int l : tap_layers_) sig.push_back(static_cast<uint64_t>(l) + (uint64_t{1} << 40));
  for (const auto* f : {&X_, &x_, &y_, &post_, &comb_, &qr_, &q_, &kv_, &o_, &z_, &ckv_, &csc_, &ikv_, &isc_, &qi_, &wi_,
                        &scores_, &rlogits_, &ew_, &margin_, &rscale_, &h_, &eo_, &sg_, &su_, &sh_, &sy_, &hh_, &logits_})
    sig.push_back(reinterpret_cast<uint64_t>(f->get()));
  for (const auto* i : {&selected_, &eid_, &pair_order_, &groups_, &n_groups_, &moe_sync_}) sig.push_back(reinterpret_cast<uint64_t>(i->get()));
  return sig;
}

size_t Shard::scratch_bytes() const {
  size_t b = plan_dev_.bytes() + conv_.bytes() + x16_.bytes() + hc_partial_.bytes() + dq_.bytes() + xb_.bytes() + gptr_.bytes();
  for (const auto* f : {&X_, &x_, &y_, &post_, &comb_, &qr_, &q_, &kv_, &o_, &z_, &ckv_, &csc_, &ikv_, &isc_, &qi_, &wi_,
                        &scores_, &rlogits_, &ew_, &margin_, &rscale_, &h_, &eo_, &sg_, &su_, &sh_, &sy_, &xg_, &eg_, &eu_, &eh_,
                        &eoe_, &hh_, &logits_})
    b += f->bytes();
  for (const auto* i : {&selected_, &eid_, &pair_order_, &groups_, &n_groups_, &order_, &moe_sync_}) b += i->bytes();
  return b;
}

void Shard::upload_plan(const RoundPlan& plan, const std::vector<const LayerDev*>& tables, bool timeline, bool graph_marks,
                        bool copy_now) {
  DeviceGuard guard(device_);
  check(cudaStreamSynchronize(stream_), "stream synchronisation");  // the staging buffer is free again
  plan_ = plan;
  for (int s = 0; s < plan_.seq_count(); ++s) plan_.seqs[s].layers = tables[s];
  // Launch shapes depend on a few bucketed sizes only, so that one captured decode step replays
  // for thousands of positions (cuda_backend.cpp, graphs): closings padded to their bound
  // (Σ T/m + 1; a padding entry has seq −1 and its block returns), the visible CSA entries rounded
  // up to kCsaBucket (the indexer's grid and score stride; scores past a row's limit are never
  // written nor read) and the visible HCA entries to kHcaBucket (attention's shared memory).
  // None of this changes a value.
  auto pad = [&](std::vector<Closing>& cl, int64_t m) {
    if (m <= 0) return;
    size_t cap = 0;
    for (const SeqDesc& sd : plan_.seqs) cap += static_cast<size_t>(sd.T / m + 1);
    cl.resize(std::max(cap, cl.size()), Closing{-1, -1});
  };
  pad(plan_.closings_csa, cfg_.csa_rate);
  pad(plan_.closings_hca, cfg_.hca_rate);
  csa_bucket_ = (plan_.max_visible_csa + kCsaBucket - 1) / kCsaBucket * kCsaBucket;
  hca_bucket_ = (plan_.max_visible_hca + kHcaBucket - 1) / kHcaBucket * kHcaBucket;
  const size_t R = static_cast<size_t>(plan_.rows());
  // One block: tokens | row_pos | row_seq | seqs | csa | hca | logit rows | logit destinations.
  if (!plan_.logit_dests.empty() && plan_.logit_dests.size() != plan_.logit_rows.size())
    throw Error("internal: a round plan's logit destinations do not match its logit rows");
  constexpr int kParts = 8;
  const size_t sizes[kParts] = {R * 4, R * 4, R * 4, plan_.seqs.size() * sizeof(SeqDesc), plan_.closings_csa.size() * sizeof(Closing),
                                plan_.closings_hca.size() * sizeof(Closing), plan_.logit_rows.size() * 4,
                                plan_.logit_dests.size() * sizeof(LogitDest)};
  const void* srcs[kParts] = {plan_.tokens.data(), plan_.row_pos.data(), plan_.row_seq.data(), plan_.seqs.data(),
                              plan_.closings_csa.data(), plan_.closings_hca.data(), plan_.logit_rows.data(), plan_.logit_dests.data()};
  size_t offs[kParts], total = 0;
  for (int i = 0; i < kParts; ++i) {
    offs[i] = total;
    total += align_up(sizes[i]);
  }
  plan_host_.ensure(total, "round plan staging");
  for (int i = 0; i < kParts; ++i)
    if (sizes[i]) std::memcpy(plan_host_.get() + offs[i], srcs[i], sizes[i]);
  uint8_t* dev = plan_dev_.ensure(device_, total, "round plan");
  plan_bytes_ = total;
  if (copy_now) copy_plan();
  d_tokens_ = reinterpret_cast<int32_t*>(dev + offs[0]);
  d_row_pos_ = reinterpret_cast<int32_t*>(dev + offs[1]);
  d_row_seq_ = reinterpret_cast<int32_t*>(dev + offs[2]);
  d_seqs_ = reinterpret_cast<SeqDesc*>(dev + offs[3]);
  d_csa_ = reinterpret_cast<Closing*>(dev + offs[4]);
  d_hca_ = reinterpret_cast<Closing*>(dev + offs[5]);
  d_logit_rows_ = reinterpret_cast<int32_t*>(dev + offs[6]);
  d_logit_dests_ = reinterpret_cast<LogitDest*>(dev + offs[7]);

  const size_t n = cfg_.hc_mult, D = cfg_.hidden_size, H = cfg_.num_attention_heads, d = cfg_.head_dim;
  const size_t ql = cfg_.q_lora_rank, GR = cfg_.o_groups * cfg_.o_lora_rank, di = cfg_.index_head_dim;
  const size_t Hi = cfg_.index_n_heads, K = cfg_.index_topk, E = cfg_.n_routed_experts, k = cfg_.num_experts_per_tok;
  const size_t I = cfg_.moe_intermediate_size, V = cfg_.vocab_size;
  const int dv = device_;
  X_.ensure(dv, R * n * D, "hc streams");
  x_.ensure(dv, R * D, "activations");
  y_.ensure(dv, R * D, "activations");
  post_.ensure(dv, R * n, "hc post");
  comb_.ensure(dv, R * n * n, "hc comb");
  qr_.ensure(dv, R * ql, "q_lora activations");
  q_.ensure(dv, R * H * d, "queries");
  kv_.ensure(dv, R * d, "kv rows");
  o_.ensure(dv, R * H * d, "attention output");
  z_.ensure(dv, R * GR, "grouped output");
  ckv_.ensure(dv, R * 2 * d, "compressor kv");
  csc_.ensure(dv, R * 2 * d, "compressor scores");
  ikv_.ensure(dv, R * 2 * std::max<size_t>(di, 1), "indexer compressor kv");
  isc_.ensure(dv, R * 2 * std::max<size_t>(di, 1), "indexer compressor scores");
  qi_.ensure(dv, R * Hi * std::max<size_t>(di, 1), "indexer queries");
  wi_.ensure(dv, R * std::max<size_t>(Hi, 1), "indexer weights");
  scores_.ensure(dv, R * std::max<size_t>(csa_bucket_, 1), "indexer scores");
  selected_.ensure(dv, R * std::max<size_t>(K, 1), "indexer selection");
  rlogits_.ensure(dv, R * E, "router logits");
  eid_.ensure(dv, R * k, "router experts");
  ew_.ensure(dv, R * k, "router weights");
  margin_.ensure(dv, R, "router margins");
  rscale_.ensure(dv, R, "router scales");
  h_.ensure(dv, R * k * I, "expert hidden");
  eo_.ensure(dv, R * k * D, "expert outputs");
  pair_order_.ensure(dv, R * k, "expert pair order");
  groups_.ensure(dv, 3 * static_cast<size_t>(experts_max_groups(static_cast<int>(R), static_cast<int>(k), static_cast<int>(E))),
                 "expert groups");
  n_groups_.ensure(dv, 2, "expert group counts");
  {  // zeroed once per allocation: the one-row MoE launch leaves its counters zero
    const int32_t* before = moe_sync_.get();
    int32_t* sync = moe_sync_.ensure(dv, k + 1, "expert sync counters");
    if (sync != before) check(cudaMemsetAsync(sync, 0, moe_sync_.bytes(), stream_), "expert sync counters");
  }
  sg_.ensure(dv, R * I, "shared expert gate");
  su_.ensure(dv, R * I, "shared expert up");
  sh_.ensure(dv, R * I, "shared expert hidden");
  sy_.ensure(dv, R * D, "shared expert output");
  const size_t Tl = std::max<size_t>(plan_.logit_rows.size(), 1);
  hc_partial_.ensure(dv, hc_mix_scratch(static_cast<int>(std::max(R, Tl)), static_cast<int>(n), static_cast<int>(D)), "hc mix partials");
  hh_.ensure(dv, Tl * D, "head rows");
  logits_.ensure(dv, Tl * V, "logits");
  if (fast_) {
    const size_t max_in = std::max({D, ql, H * d, GR, I, static_cast<size_t>(cfg_.index_head_dim) * 2});
    conv_.ensure(dv, R * max_in * 2, "bf16 activations");
    x16_.ensure(dv, R * D * 2, "site rows (16-bit)");
  }
  if (!tap_layers_.empty()) taps_.ensure(dv, tap_layers_.size() * R * n * D, "tapped hc streams");
  timeline_on_ = timeline || switch_one("MEMRA_CUDA_TIMELINE");
  marks_on_ = (graph_marks || switch_one("MEMRA_CUDA_GRAPH_MARKS")) && !timeline_on_;
  if (marks_on_ && !marks_) marks_ = std::make_unique<GraphMarks>(device_);
  site_prefix_.clear();
  if (timeline_on_) {
    if (!timeline_) timeline_ = std::make_unique<Timeline>(stream_);
    timeline_->spin(kTimelineSpinMs);
  }
}

void Shard::copy_plan() {
  DeviceGuard guard(device_);
  check(cudaMemcpyAsync(plan_dev_.get(), plan_host_.get(), plan_bytes_, cudaMemcpyHostToDevice, stream_), "round plan upload");
}

LinearArgs Shard::matrix_args(const DevMatrix& w, const float* x, int64_t x_stride, int rows, float* y, int64_t y_stride) {
  LinearArgs a;
  a.x = x;
  a.x_stride = x_stride;
  a.w = w.ptr;
  a.wtype = w.type;
  a.ws = w.scale;
  a.y = y;
  a.y_stride = y_stride;
  a.rows = rows;
  a.in = static_cast<int>(w.cols);
  a.out = static_cast<int>(w.rows);
  return a;
}

void Shard::linear(const DevMatrix& w, const float* x, int64_t x_stride, int rows, float* y, int64_t y_stride,
                   const char* what, HalfRows xh) {
  LinearArgs a = matrix_args(w, x, x_stride, rows, y, y_stride);
  a.x16 = xh.p;
  a.x16_type = xh.type;
  run_linear(a, what);
}

HalfRows Shard::site_rows16(const DevMatrix& w, const float* x, int rows) {
  static const bool on = switch_on("MEMRA_CUDA_SITE_ROWS16");
  if (!fast_ || !on || rows == 0) return {};
  const WType t = fast_activation_type(w.type, rows);
  if (t == WType::kF32) return {};
  const int D = static_cast<int>(cfg_.hidden_size);
  void* p = x16_.ensure(device_, static_cast<size_t>(rows) * D * 2, "site rows (16-bit)");
  launched(convert_rows(x, D, rows, D, p, t, stream_), "convert_rows (site rows)");
  return {p, t};
}

void Shard::run_linear(LinearArgs a, const char* what) {
  if (time_linears_) time_begin();
  // cuda-fast: cuBLAS, except a packed weight in a small round (a decode step), which the exact
  // kernel reads packed; a larger round dequantises that one matrix into scratch reused by every
  // linear, right before its GEMM (stream order), so no dequantised model copy ever exists.
  const bool packed = wtype_packed(a.wtype);
  if (fast_ && !(packed && a.rows < kFastDenseRows)) {
    if (packed) {
      const int64_t wrows = static_cast<int64_t>(a.groups - 1) * (a.w_gstride / a.in) + a.out;  // the whole matrix
      void* dq = dq_.ensure(device_, static_cast<size_t>(wrows) * a.in * 2, "dequantised weights (cuda-fast)");
      launched(dequant_bf16(a.w, a.wtype, a.ws, wrows, a.in, dq, stream_), "dequant_bf16");
      a.w = dq;
      a.wtype = WType::kBF16;
      a.ws = WScale{};
    }
    if (a.x16 && a.x16_type != a.wtype && a.x) a.x16 = nullptr;  // another GEMM type: convert x as before
    const size_t need = linear_fast_scratch(a);
    void* conv = need ? conv_.ensure(device_, need, "bf16 activations") : nullptr;
    check_text(linear_fast(cublas_, a, conv, need, stream_), what);
    if (sync_each_launch()) check(cudaDeviceSynchronize(), what);
    if (timeline_on_) timeline_->mark(site_prefix_ + what);
  } else {
    if (a.x) a.x16 = nullptr;  // (the exact kernels read x; without it they refuse the call)
    launched(linear_exact(a, stream_), what);
  }
  if (time_linears_) time_end(2.0 * a.rows * static_cast<double>(a.in) * a.out * a.groups);
}

void Shard::norm(float* x, int64_t stride, int rows, int segs, int width, const float* weight, const float* inv_freq,
                 const char* what) {
  NormRopeArgs a;
  a.x = x;
  a.row_stride = stride;
  a.rows = rows;
  a.segs = segs;
  a.width = width;
  a.norm = true;
  a.weight = weight;
  a.eps = static_cast<float>(cfg_.rms_norm_eps);
  a.inv_freq = inv_freq;
  a.half = inv_freq ? static_cast<int>(cfg_.qk_rope_head_dim / 2) : 0;
  a.pos = d_row_pos_;
  launched(norm_rope(a, stream_), what);
}

void Shard::embed(const DevEnds& ends) {
  DeviceGuard guard(device_);
  if (marks_on_) marks_->restart();  // a round (or its capture) starts here
  comb_pending_ = false;  // a round that threw left no hc_comb to join in this one
  launched(embed_rows(ends.embed.ptr, ends.embed.type, d_tokens_, rows(), static_cast<int>(cfg_.hc_mult),
                          static_cast<int>(cfg_.hidden_size), X_.get(), stream_),
               "embed_rows");
}

void Shard::layer(const DevLayer& w, int l, LayerTrace* trace) {
  DeviceGuard guard(device_);
  site_prefix_ = w.kind == LayerKind::kCSA ? "C:" : w.kind == LayerKind::kHCA ? "H:" : "S:";
  const int R = rows(), n = static_cast<int>(cfg_.hc_mult), D = static_cast<int>(cfg_.hidden_size);
  HcPreArgs hp;
  hp.X = X_.get();
  hp.rows = R;
  hp.n = n;
  hp.D = D;
  hp.norm_eps = static_cast<float>(cfg_.rms_norm_eps);
  hp.hc_eps = static_cast<float>(cfg_.hc_eps);
  hp.iters = static_cast<int>(cfg_.hc_sinkhorn_iters);
  hp.x = x_.get();
  hp.post = post_.get();
  hp.comb = comb_.get();
  hp.partial = hc_split_ ? hc_partial_.get() : nullptr;
  // With the side streams on, the Sinkhorn (comb) leaves hc_pre for kSideComb (HcPreArgs::comb_apart).
  hp.comb_apart = comb_apart_ && overlap(trace);

  // The sublayer's norm in hc_pre's launch (HcPreArgs::norm_weight), or as its own (A/B).
  hp.fn = w.hc_attn_fn, hp.base = w.hc_attn_base, hp.scale = w.hc_attn_scale, hp.norm_weight = hc_norm_ ? w.attn_norm : nullptr;
  hc_mix_fast(hp, "hc mix GEMM (attention)");
  launched(hc_pre(hp, stream_), "hc_pre (attention)");
  if (hp.comb_apart) launch_comb(hp, "hc_comb (attention)");
  if (!hc_norm_) norm(x_.get(), D, R, 1, D, w.attn_norm, nullptr, "norm_rope (attn_norm)");
  // The exact realization applies hc_post in wo_b's epilogue (LinearArgs::hc: the same operations,
  // one dependent launch fewer); cuda-fast's cuBLAS wo_b stores y for hc_post.
  if (fast_ || !hc_post_epilogue_) {
    attention_site(w, l, x_.get(), y_.get(), trace);
    join_comb();
    launched(hc_post(X_.get(), y_.get(), post_.get(), comb_.get(), R, n, D, stream_), "hc_post (attention)");
  } else {
    attention_site(w, l, x_.get(), nullptr, trace);
  }

  hp.fn = w.hc_ffn_fn, hp.base = w.hc_ffn_base, hp.scale = w.hc_ffn_scale, hp.norm_weight = hc_norm_ ? w.ffn_norm : nullptr;
  hc_mix_fast(hp, "hc mix GEMM (ffn)");
  launched(hc_pre(hp, stream_), "hc_pre (ffn)");
  if (hp.comb_apart) launch_comb(hp, "hc_comb (ffn)");
  if (!hc_norm_) norm(x_.get(), D, R, 1, D, w.ffn_norm, nullptr, "norm_rope (ffn_norm)");
  // The MoE combine runs inside the ffn hc_post (the same bits, one dependent launch fewer): y_ is
  // not written, nothing after the site reads it.
  moe_site(w, x_.get(), nullptr, trace);
  join_comb();
  const int k = static_cast<int>(cfg_.num_experts_per_tok);
  if (eo_type_ != WType::kF32)
    launched(hc_post_moe16(X_.get(), eo_read_, eo_type_, ew_.get(), sy_.get(), k, post_.get(), comb_.get(), R, n, D, stream_, eo_rows_),
             "hc_post+combine (ffn)");
  else
    launched(hc_post_moe(X_.get(), static_cast<const float*>(eo_read_), ew_.get(), sy_.get(), k, post_.get(), comb_.get(), R, n, D,
                         stream_, 0, eo_rows_),
             "hc_post+combine (ffn)");
  const auto tap = std::find(tap_layers_.begin(), tap_layers_.end(), l);
  if (tap != tap_layers_.end()) {
    const size_t count = static_cast<size_t>(R) * n * D;
    check(cudaMemcpyAsync(taps_.get() + static_cast<size_t>(tap - tap_layers_.begin()) * count, X_.get(), count * sizeof(float),
                          cudaMemcpyDeviceToDevice, stream_),
          "tap copy (hc streams)");
  }

  if (trace) {
    trace->hidden.resize(static_cast<size_t>(R) * n * D);
    check(cudaMemcpyAsync(trace->hidden.data(), X_.get(), trace->hidden.size() * 4, cudaMemcpyDeviceToHost, stream_),
          "trace copy (hidden)");
    check(cudaStreamSynchronize(stream_), "trace copy (hidden)");
  }
}

void Shard::attention_site(const DevLayer& w, int l, const float* x, float* y, LayerTrace* trace) {
  DeviceGuard guard(device_);
  const int R = rows(), D = static_cast<int>(cfg_.hidden_size), H = static_cast<int>(cfg_.num_attention_heads);
  const int d = static_cast<int>(cfg_.head_dim), ql = static_cast<int>(cfg_.q_lora_rank), Hd = H * d;
  const int half = static_cast<int>(cfg_.qk_rope_head_dim / 2), W = static_cast<int>(cfg_.sliding_window);
  const float eps = static_cast<float>(cfg_.rms_norm_eps);

  auto compressor_args = [&](const DevCompressor& cw, bool indexer, int c, int width, float* kvbuf, float* scbuf) {
    CompressorArgs ca;
    ca.seqs = d_seqs_;
    ca.layer = l;
    ca.indexer = indexer;
    ca.kv = kvbuf;
    ca.score = scbuf;
    ca.ape = cw.ape;
    ca.norm = cw.norm;
    ca.inv_freq = w.inv_freq;
    ca.half = half;
    ca.m = static_cast<int>(w.m);
    ca.c = c;
    ca.w = width;
    ca.eps = eps;
    return ca;
  };
  const bool ov = overlap(trace);
  const bool csa = w.kind == LayerKind::kCSA;
  // The attention's key bound first (a refusal before any launch), and with it whether cuda-fast's
  // tensor-core kernel takes this round: rounds of many rows (a prefill); decode-sized rounds stay
  // latency-bound either way and keep the exact kernels. That kernel applies the query heads'
  // norm_rope itself while it stages q (AttentionArgs::q_raw: the same bits, one pass over q less).
  AttentionArgs aa;
  const int K = static_cast<int>(cfg_.index_topk);
  aa.d = d;
  aa.max_keys = W + (w.kind == LayerKind::kCSA ? K : w.kind == LayerKind::kHCA ? plan_.max_visible_hca : 0);
  if (aa.max_keys <= max_keys_ && w.kind == LayerKind::kHCA) aa.max_keys = std::min(max_keys_, W + hca_bucket_);
  if (aa.max_keys > max_keys_)
    throw Error("layer " + std::to_string(l) + " attends to up to " + std::to_string(aa.max_keys) +
                    " keys per query, more than the " + std::to_string(max_keys_) +
                    " one CUDA attention block holds in shared memory",
                "plan a smaller context for this model on the CUDA backend");
  const bool fast_attn = fast_ && R >= kFastAttentionRows && attention_fast_ok(aa);
  static const bool q_in_attention = switch_on("MEMRA_CUDA_ATTN_Q_NORM");
  aa.q_raw = fast_attn && q_in_attention;
  aa.q_eps = eps;
  const HalfRows xh = site_rows16(w.wq_a, x, R);
  // A compressor's projections (wkv on kv_side, wgate on gate_side, side by side), then the windows
  // this round closes (on kv_side once both are done): what the attention reads. Its pending-window
  // update waits until after the attention (below).
  auto compress = [&](const DevCompressor& cw, bool indexer, int c, int width, float* kvbuf, float* scbuf, int kv_side,
                      int gate_side) {
    {
      OnStream on(*this, ov ? side_[kv_side] : stream_);
      linear(cw.wkv, x, D, R, kvbuf, static_cast<int64_t>(c) * width, "linear_exact (compressor wkv)", xh);
    }
    if (!side_chains_) gate_side = kv_side;  // MEMRA_CUDA_SIDE_CHAINS=0: session 28's chains (A/B)
    {
      OnStream on(*this, ov ? side_[gate_side] : stream_);
      linear(cw.wgate, x, D, R, scbuf, static_cast<int64_t>(c) * width, "linear_exact (compressor wgate)", xh);
    }
    if (ov && gate_side != kv_side) link(gate_side, kv_side);
    OnStream on(*this, ov ? side_[kv_side] : stream_);
    const std::vector<Closing>& cl = csa ? plan_.closings_csa : plan_.closings_hca;
    const CompressorArgs ca = compressor_args(cw, indexer, c, width, kvbuf, scbuf);
    launched(compressor_close(ca, csa ? d_csa_ : d_hca_, static_cast<int>(cl.size()), stream_), "compressor_close");
    if (!side_chains_) launched(compressor_update(ca, plan_.seq_count(), stream_), "compressor_update");
  };
  // Independent chains from x (with overlap on, on the side streams of shard.h's Side):
  //   stream_        wq_a, q_norm, wq_b, query norm+RoPE (cuda-fast's prefill: inside the attention)
  //   kSideKv        wkv, kv norm+RoPE
  //   kSideCmpKv     the attention compressor (its wgate on kSideCmpGate), its closings
  //   kSideIdxKv     (CSA) the indexer's compressor (its wgate on kSideIdxGate), its closings
  //   kSideIndexer   (CSA) the indexer's weights, then, once q_norm is done, its queries, and once
  //                  kSideIdxKv closed its entries, its scores and top-k (kSideIdxKv joins through it)
  // They touch disjoint scratch and state; the attention joins them.
  const bool compressed = w.kind != LayerKind::kSliding;
  if (ov) {
    fork_to(kSideKv);
    if (compressed && side_chains_) fork_to(kSideCmpKv), fork_to(kSideCmpGate);
    if (csa) fork_to(kSideIndexer), fork_to(kSideIdxKv);
    if (csa && side_chains_) fork_to(kSideIdxGate);
  }
  {
    OnStream on(*this, ov ? side_[kSideKv] : stream_);
    linear(w.wkv, x, D, R, kv_.get(), d, "linear_exact (wkv)", xh);
    norm(kv_.get(), d, R, 1, d, w.kv_norm, w.inv_freq, "norm_rope (kv)");
  }
  if (compressed)
    compress(w.cmp, false, csa ? 2 : 1, d, ckv_.get(), csc_.get(), side_chains_ ? kSideCmpKv : kSideKv, kSideCmpGate);
  linear(w.wq_a, x, D, R, qr_.get(), ql, "linear_exact (wq_a)", xh);
  norm(qr_.get(), ql, R, 1, ql, w.q_norm, nullptr, "norm_rope (q_norm)");
  if (ov && csa) check(cudaEventRecord(qr_ready_, stream_), "cudaEventRecord (q_lora ready)");
  linear(w.wq_b, qr_.get(), ql, R, q_.get(), Hd, "linear_exact (wq_b)");
  if (!aa.q_raw) norm(q_.get(), Hd, R, H, d, nullptr, w.inv_freq, "norm_rope (query heads)");

  const int Hi = static_cast<int>(cfg_.index_n_heads), di = static_cast<int>(cfg_.index_head_dim);
  if (csa) {
    compress(w.idx, true, 2, di, ikv_.get(), isc_.get(), kSideIdxKv, kSideIdxGate);
    OnStream on(*this, ov ? side_[kSideIndexer] : stream_);
    // The indexer chain decides when the attention may start (graph marks, run 94: its wq_b shared
    // the bandwidth with the query's wq_b and its top-k ended 10 us after the query path at 2k, 30
    // at 32k): its blocks go ahead of the query path's pending ones (run 96: its wq_b 49 → 35 us).
    // The whole chain: with wq_b and rope alone first, the scores waited behind the query's wq_b
    // (run 97: decode slower than with no priority at all). Only while the rows see few compressed
    // entries: at 32k (8192) the scores, beside the query's wq_b, took 37 us instead of 20 and the
    // attention started 3.6 us later than without the priority (run 97's marks).
    std::optional<LaunchPriority> ahead;
    if (ov && indexer_priority_ != 0 && csa_bucket_ <= kIndexerPriorityEntries) ahead.emplace(indexer_priority_);
    linear(w.idx_weights, x, D, R, wi_.get(), Hi, "linear_exact (indexer weights_proj)", xh);
    if (ov) check(cudaStreamWaitEvent(stream_, qr_ready_, 0), "cudaStreamWaitEvent (q_lora ready)");
    linear(w.idx_wq_b, qr_.get(), ql, R, qi_.get(), static_cast<int64_t>(Hi) * di, "linear_exact (indexer wq_b)");
    IndexerArgs ia;
    ia.seqs = d_seqs_;
    ia.row_seq = d_row_seq_;
    ia.row_pos = d_row_pos_;
    ia.layer = l;
    ia.rows = R;
    ia.qi = qi_.get();
    ia.wi = wi_.get();
    ia.Hi = Hi;
    ia.di = di;
    ia.m = static_cast<int>(w.m);
    ia.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(di)));
    ia.weight_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Hi)));
    ia.scores = scores_.get();
    ia.score_stride = std::max(csa_bucket_, 1);
    ia.max_visible = csa_bucket_;  // the grid; each row stops at its own (pos + 1)/m
    // MEMRA_CUDA_INDEXER_FAST=0 (A/B timing): cuda-fast's prefill scores the exact kernels' way.
    static const bool fast_indexer_on = switch_on("MEMRA_CUDA_INDEXER_FAST");
    const bool fast_indexer = fast_ && fast_indexer_on && R >= kFastIndexerRows && indexer_fast_ok(ia);
    // The tensor-core scores rotate the queries while staging them (rope_only's bits, one pass over
    // qi less). MEMRA_CUDA_INDEXER_ROPE=0 (A/B timing; the same bits): rope_only first.
    static const bool fold_rope_on = switch_on("MEMRA_CUDA_INDEXER_ROPE");
    if (fast_indexer && fold_rope_on) {
      IndexerArgs folded = ia;
      folded.q_inv_freq = w.inv_freq, folded.q_half = half;
      if (indexer_fast_ok(folded)) ia = folded;
    }
    if (!ia.q_inv_freq) {
      NormRopeArgs ra;
      ra.x = qi_.get();
      ra.row_stride = static_cast<int64_t>(Hi) * di;
      ra.rows = R;
      ra.segs = Hi;
      ra.width = di;
      ra.inv_freq = w.inv_freq;
      ra.half = half;
      ra.pos = d_row_pos_;
      launched(rope_only(ra, stream_), "rope_only (indexer queries)");
    }
    if (ov) link(kSideIdxKv, kSideIndexer);  // the indexer's entries closed
    if (fast_indexer)
      launched(indexer_scores_fast(ia, stream_), "indexer_scores (tensor cores)");
    else
      launched(indexer_scores(ia, stream_), "indexer_scores");
    launched(topk_rows(scores_.get(), ia.score_stride, R, 0, d_row_pos_, static_cast<int>(w.m), K, selected_.get(), stream_),
                 "topk_rows (indexer)");
    if (trace) {
      trace->selected.resize(static_cast<size_t>(R) * K);
      std::vector<float> sc(static_cast<size_t>(R) * ia.score_stride);
      check(cudaMemcpyAsync(trace->selected.data(), selected_.get(), trace->selected.size() * 4, cudaMemcpyDeviceToHost, stream_),
            "trace copy (indexer selection)");
      check(cudaMemcpyAsync(sc.data(), scores_.get(), sc.size() * 4, cudaMemcpyDeviceToHost, stream_),
            "trace copy (indexer scores)");
      check(cudaStreamSynchronize(stream_), "trace copy (indexer)");
      trace->indexer_margin.resize(R);
      trace->indexer_scale.resize(R);
      trace->indexer_boundary.resize(R);
      for (int r = 0; r < R; ++r) {
        const int64_t visible = (static_cast<int64_t>(plan_.row_pos[r]) + 1) / w.m;
        std::vector<float> row(sc.begin() + static_cast<int64_t>(r) * ia.score_stride,
                               sc.begin() + static_cast<int64_t>(r) * ia.score_stride + visible);
        trace->indexer_scale[r] = cpu::selection_scale(row);  // the CPU twin's own definitions
        const cpu::SelectionEdge edge = cpu::selection_edge(std::move(row), K);
        trace->indexer_boundary[r] = edge.boundary;
        trace->indexer_margin[r] = edge.margin;
      }
    }
    aa.selected = selected_.get();
    aa.K = K;
  }

  if (ov) {
    join_from(kSideKv);
    if (compressed && side_chains_) join_from(kSideCmpKv);
    if (csa) join_from(kSideIndexer);
  }
  aa.seqs = d_seqs_;
  aa.row_seq = d_row_seq_;
  aa.row_pos = d_row_pos_;
  aa.layer = l;
  aa.rows = R;
  aa.kind = w.kind == LayerKind::kCSA ? AttnKind::kCSA : w.kind == LayerKind::kHCA ? AttnKind::kHCA : AttnKind::kSliding;
  aa.q = q_.get();
  aa.kv = kv_.get();
  aa.sink = w.sink;
  aa.H = H;
  aa.W = W;
  aa.m = static_cast<int>(w.m);
  aa.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  aa.inv_freq = w.inv_freq;
  aa.half = half;
  aa.o = o_.get();
  if (fast_attn) {
    // Its outputs straight into wo_a's GEMM input in the weights' 16-bit type (a packed wo_a is
    // dequantised to bf16): the same bits as writing f32 and converting, without the f32 round trip
    // (run 157). conv_ is free until wo_a: nothing between here and there converts activations.
    const WType o_type = fast_activation_type(w.wo_a.type, R);
    static const bool half_out = switch_on("MEMRA_CUDA_ATTN_HALF_OUT");
    if (half_out && o_type != WType::kF32 && (2 * half) % 4 == 0) {
      aa.o16 = conv_.ensure(device_, static_cast<size_t>(R) * Hd * 2, "bf16 activations");
      aa.o16_type = o_type;
      aa.o = nullptr;
    }
    launched(attention_fast(aa, stream_), "attention (tensor cores)");
  } else
    launched(attention(aa, stream_), "attention");
  // What the attention does not read: the round's kv into the window, the compressors' rows into their
  // pending windows (after this round's closings read the old ones). With overlap on they leave the
  // critical path for kSideKv, which the MoE site joins before the next layer touches their scratch.
  if (ov && side_chains_) fork_to(kSideKv);
  {
    OnStream on(*this, ov && side_chains_ ? side_[kSideKv] : stream_);
    launched(window_update(d_seqs_, d_row_seq_, d_row_pos_, l, R, kv_.get(), d, W, stream_), "window_update");
    const int seqs = plan_.seq_count();
    if (compressed && side_chains_)  // (without side chains, compress() ran them)
      launched(compressor_update(compressor_args(w.cmp, false, csa ? 2 : 1, d, ckv_.get(), csc_.get()), seqs, stream_),
               "compressor_update");
    if (csa && side_chains_)
      launched(compressor_update(compressor_args(w.idx, true, 2, di, ikv_.get(), isc_.get()), seqs, stream_), "compressor_update");
  }

  // Grouped output projection: z[:, g·Ro:(g+1)·Ro] = o[:, g·Hd/G:(g+1)·Hd/G] · wo_a[g]ᵀ, then y = z · wo_bᵀ.
  const int G = static_cast<int>(cfg_.o_groups), Ro = static_cast<int>(cfg_.o_lora_rank), gin = Hd / G;
  LinearArgs la;
  la.x = o_.get();
  la.x_stride = Hd;
  la.w = w.wo_a.ptr;
  la.wtype = w.wo_a.type;
  la.y = z_.get();
  la.y_stride = static_cast<int64_t>(G) * Ro;
  la.rows = R;
  la.in = gin;
  la.out = Ro;
  la.groups = G;
  la.x_gstride = gin;
  la.w_gstride = static_cast<int64_t>(Ro) * gin;
  la.y_gstride = Ro;
  la.ws = w.wo_a.scale;
  if (aa.o16) {  // the attention's 16-bit outputs (o_ not written: no f32 rows to fall back on)
    la.x = nullptr;
    la.x16 = aa.o16;
    la.x16_type = aa.o16_type;
  }
  run_linear(la, "linear_exact (wo_a, grouped)");
  if (!y) {  // the caller's hc_post in wo_b's epilogue (exact realization: layer())
    LinearArgs lb = matrix_args(w.wo_b, z_.get(), static_cast<int64_t>(G) * Ro, R, nullptr, 0);
    lb.hc = {X_.get(), post_.get(), comb_.get(), static_cast<int>(cfg_.hc_mult)};
    join_comb();
    run_linear(lb, "linear_exact (wo_b + hc_post)");
    return;
  }
  linear(w.wo_b, z_.get(), static_cast<int64_t>(G) * Ro, R, y, D, "linear_exact (wo_b)");
}

void Shard::expert_order(std::vector<int32_t>& order, std::vector<int32_t>& rows_of, std::vector<int32_t>& first) {
  const int P = rows() * static_cast<int>(cfg_.num_experts_per_tok), E = static_cast<int>(cfg_.n_routed_experts);
  const int k = static_cast<int>(cfg_.num_experts_per_tok);
  std::vector<int32_t> eid(P);
  check(cudaMemcpyAsync(eid.data(), eid_.get(), P * 4, cudaMemcpyDeviceToHost, stream_), "routing copy (per-expert MoE)");
  check(cudaStreamSynchronize(stream_), "routing copy (per-expert MoE)");
  if (timeline_on_) timeline_->spin(kTimelineSpinMs);  // the host waited: let it get ahead again
  order.clear(), rows_of.clear(), first.assign(E + 1, 0);
  std::vector<int32_t> count(E, 0);
  for (int p = 0; p < P; ++p)
    if (eid[p] >= 0 && eid[p] < E) ++count[eid[p]];
  for (int e = 0; e < E; ++e) first[e + 1] = first[e] + count[e];
  order.resize(first[E]);
  std::vector<int32_t> at(first.begin(), first.end() - 1);
  for (int p = 0; p < P; ++p)
    if (eid[p] >= 0 && eid[p] < E) order[at[eid[p]]++] = p;
  for (int32_t p : order) rows_of.push_back(p / k);
}

bool Shard::batched_experts(const DevLayer& w, const float* x, HalfRows xh, bool in_slots) {
  const WType wt = w.w1.type;
  if (!fast_ || (wt != WType::kBF16 && wt != WType::kF16) || w.w3.type != wt || w.w2.type != wt) return false;
  const int R = rows(), k = static_cast<int>(cfg_.num_experts_per_tok);
  const int D = static_cast<int>(cfg_.hidden_size), I = static_cast<int>(cfg_.moe_intermediate_size), P = R * k;
  std::vector<int32_t> order, rows_of, first;
  expert_order(order, rows_of, first);
  // Every touched expert gets a slot of rows: its pairs, then copies of its first row up to the
  // power of two ≥ its count (at least 8). Experts with equal slot sizes form one bucket, and one
  // batched GEMM (a common shape) serves a bucket: about log2(rows) calls per projection however
  // the routing is skewed, at most 2x the pairs' rows (+ 8 per expert) computed; padding is dropped.
  struct Touched {
    int e, slot, r0;  // expert, slot rows, first slot row
  };
  std::vector<Touched> touched;
  for (size_t e = 0; e + 1 < first.size(); ++e) {
    const int ne = first[e + 1] - first[e];
    if (ne == 0) continue;
    int slot = 8;
    while (slot < ne) slot *= 2;
    touched.push_back({static_cast<int>(e), slot, 0});
  }
  std::stable_sort(touched.begin(), touched.end(), [](const Touched& a, const Touched& b) { return a.slot < b.slot; });
  int64_t slots = 0;
  for (Touched& t : touched) t.r0 = static_cast<int>(slots), slots += t.slot;
  const int G = static_cast<int>(touched.size()), Pg = static_cast<int>(order.size());
  if (G == 0) return true;
  // The combine may read each pair's output from its slot (eo_rows_) when every pair has one: no
  // move to pair order (2 × 201 MB a layer of a 2048-token prefill, run 162).
  // MEMRA_CUDA_EXPERT_SLOTS_READ=0 (A/B timing; the same bits): moved to pair order (move_rows).
  static const bool slots_read_on = switch_on("MEMRA_CUDA_EXPERT_SLOTS_READ");
  const bool read_slots = in_slots && slots_read_on && Pg == P;
  // Staging (pinned, one upload): order [P] | slot rows [slots] | slot of each pair by order [Pg] |
  // slot of each pair by pair [P] | pointers.
  const size_t n_idx = static_cast<size_t>(P) + static_cast<size_t>(slots) + static_cast<size_t>(Pg) + static_cast<size_t>(P);
  const size_t idx_bytes = (n_idx * 4 + 7) / 8 * 8, ptr_bytes = 9 * static_cast<size_t>(G) * 8;
  order_host_.ensure(idx_bytes + ptr_bytes, "batched-expert staging");
  auto* hidx = reinterpret_cast<int32_t*>(order_host_.get());
  std::memcpy(hidx, order.data(), order.size() * 4);
  int32_t* hslot_rows = hidx + P;
  int32_t* hpair_slot = hslot_rows + slots;
  for (const Touched& t : touched) {
    const int f = first[t.e], ne = first[t.e + 1] - first[t.e];
    for (int r = 0; r < t.slot; ++r) hslot_rows[t.r0 + r] = rows_of[f + (r < ne ? r : 0)];
    for (int r = 0; r < ne; ++r) hpair_slot[f + r] = t.r0 + r;
  }
  int32_t* hslot_of_pair = hpair_slot + Pg;
  for (int j = 0; j < Pg; ++j) hslot_of_pair[order[j]] = hpair_slot[j];
  int32_t* d_idx = order_.ensure(device_, idx_bytes / 4, "batched-expert indices");
  const int32_t* d_order = d_idx;
  const int32_t* d_slot_rows = d_idx + P;
  const int32_t* d_pair_slot = d_slot_rows + slots;
  const int32_t* d_slot_of_pair = d_pair_slot + Pg;
  uint64_t* d_ptr = gptr_.ensure(device_, 9 * static_cast<size_t>(G), "batched-expert pointers");
  const size_t act = static_cast<size_t>(std::max(D, I)) * 2;  // bf16/f16 bytes per slot row
  const size_t S = static_cast<size_t>(slots);
  uint8_t* xb = xb_.ensure(device_, S * act, "batched-expert bf16 rows");
  float* g = eg_.ensure(device_, S * I, "per-expert gate");
  float* u = eu_.ensure(device_, S * I, "per-expert up");
  float* eo = eoe_.ensure(device_, S * D, "per-expert outputs");
  // The gate and up GEMMs write bf16 / f16 (their SwiGLU's input: half the bytes written and read;
  // one more rounding, inside cuda-fast's bf16 class). MEMRA_CUDA_EXPERT_HALF_GU=0 (A/B timing;
  // other bits): f32 as before.
  static const bool half_gu = switch_on("MEMRA_CUDA_EXPERT_HALF_GU");
  const int64_t gu_bytes = half_gu ? 2 : 4;
  // The down GEMM writes bf16 / f16 where the combine reads the slots itself (hc_post_moe16: half the
  // bytes written and read). MEMRA_CUDA_EXPERT_HALF_EO=0 (A/B timing; other bits): f32 as before.
  static const bool half_eo_on = switch_on("MEMRA_CUDA_EXPERT_HALF_EO");
  const bool half_eo = read_slots && half_eo_on && R <= 65535 && hc_post_moe16_ok(static_cast<int>(cfg_.hc_mult), D);
  const int64_t eo_bytes = half_eo ? 2 : 4;
  auto* ptr = reinterpret_cast<uint64_t*>(order_host_.get() + idx_bytes);
  for (int gi = 0; gi < G; ++gi) {
    const int e = touched[gi].e;
    const int64_t r0 = touched[gi].r0;
    ptr[0 * G + gi] = reinterpret_cast<uint64_t>(w.w1.at(e).ptr);
    ptr[1 * G + gi] = reinterpret_cast<uint64_t>(xb + r0 * D * 2);
    ptr[2 * G + gi] = reinterpret_cast<uint64_t>(reinterpret_cast<uint8_t*>(g) + r0 * I * gu_bytes);
    ptr[3 * G + gi] = reinterpret_cast<uint64_t>(w.w3.at(e).ptr);
    ptr[4 * G + gi] = reinterpret_cast<uint64_t>(xb + r0 * D * 2);
    ptr[5 * G + gi] = reinterpret_cast<uint64_t>(reinterpret_cast<uint8_t*>(u) + r0 * I * gu_bytes);
    ptr[6 * G + gi] = reinterpret_cast<uint64_t>(w.w2.at(e).ptr);
    ptr[7 * G + gi] = reinterpret_cast<uint64_t>(xb + r0 * I * 2);
    ptr[8 * G + gi] = reinterpret_cast<uint64_t>(reinterpret_cast<uint8_t*>(eo) + r0 * D * eo_bytes);
  }
  check(cudaMemcpyAsync(d_idx, order_host_.get(), idx_bytes, cudaMemcpyHostToDevice, stream_), "batched-expert index upload");
  check(cudaMemcpyAsync(d_ptr, ptr, ptr_bytes, cudaMemcpyHostToDevice, stream_), "batched-expert pointer upload");
  const cudaDataType_t t = wt == WType::kBF16 ? CUDA_R_16BF : CUDA_R_16F;
  const cudaDataType_t gu_t = half_gu ? t : CUDA_R_32F, eo_t = half_eo ? t : CUDA_R_32F;
  const float alpha = 1.0f, beta = 0.0f;
  // y_slot = x_slot · Wᵀ per expert, column-major as in linear_fast: m = out, n = slot rows, k = in;
  // one batched call per bucket of equal slot sizes.
  auto gemm = [&](int which, int out, int in, const char* what) {
    cublasStatus_t st = cublasSetStream(cublas_, stream_);
    for (int b0 = 0; b0 < G && st == CUBLAS_STATUS_SUCCESS;) {
      int b1 = b0;
      while (b1 < G && touched[b1].slot == touched[b0].slot) ++b1;
      st = cublasGemmBatchedEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, out, touched[b0].slot, in, &alpha,
                               reinterpret_cast<const void* const*>(d_ptr + (3 * which + 0) * G + b0), t, in,
                               reinterpret_cast<const void* const*>(d_ptr + (3 * which + 1) * G + b0), t, in, &beta,
                               reinterpret_cast<void* const*>(d_ptr + (3 * which + 2) * G + b0), which < 2 ? gu_t : eo_t, out, b1 - b0,
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      b0 = b1;
    }
    if (st != CUBLAS_STATUS_SUCCESS) check_text(cublasGetStatusString(st), what);
    if (sync_each_launch()) check(cudaDeviceSynchronize(), what);
    if (timeline_on_) timeline_->mark(site_prefix_ + what);
  };
  // The slots' rows gathered (and converted) in one pass, SwiGLU straight into the down GEMM's input,
  // and the outputs read from their slots by the combine, or moved to their pairs in one pass (each
  // was two passes through an f32 buffer, ~0.3 ms a layer of a 2048-token prefill: run 145).
  // The site's rows already in the GEMM type (site_rows16): moved, half the bytes read.
  // MEMRA_CUDA_EXPERT_ROWS16=0 (A/B timing; the same bits): converted again from x.
  static const bool rows16_on = switch_on("MEMRA_CUDA_EXPERT_ROWS16");
  if (xh.p && xh.type == wt && rows16_on)
    launched(gather_rows16(xh.p, D, d_slot_rows, static_cast<int>(slots), D, xb, stream_), "gather (batched experts, 16-bit rows)");
  else
    launched(convert_rows(x, D, static_cast<int>(slots), D, xb, wt, stream_, d_slot_rows), "gather+convert (batched experts)");
  gemm(0, I, D, "batched GEMM (expert w1)");
  gemm(1, I, D, "batched GEMM (expert w3)");
  const float limit = static_cast<float>(cfg_.swiglu_limit);
  if (half_gu)
    launched(swiglu16_convert(g, u, xb, wt, static_cast<int64_t>(slots) * I, limit, stream_), "swiglu+convert (batched experts)");
  else
    launched(swiglu_convert(g, u, xb, wt, static_cast<int64_t>(slots) * I, limit, stream_), "swiglu+convert (batched experts)");
  gemm(2, D, I, "batched GEMM (expert w2)");
  if (read_slots) {
    eo_read_ = eo, eo_rows_ = d_slot_of_pair, eo_type_ = half_eo ? wt : WType::kF32;
    return true;
  }
  launched(move_rows(eo, D, d_pair_slot, Pg, D, eo_.get(), D, d_order, stream_), "move_rows (batched experts)");
  return true;
}

void Shard::per_expert(const DevLayer& w, const float* x) {
  const int R = rows(), k = static_cast<int>(cfg_.num_experts_per_tok), E = static_cast<int>(cfg_.n_routed_experts);
  const int D = static_cast<int>(cfg_.hidden_size), I = static_cast<int>(cfg_.moe_intermediate_size), P = R * k;
  std::vector<int32_t> order, rows_of, first;
  expert_order(order, rows_of, first);
  order_host_.ensure(2 * static_cast<size_t>(P) * 4, "per-expert order staging");
  std::memcpy(order_host_.get(), order.data(), order.size() * 4);
  std::memcpy(order_host_.get() + static_cast<size_t>(P) * 4, rows_of.data(), rows_of.size() * 4);
  int32_t* d_order = order_.ensure(device_, 2 * static_cast<size_t>(P), "per-expert order");
  check(cudaMemcpyAsync(d_order, order_host_.get(), 2 * static_cast<size_t>(P) * 4, cudaMemcpyHostToDevice, stream_),
        "per-expert order upload");
  const int32_t* d_rows = d_order + P;
  float* xg = xg_.ensure(device_, static_cast<size_t>(P) * D, "per-expert rows");
  float* g = eg_.ensure(device_, static_cast<size_t>(P) * I, "per-expert gate");
  float* u = eu_.ensure(device_, static_cast<size_t>(P) * I, "per-expert up");
  float* h = eh_.ensure(device_, static_cast<size_t>(P) * I, "per-expert hidden");
  float* eo = eoe_.ensure(device_, static_cast<size_t>(P) * D, "per-expert outputs");
  const float limit = static_cast<float>(cfg_.swiglu_limit);
  for (int e = 0; e < E; ++e) {
    const int ne = first[e + 1] - first[e];
    if (ne == 0) continue;
    launched(gather_rows(x, D, d_rows + first[e], ne, D, xg, D, stream_), "gather_rows (per-expert)");
    const DevMatrix w1 = w.w1.at(e), w3 = w.w3.at(e), w2 = w.w2.at(e);
    linear(w1, xg, D, ne, g, I, "linear_exact (expert w1)");
    linear(w3, xg, D, ne, u, I, "linear_exact (expert w3)");
    launched(swiglu(g, u, h, static_cast<int64_t>(ne) * I, limit, stream_), "swiglu (per-expert)");
    linear(w2, h, I, ne, eo, D, "linear_exact (expert w2)");
    launched(scatter_rows(eo, D, d_order + first[e], ne, D, eo_.get(), D, stream_), "scatter_rows (per-expert)");
  }
}

void Shard::moe_site(const DevLayer& w, const float* x, float* y, LayerTrace* trace) {
  DeviceGuard guard(device_);
  const int R = rows(), D = static_cast<int>(cfg_.hidden_size), E = static_cast<int>(cfg_.n_routed_experts);
  const int k = static_cast<int>(cfg_.num_experts_per_tok), I = static_cast<int>(cfg_.moe_intermediate_size);
  const float limit = static_cast<float>(cfg_.swiglu_limit);
  eo_read_ = eo_.get(), eo_rows_ = nullptr, eo_type_ = WType::kF32;  // the combine's layout unless the batched experts say otherwise
  // The shared expert (kSideKv with overlap on) beside the router and the routed experts; the join
  // below also joins the attention site's state updates, queued on kSideKv before it.
  const bool ov = overlap(trace);
  const HalfRows xh = site_rows16(w.shared_w1, x, R);  // (the exact realization: none)
  if (ov) fork_to(kSideKv);
  {
    OnStream on(*this, ov ? side_[kSideKv] : stream_);
    linear(w.shared_w1, x, D, R, sg_.get(), I, "linear_exact (shared w1)", xh);
    linear(w.shared_w3, x, D, R, su_.get(), I, "linear_exact (shared w3)", xh);
    launched(swiglu(sg_.get(), su_.get(), sh_.get(), static_cast<int64_t>(R) * I, limit, stream_), "swiglu (shared)");
    linear(w.shared_w2, sh_.get(), I, R, sy_.get(), D, "linear_exact (shared w2)");
  }
  linear(w.gate, x, D, R, rlogits_.get(), E, "linear_exact (router)", xh);
  RouteArgs ra;
  ra.logits = rlogits_.get();
  ra.rows = R;
  ra.E = E;
  ra.k = k;
  ra.scoring = scoring_of(cfg_.scoring_func);
  ra.bias = w.gate_bias;
  ra.tid2eid = w.tid2eid;
  ra.tokens = d_tokens_;
  ra.route_scale = static_cast<float>(cfg_.routed_scaling_factor);
  ra.eid = eid_.get();
  ra.ew = ew_.get();
  ra.margin = trace ? margin_.get() : nullptr;  // only traces read them: no per-token cost otherwise
  ra.scale = trace ? rscale_.get() : nullptr;
  launched(route(ra, stream_), "route");
  // cuda-fast on a large round (a prefill): one cuBLAS GEMM per touched expert on the gathered
  // rows (tensor cores); the fused kernels' f32 dots are for decode-sized rounds and the exact path.
  const bool fused = moe_path_ == MoePath::kFused && !(fast_ && R >= kFastPerExpertRows);
  if (fused) {
    ExpertsArgs ea;
    ea.x = x;
    ea.rows = R;
    ea.D = D;
    ea.I = I;
    ea.E = E;
    ea.k = k;
    ea.eid = eid_.get();
    ea.w1 = w.w1.ptr;
    ea.w3 = w.w3.ptr;
    ea.w2 = w.w2.ptr;
    ea.wtype = w.w1.type;
    ea.s1 = w.w1.scale;
    ea.s3 = w.w3.scale;
    ea.s2 = w.w2.scale;
    ea.limit = limit;
    ea.pair_order = pair_order_.get();
    ea.groups = groups_.get();
    ea.n_groups = n_groups_.get();
    ea.sync = moe_sync_.get();
    ea.h = h_.get();
    ea.eo = eo_.get();
    launched(experts_fused(ea, stream_), "experts_fused");
    moe_ran_ = "fused";
  } else if (batched_experts(w, x, xh, y == nullptr)) {
    moe_ran_ = "batched";
  } else {
    per_expert(w, x);
    moe_ran_ = "per-expert";
  }
  if (ov) join_from(kSideKv);
  // y == nullptr: the caller combines eo_read_ (rows eo_rows_) / ew_ / sy_ itself (layer():
  // hc_post_moe); every path above leaves the routed outputs in eo_ in the combine's layout, but the
  // batched experts may leave them in their slots (eo_read_, eo_rows_).
  if (y) launched(moe_combine(eo_.get(), ew_.get(), sy_.get(), R, k, D, y, stream_), "moe_combine");
  if (trace) {
    trace->experts.resize(static_cast<size_t>(R) * k);
    trace->router_margin.resize(R);
    trace->router_scale.resize(R);
    check(cudaMemcpyAsync(trace->experts.data(), eid_.get(), trace->experts.size() * 4, cudaMemcpyDeviceToHost, stream_),
          "trace copy (router)");
    check(cudaMemcpyAsync(trace->router_margin.data(), margin_.get(), R * 4, cudaMemcpyDeviceToHost, stream_),
          "trace copy (router)");
    check(cudaMemcpyAsync(trace->router_scale.data(), rscale_.get(), R * 4, cudaMemcpyDeviceToHost, stream_),
          "trace copy (router)");
    check(cudaStreamSynchronize(stream_), "trace copy (router)");
  }
}

const float* Shard::head(const DevEnds& ends) {
  DeviceGuard guard(device_);
  site_prefix_.clear();
  const int Tl = static_cast<int>(plan_.logit_rows.size()), D = static_cast<int>(cfg_.hidden_size);
  if (Tl == 0) return logits_.get();
  launched(hc_head(X_.get(), d_logit_rows_, Tl, static_cast<int>(cfg_.hc_mult), D, ends.hc_head_fn, ends.hc_head_base,
                       ends.hc_head_scale, static_cast<float>(cfg_.rms_norm_eps), static_cast<float>(cfg_.hc_eps),
                       hh_.get(), hc_split_ ? hc_partial_.get() : nullptr, stream_),
               "hc_head");
  norm(hh_.get(), D, Tl, 1, D, ends.final_norm, nullptr, "norm_rope (final norm)");
  linear(ends.head, hh_.get(), D, Tl, logits_.get(), cfg_.vocab_size, "linear_exact (LM head)");
  if (!plan_.logit_dests.empty()) launched(logits_out(logits_.get(), cfg_.vocab_size, d_logit_dests_, Tl, stream_), "logits_out");
  return logits_.get();
}

}  // namespace memra::cuda
