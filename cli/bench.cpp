// memra bench: DeepSeek-V4 at V4-Flash layer geometry on the GPU, without a checkpoint (issue 13).
// A model of `--layers` (default CH: one CSA and one HCA layer) is built on the device from seeded
// weights (BackendOptions::synthetic_seed, kernels/synthetic_weights.cu); bench/transformers_bench.py
// builds the same weights and prompts in torch from the same seed, so the two sides time the same
// model. Every number is measured in this run:
//   ceilings   device copy bandwidth (read + write), dense bf16 tensor-core rate, pinned D2H/H2D, the
//              launch step (what one more dependent kernel adds to a captured chain, PDL on and off)
//   prefill    cuda-fast, --prefill tokens in one call: tokens/s; the time and FLOPs of its linears
//              (events around each GEMM) against the tensor-core rate; the last row's logits hash
//              (every repetition's the same, else reps_same_bits false), so an A/B shows the bits
//   decode     cuda (exact), batch 1, at each --contexts (state filled by a cuda-fast prefill of that
//              many tokens, moved into the exact backend through its classes): ms per layer per token
//              and the HBM floor of the bytes one step must read (active weights + state + head);
//              the step graph's longest chain of dependent kernels × the launch step; where the step's
//              wall time goes (phases_us: host before / in / after the launch, device plan copy, round,
//              logits copies; host_outside_device is what the device does not cover), also per verify
//   batch      --batches sequences at the first context, one token each per step: tokens/s and the
//              floor of what the batch reads (the experts its rows touch, counted from the routing
//              trace); one sequence checked bit-identical to running alone
//   verify     --verify blocks (one forward of b tokens) against b decode steps, with their floors;
//              and a speculative round's own costs beside the verify: the mark (State::mark), the
//              verify with its journal (SequenceStep::journal), and the rewind keeping b/2 of its rows
//              (State::rewind(mark, rows): what memra's loop pays instead of re-running them)
//   snapshot   a state of about --snapshot-gib: streamed export with class hashes (what a state file
//              write does) and streamed import, against the pinned copies
//   memory     device bytes of the weights and the scratch, state bytes per token (this model, and
//              V4-Flash's 43 layers against the architecture note's prediction)
// Timings are wall clock around Backend::forward, which returns after the device finished: the
// product's own cost, host work included. Medians of --steps / --reps runs after warm-ups.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "backend/cuda_loader.h"
#include "command.h"
#include "options.h"
#include "core/environment.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "format/json_guard.h"
#include "engine/backend.h"
#include "engine/decode_state.h"
#include "format/token_list.h"
#include "memra_version.h"
#include "model/model.h"
#include "model/synthetic.h"
#include "model/v4_geometry.h"
#include "state/snapshot.h"

namespace memra::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string layers = "CH";
  int64_t vocab = 4096;
  uint32_t seed = 1;
  std::string devices = "0";
  std::string contexts = "2048,32768";
  std::string batches = "8,32,64";
  std::string verify = "6,16";
  int64_t prefill = 2048;
  int64_t steps = 16;
  int64_t reps = 3;
  double snapshot_gib = 1.0;
  std::string config_out;
  bool json = false;
  bool timeline = false;
  bool graph_marks = false;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<int64_t> parse_list(const std::string& text, const char* what) {
  std::vector<int64_t> out;
  for (int32_t v : parse_token_text(text, what)) {
    if (v <= 0) throw Error(std::string(what) + ": " + std::to_string(v) + " is not a positive count");
    out.push_back(v);
  }
  return out;
}

std::vector<int32_t> tokens(const std::string& stream, uint64_t seed, int64_t n, int64_t vocab, int64_t from = 0) {
  std::vector<int32_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = synthetic_token(stream, seed, static_cast<uint64_t>(from + i), vocab);
  return t;
}

// One forward of `batch` sequences; seconds (forward returns once the device finished).
double timed_forward(const Backend& b, std::span<const SequenceStep> batch) {
  const auto t0 = Clock::now();
  b.forward(batch);
  return seconds_since(t0);
}

// A backend's probes for the scope's forwards (Backend::set_probes), none again after it.
class Probed {
 public:
  Probed(const Backend& b, const ForwardProbes& probes) : b_(b) { b_.set_probes(probes); }
  ~Probed() { b_.set_probes({}); }
  Probed(const Probed&) = delete;
  Probed& operator=(const Probed&) = delete;

 private:
  const Backend& b_;
};

// One more forward under the timeline probe: every launch's device time by site (the kernels run
// back to back behind a spin, kernels/timeline.h), largest first, beside the step's measured time.
nlohmann::json timeline_of(const Backend& b, std::span<const SequenceStep> batch, double measured_ms) {
  b.device_report();  // forget earlier timings
  {
    const Probed probed(b, {.timeline = true});
    b.forward(batch);
  }
  const auto rep = b.device_report();
  const std::string prefix = "timeline_ms:";
  std::vector<std::pair<double, std::string>> sites;
  double sum = 0;
  for (const auto& [key, ms] : rep)
    if (key.rfind(prefix, 0) == 0) sites.emplace_back(ms, key.substr(prefix.size())), sum += ms;
  std::sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [ms, name] : sites)
    list.push_back({{"site", name}, {"ms", ms}, {"launches", rep.at("timeline_launches:" + name)}});
  return {{"device_ms_sum", sum}, {"measured_ms", measured_ms}, {"sites", list}};
}

// Forwards under the phases probe (ForwardProbes::phases): where a forward's wall time goes, host
// and device, as the means of `n` runs of `forward(i)` (each one forward; i = 0 from the start):
// the host's clock before the first launch, in the launch and after it, and events around the
// plan's copy, the round and the logits copies. What the device does not cover, host_total −
// device_total, is the step's host and launch overhead. forward(0) runs once unprobed first: a
// round whose scratch grew since its graph was captured (a journaled verify's logit rows) captures
// it again, milliseconds that one mean of five would carry (run 221's verify lines).
template <typename Forward>
nlohmann::json phases_of(const Backend& b, int64_t n, Forward&& forward) {
  forward(0);
  b.device_report();  // forget earlier phases
  {
    const Probed probed(b, {.phases = true});
    for (int64_t i = 0; i < n; ++i) forward(i);
  }
  nlohmann::json out = nlohmann::json::object();
  const std::string prefix = "phase_us:";
  for (const auto& [key, us] : b.device_report())
    if (key.rfind(prefix, 0) == 0) out[key.substr(prefix.size())] = us;
  if (out.contains("host_total") && out.contains("device_total"))
    out["host_outside_device"] = out["host_total"].get<double>() - out["device_total"].get<double>();
  return out;
}

// Forwards under the graph marks probe (kernels/graph_marks.h; the first captures the marked graph,
// the third is read): when each site finished inside the graph, by stream, in enqueue order, with
// what the main stream's chain spent since its previous mark; beside that step's time (each mark
// adds about one launch step to its stream). `forward` runs one step from the same start and
// returns its seconds.
template <typename Forward>
nlohmann::json graph_marks_of(const Backend& b, Forward&& forward) {
  double t = 0;
  {
    const Probed probed(b, {.graph_marks = true});
    for (int i = 0; i < 3; ++i) t = forward();
  }
  const auto rep = b.device_report();
  const std::string prefix = "graph_mark_us:";
  nlohmann::json list = nlohmann::json::array();
  double main_before = 0;
  for (const auto& [key, us] : rep) {  // keys sort by their four-digit enqueue index
    if (key.rfind(prefix, 0) != 0) continue;
    const std::string label = key.substr(prefix.size() + 5);  // "stream site"
    const size_t sp = label.find(' ');
    const std::string stream = label.substr(0, sp), site = sp == std::string::npos ? "" : label.substr(sp + 1);
    nlohmann::json m = {{"stream", stream}, {"site", site}, {"end_us", us}};
    if (stream == "main") m["main_chain_us"] = us - main_before, main_before = us;
    list.push_back(std::move(m));
  }
  return {{"step_ms_marked", t * 1e3}, {"marks", list}};
}

// Text form: each timed forward's sites, largest first (the JSON has them all).
void print_timelines(const nlohmann::json& out) {
  auto show = [](const std::string& label, const nlohmann::json& t) {
    std::printf("\ntimeline %s: device time %.3f ms over the sites (measured step %.3f ms)\n", label.c_str(),
                t["device_ms_sum"].get<double>(), t["measured_ms"].get<double>());
    int shown = 0;
    for (const auto& site : t["sites"]) {
      if (++shown > 12) break;
      std::printf("  %-44s %9.3f ms %5.0f launches\n", site["site"].get<std::string>().c_str(), site["ms"].get<double>(),
                  site["launches"].get<double>());
    }
  };
  if (out["prefill"].contains("timeline")) show("prefill (cuda-fast)", out["prefill"]["timeline"]);
  for (const auto& d : out["decode"])
    if (d.contains("timeline")) show("decode @" + std::to_string(d["context"].get<int64_t>()), d["timeline"]);
  for (const auto& v : out["verify"])
    if (v.contains("timeline")) show("verify " + std::to_string(v["block"].get<int64_t>()), v["timeline"]);
  for (const auto& b : out["batch"])
    if (b.contains("timeline")) show("batch " + std::to_string(b["batch"].get<int64_t>()), b["timeline"]);
}

// ---- the floor: bytes a step must read ------------------------------------------------------

// Bytes of one layer's weights that every row reads (bf16 matrices, f32 vectors that matter).
struct LayerBytes {
  double dense = 0;   // attention projections, compressors, indexer, router, shared expert, hc
  double expert = 0;  // one routed expert (w1, w3, w2)
};

LayerBytes layer_bytes(const ModelConfig& c, int64_t l) {
  const double D = c.hidden_size, H = c.num_attention_heads, d = c.head_dim, ql = c.q_lora_rank, G = c.o_groups;
  const double Ro = c.o_lora_rank, E = c.n_routed_experts, I = c.moe_intermediate_size, Hi = c.index_n_heads;
  const double di = c.index_head_dim, n = c.hc_mult, M = (2 + n) * n;
  LayerBytes b;
  double params = ql * D + H * d * ql + d * D + (G * Ro) * (H * d / G) + D * G * Ro + E * D + 3 * I * D;
  if (c.layer_types[l] == LayerKind::kCSA) params += 2 * (2 * d * D) + 2 * (2 * di * D) + Hi * di * ql + Hi * D;
  if (c.layer_types[l] == LayerKind::kHCA) params += 2 * (d * D);
  b.dense = 2 * params + 2 * (M * n * D) * 4;  // bf16 matrices + the two f32 hc mixes
  b.expert = 2 * 3 * I * D;
  return b;
}

// State bytes one row at position p reads in layer l (window ring, compressed entries, indexer keys).
double state_read_bytes(const ModelConfig& c, int64_t l, int64_t p) {
  const double d = c.head_dim, di = c.index_head_dim;
  double b = std::min<int64_t>(p + 1, c.sliding_window) * d * 4;
  const int64_t m = c.compress_ratio(l);
  if (c.layer_types[l] == LayerKind::kCSA) {
    const int64_t visible = (p + 1) / m;
    b += std::min<int64_t>(visible, c.index_topk) * d * 4 + visible * di * 4;
  } else if (c.layer_types[l] == LayerKind::kHCA) {
    b += static_cast<double>((p + 1) / m) * d * 4;
  }
  return b;
}

// Bytes a round must read: every layer's dense weights once, the distinct experts its rows touch,
// each row's state reads at its position, and the ends (embedding rows, hc head, LM head).
struct Floor {
  double bytes = 0, layer_bytes = 0;  // total, and per layer on average
  double ms = 0, layer_ms = 0;        // at the measured copy bandwidth
};

Floor floor_for(const ModelConfig& c, const std::vector<int64_t>& row_pos, const std::vector<int64_t>& distinct_experts,
                double copy_gbs) {
  Floor f;
  double layers = 0;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const LayerBytes b = layer_bytes(c, l);
    double lb = b.dense + distinct_experts[l] * b.expert;
    for (int64_t p : row_pos) lb += state_read_bytes(c, l, p);
    layers += lb;
  }
  const double D = c.hidden_size, n = c.hc_mult, V = c.vocab_size;
  const double ends = row_pos.size() * D * 2 + n * n * D * 4 + V * D * 2;
  f.bytes = layers + ends;
  f.layer_bytes = layers / c.num_hidden_layers;
  // The copy rate counts bytes read and written: a kernel that only reads moves its bytes at
  // copy_gbs as well (reads and writes share the HBM bandwidth), so bytes / copy_gbs is the floor.
  f.ms = f.bytes / (copy_gbs * 1e9) * 1e3;
  f.layer_ms = f.ms / c.num_hidden_layers;
  return f;
}

// Distinct experts per layer over the rows of a traced forward.
std::vector<int64_t> distinct_experts(const ModelConfig& c, const std::vector<ForwardTrace>& traces) {
  std::vector<int64_t> out;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    std::set<int> seen;
    for (const auto& tr : traces) {
      auto it = tr.arrays.find("router." + std::to_string(l) + ".experts");
      if (it == tr.arrays.end()) throw Error("internal: the forward trace has no routing for layer " + std::to_string(l));
      for (float e : it->second) seen.insert(static_cast<int>(e));
    }
    out.push_back(static_cast<int64_t>(seen.size()));
  }
  return out;
}

// A state of `backend` at the position and with the classes of `from` (another backend's).
std::unique_ptr<State> moved_state(const Backend& backend, const State& from, int64_t capacity) {
  auto s = backend.new_state(capacity);
  s->import_classes(from.position(), from.export_classes());
  return s;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

int run_bench(const BenchOptions& opt, const Context& ctx) {
  const ModelConfig cfg = v4_flash_config(opt.layers, opt.vocab);
  if (!opt.config_out.empty()) write_file_atomic(opt.config_out, v4_flash_config_json(opt.layers, opt.vocab).dump(2) + "\n");
  const std::vector<int64_t> contexts = parse_list(opt.contexts, "--contexts"), batches = parse_list(opt.batches, "--batches"),
                             verify = parse_list(opt.verify, "--verify");
  if (opt.steps < 1 || opt.reps < 1 || opt.prefill < 1) throw Error("--steps, --reps and --prefill must be at least 1");
  const Model model = Model::synthetic(cfg, opt.seed);
  BackendOptions bo;
  for (int32_t d : parse_token_text(opt.devices, "--devices")) bo.devices.push_back(d);
  bo.synthetic_seed = opt.seed;
  const int64_t L = cfg.num_hidden_layers, V = cfg.vocab_size;
  nlohmann::json out;
  out["memra"] = std::string(MEMRA_VERSION) + " (commit " + MEMRA_GIT_COMMIT + ")";
  out["geometry"] = {{"layers", opt.layers}, {"vocab", V}, {"seed", opt.seed}, {"hidden", cfg.hidden_size},
                     {"heads", cfg.num_attention_heads}, {"head_dim", cfg.head_dim}, {"experts", cfg.n_routed_experts},
                     {"top_k", cfg.num_experts_per_tok}, {"moe_intermediate", cfg.moe_intermediate_size}};
  const int device0 = bo.devices.empty() ? 0 : bo.devices[0];  // where the ceilings are measured
  for (const auto& d : probe_cuda().devices)
    if (d.index == device0) out["device"] = d.description;
  out["environment"] = nlohmann::json::object();  // the MEMRA_* settings and A/B switches this run was made under
  for (const auto& [name, value] : memra_environment()) out["environment"][printable(name, 4096)] = printable(value, 4096);

  // ---- ceilings
  const size_t snap_bytes_hint = static_cast<size_t>(opt.snapshot_gib * (1ull << 30));
  using RatesFn = int (*)(int, size_t, double*, char*, size_t);
  auto rates_fn = reinterpret_cast<RatesFn>(cuda_symbol("memra_cuda_device_rates"));
  double rates[4];
  char err[512] = {};
  if (rates_fn(device0, snap_bytes_hint, rates, err, sizeof err) != 0)
    throw Error(std::string("measuring the device's ceilings failed: ") + err);
  const double copy_gbs = rates[0], tflops = rates[1];
  // what one more dependent kernel adds to a captured chain: × a graph's longest kernel chain, the
  // least its critical path spends between kernels
  using StepFn = int (*)(int, double*, char*, size_t);
  auto step_fn = reinterpret_cast<StepFn>(cuda_symbol("memra_cuda_launch_step"));
  double launch_step_us[2];
  if (step_fn(device0, launch_step_us, err, sizeof err) != 0)
    throw Error(std::string("measuring the launch step failed: ") + err);
  // what one dependent phase costs inside one persistent grid instead (a grid-wide barrier)
  auto barrier_fn = reinterpret_cast<StepFn>(cuda_symbol("memra_cuda_grid_barrier"));
  double barrier_us[2];
  if (barrier_fn(device0, barrier_us, err, sizeof err) != 0)
    throw Error(std::string("measuring the grid barrier failed: ") + err);
  out["ceilings"] = {{"copy_GBps", copy_gbs},        {"bf16_TFLOPs", tflops},
                     {"pinned_d2h_GBps", rates[2]},  {"pinned_h2d_GBps", rates[3]},
                     {"pinned_bytes", snap_bytes_hint}, {"launch_step_us_pdl", launch_step_us[0]},
                     {"launch_step_us", launch_step_us[1]}, {"grid_barrier_us", barrier_us[0]},
                     {"grid_barrier_us_one_block_per_sm", barrier_us[1]}};
  note(ctx, "ceilings: copy " + fmt("%.0f", copy_gbs) + " GB/s, bf16 " + fmt("%.0f", tflops) + " TFLOP/s");

  // ---- backends (weights made on the device)
  auto t0 = Clock::now();
  BackendOptions timed = bo;
  timed.time_linears = true;
  auto fast = make_backend("cuda-fast", model, timed);
  auto exact = make_backend("cuda", model, bo);
  const double build_s = seconds_since(t0);
  const std::map<std::string, double> mem = exact->device_report();
  note(ctx, "weights made on the device in " + fmt("%.0f", build_s * 1e3) + " ms (" + fmt("%.2f", mem.at("weights_bytes") / 1e9) +
                " GB, held by " + fmt("%.0f", mem.at("weights_holders")) +
                " backends)");

  // ---- prefill (cuda-fast)
  {
    const auto prompt = tokens("prompt", opt.seed, opt.prefill, V);
    std::vector<double> s;
    double lin_ms = 0, lin_flop = 0;
    // The last row's logits by hash (outside the timing): an A/B that claims the same bits shows
    // them, and every repetition must give them (cuda-fast is deterministic for one shape).
    std::string logits_hash;
    bool reps_same_bits = true;
    for (int64_t r = 0; r <= opt.reps; ++r) {  // first run: warm-up
      auto st = fast->new_state(opt.prefill);
      SequenceStep step{st.get(), prompt, nullptr, nullptr};
      fast->device_report();  // reset the linear timers
      const double t = timed_forward(*fast, std::span<const SequenceStep>(&step, 1));
      const auto rep = fast->device_report();
      const std::vector<float> last = fast->last_logits(*st);
      const std::string h = xxh3_128(last.data(), last.size() * sizeof(float)).hex();
      if (r > 0 && h != logits_hash) reps_same_bits = false;
      logits_hash = h;
      if (r == 0) continue;
      s.push_back(t);
      lin_ms += rep.count("linear_ms") ? rep.at("linear_ms") : 0;
      lin_flop += rep.count("linear_flop") ? rep.at("linear_flop") : 0;
    }
    const double t = median(s);
    lin_ms /= opt.reps, lin_flop /= opt.reps;
    const double lin_rate = lin_ms > 0 ? lin_flop / (lin_ms * 1e-3) / 1e12 : 0;
    // the exact realization's prefill of the same prompt, once (reference)
    auto st = exact->new_state(opt.prefill);
    SequenceStep step{st.get(), prompt, nullptr, nullptr};
    const double exact_s = timed_forward(*exact, std::span<const SequenceStep>(&step, 1));
    nlohmann::json timeline;
    if (opt.timeline) {
      auto tst = fast->new_state(opt.prefill);
      SequenceStep tstep{tst.get(), prompt, nullptr, nullptr};
      timeline = timeline_of(*fast, std::span<const SequenceStep>(&tstep, 1), t * 1e3);
    }
    out["prefill"] = {{"tokens", opt.prefill},
                      {"seconds", t},
                      {"tokens_per_s", opt.prefill / t},
                      {"linear_seconds", lin_ms * 1e-3},
                      {"linear_TFLOPs", lin_rate},
                      {"linear_share_of_bf16_rate", lin_rate / tflops},
                      {"whole_prefill_linear_TFLOPs", lin_flop / t / 1e12},
                      {"exact_seconds", exact_s},
                      {"exact_tokens_per_s", opt.prefill / exact_s},
                      {"last_logits_xxh3", logits_hash},
                      {"reps_same_bits", reps_same_bits}};
    if (opt.timeline) out["prefill"]["timeline"] = timeline;
  }

  // ---- decode, batch, verify
  const int64_t extra = std::max<int64_t>(opt.steps + 4, *std::max_element(verify.begin(), verify.end())) + 8;
  out["decode"] = nlohmann::json::array();
  std::unique_ptr<State> first_ctx;  // the first context's exact state
  for (size_t ci = 0; ci < contexts.size(); ++ci) {
    const int64_t ctx_len = contexts[ci];
    auto fs = fast->new_state(ctx_len);
    const auto prompt = tokens("context", opt.seed, ctx_len, V);
    SequenceStep fill{fs.get(), prompt, nullptr, nullptr};
    const double fill_s = timed_forward(*fast, std::span<const SequenceStep>(&fill, 1));
    auto es = moved_state(*exact, *fs, ctx_len + extra);
    fs.reset();
    const StateMark mark = es->mark();
    const auto next = tokens("decode", opt.seed, opt.steps + 3, V);
    // twice from the same state: kernel by kernel (ForwardProbes::no_graphs), then as CUDA graphs
    // (the default); the logits of every step must be the same bits
    double steps_s[2];
    std::vector<float> logits[2];
    for (int pass = 0; pass < 2; ++pass) {
      const Probed probed(*exact, {.no_graphs = pass == 0});
      es->rewind(mark);
      logits[pass].assign(static_cast<size_t>(opt.steps + 3) * V, 0.0f);
      std::vector<double> s;
      for (int64_t i = 0; i < opt.steps + 3; ++i) {
        SequenceStep st{es.get(), std::span<const int32_t>(&next[i], 1), logits[pass].data() + i * V, nullptr};
        const double t = timed_forward(*exact, std::span<const SequenceStep>(&st, 1));
        if (i >= 3) s.push_back(t);
      }
      steps_s[pass] = median(s);
    }
    es->rewind(mark);
    nlohmann::json timeline;
    if (opt.timeline) {
      SequenceStep st{es.get(), std::span<const int32_t>(&next[0], 1), nullptr, nullptr};
      timeline = timeline_of(*exact, std::span<const SequenceStep>(&st, 1), steps_s[1] * 1e3);
      es->rewind(mark);
    }
    nlohmann::json marks;
    if (opt.graph_marks) {
      marks = graph_marks_of(*exact, [&] {
        es->rewind(mark);
        SequenceStep st{es.get(), std::span<const int32_t>(&next[0], 1), nullptr, nullptr};
        return timed_forward(*exact, std::span<const SequenceStep>(&st, 1));
      });
      es->rewind(mark);
    }
    std::vector<float> phase_logits(static_cast<size_t>(V));
    const nlohmann::json phases = phases_of(*exact, opt.steps, [&](int64_t i) {
      if (i == 0) es->rewind(mark);
      SequenceStep st{es.get(), std::span<const int32_t>(&next[i], 1), phase_logits.data(), nullptr};
      exact->forward(std::span<const SequenceStep>(&st, 1));
    });
    es->rewind(mark);
    const bool graph_bits = std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)) == 0;
    if (!graph_bits) out["failures"].push_back("decode at " + std::to_string(ctx_len) + ": CUDA graphs change the logits");
    // the decode graph's kernel → kernel edges, and how many are programmatic (kernels/launch.cuh)
    const auto graph_rep = exact->device_report();
    auto rep_of = [&](const char* k) { return graph_rep.count(k) ? graph_rep.at(k) : 0.0; };
    const double step_s = steps_s[1];
    std::vector<int64_t> six(L, cfg.num_experts_per_tok);
    const Floor f = floor_for(cfg, {ctx_len}, six, copy_gbs);
    out["decode"].push_back({{"context", ctx_len},
                             {"context_fill_seconds_cuda_fast", fill_s},
                             {"step_ms", step_s * 1e3},
                             {"step_ms_without_graphs", steps_s[0] * 1e3},
                             {"graphs_bits_equal", graph_bits},
                             // every step's logits, hashed: two builds or settings that claim the same
                             // bits (a kernel change of the exact realization) must print the same value
                             {"logits_xxh3", xxh3_128(logits[1].data(), logits[1].size() * sizeof(float)).hex()},
                             {"ms_per_layer_token", step_s * 1e3 / L},
                             {"floor_bytes", f.bytes},
                             {"floor_ms", f.ms},
                             {"floor_ms_per_layer", f.layer_ms},
                             {"ratio_to_floor", step_s * 1e3 / f.ms},
                             {"graph_kernel_edges", rep_of("graph_kernel_edges")},
                             {"graph_programmatic_edges", rep_of("graph_programmatic_edges")},
                             // the longest chain of dependent kernels in the step's graph, and what
                             // it pays between kernels at the measured launch step
                             {"graph_critical_kernels", rep_of("graph_critical_kernels")},
                             {"critical_launch_ms", rep_of("graph_critical_kernels") * launch_step_us[0] * 1e-3}});
    if (opt.timeline) out["decode"].back()["timeline"] = timeline;
    if (opt.graph_marks) out["decode"].back()["graph_marks"] = marks;
    out["decode"].back()["phases_us"] = phases;
    note(ctx, "decode at " + std::to_string(ctx_len) + ": " + fmt("%.3f", step_s * 1e3 / L) + " ms/layer/token, floor " +
                  fmt("%.3f", f.layer_ms) +
                  (phases.contains("host_outside_device")
                       ? ", " + fmt("%.1f", phases["host_outside_device"].get<double>()) + " us a step outside the device"
                       : ""));
    if (ci == 0) first_ctx = std::move(es);
  }

  // verify blocks at the first context: one forward of b tokens vs b decode steps
  const int64_t ctx0 = contexts[0];
  const double step0_ms = out["decode"][0]["step_ms"].get<double>();
  out["verify"] = nlohmann::json::array();
  {
    const StateMark mark = first_ctx->mark();
    for (int64_t b : verify) {
      const auto block = tokens("verify", opt.seed, b, V);
      std::vector<double> s;
      std::vector<int64_t> touched;
      for (int64_t r = 0; r <= opt.reps; ++r) {
        first_ctx->rewind(mark);
        ForwardTrace tr;
        SequenceStep st{first_ctx.get(), block, nullptr, r == 0 ? &tr : nullptr};
        const double t = timed_forward(*exact, std::span<const SequenceStep>(&st, 1));
        if (r == 0) touched = distinct_experts(cfg, {tr});
        else s.push_back(t);
      }
      // A speculative round's own costs: mark, journaled verify, rewind keeping b/2 rows.
      std::vector<double> mark_s, journal_s, keep_s;
      const int64_t kept = b / 2;
      for (int64_t r = 0; r <= opt.reps && b >= 2; ++r) {
        first_ctx->rewind(mark);
        auto t0 = Clock::now();
        const StateMark round_mark = first_ctx->mark();
        const double tm = seconds_since(t0);
        SequenceStep st{first_ctx.get(), block, nullptr, nullptr, true};
        const double tj = timed_forward(*exact, std::span<const SequenceStep>(&st, 1));
        t0 = Clock::now();
        first_ctx->rewind(round_mark, kept);
        exact->sync();
        const double tk = seconds_since(t0);
        if (r == 0) continue;  // a warm-up (the journal's first allocation)
        mark_s.push_back(tm), journal_s.push_back(tj), keep_s.push_back(tk);
      }
      first_ctx->rewind(mark);
      nlohmann::json timeline;
      if (opt.timeline) {
        SequenceStep st{first_ctx.get(), block, nullptr, nullptr};
        timeline = timeline_of(*exact, std::span<const SequenceStep>(&st, 1), median(s) * 1e3);
        first_ctx->rewind(mark);
      }
      nlohmann::json marks;
      if (opt.graph_marks) {
        marks = graph_marks_of(*exact, [&] {
          first_ctx->rewind(mark);
          SequenceStep st{first_ctx.get(), block, nullptr, nullptr};
          return timed_forward(*exact, std::span<const SequenceStep>(&st, 1));
        });
        first_ctx->rewind(mark);
      }
      const nlohmann::json phases = phases_of(*exact, opt.reps, [&](int64_t) {
        first_ctx->rewind(mark);
        SequenceStep st{first_ctx.get(), block, nullptr, nullptr};
        exact->forward(std::span<const SequenceStep>(&st, 1));
      });
      first_ctx->rewind(mark);
      std::vector<int64_t> pos;
      for (int64_t i = 0; i < b; ++i) pos.push_back(ctx0 + i);
      const Floor f = floor_for(cfg, pos, touched, copy_gbs);
      const double ms = median(s) * 1e3;
      nlohmann::json ex = nlohmann::json::array();
      for (int64_t e : touched) ex.push_back(e);
      out["verify"].push_back({{"block", b},
                               {"context", ctx0},
                               {"ms", ms},
                               {"decode_steps_ms", b * step0_ms},
                               {"block_over_steps", ms / (b * step0_ms)},
                               {"block_over_one_step", ms / step0_ms},
                               {"distinct_experts_per_layer", ex},
                               {"floor_ms", f.ms},
                               {"ratio_to_floor", ms / f.ms}});
      if (!keep_s.empty())
        out["verify"].back()["round"] = {{"mark_ms", median(mark_s) * 1e3},
                                         {"journaled_ms", median(journal_s) * 1e3},
                                         {"kept_rows", kept},
                                         {"keep_ms", median(keep_s) * 1e3}};
      if (opt.timeline) out["verify"].back()["timeline"] = timeline;
      if (opt.graph_marks) out["verify"].back()["graph_marks"] = marks;
      out["verify"].back()["phases_us"] = phases;
    }
  }

  // batches at the first context: B states with its classes, one token each per step
  out["batch"] = nlohmann::json::array();
  {
    const std::vector<CacheClass> classes = first_ctx->export_classes();
    for (int64_t B : batches) {
      std::vector<std::unique_ptr<State>> states;
      for (int64_t i = 0; i < B; ++i) {
        states.push_back(exact->new_state(ctx0 + extra));
        states.back()->import_classes(ctx0, classes);
      }
      std::vector<std::vector<int32_t>> toks(B);
      for (int64_t i = 0; i < B; ++i) toks[i] = tokens("batch." + std::to_string(i), opt.seed, opt.steps + 3, V);
      std::vector<double> s;
      std::vector<int64_t> touched;
      std::vector<float> logits_first(V);
      for (int64_t step = 0; step < opt.steps + 3; ++step) {
        std::vector<SequenceStep> batch(B);
        std::vector<ForwardTrace> traces(step == 0 ? B : 0);
        for (int64_t i = 0; i < B; ++i) {
          batch[i].state = states[i].get();
          batch[i].tokens = std::span<const int32_t>(&toks[i][step], 1);
          batch[i].logits = i == B - 1 && step == 0 ? logits_first.data() : nullptr;
          batch[i].trace = step == 0 ? &traces[i] : nullptr;
        }
        const double t = timed_forward(*exact, batch);
        if (step == 0) touched = distinct_experts(cfg, traces);
        if (step >= 3) s.push_back(t);
      }
      // one more step of the batch, from wherever its states stand (the same shape, the same graph)
      const auto last_step = [&] {
        std::vector<SequenceStep> batch(B);
        for (int64_t i = 0; i < B; ++i)
          batch[i] = SequenceStep{states[i].get(), std::span<const int32_t>(&toks[i][opt.steps + 2], 1), nullptr, nullptr};
        return batch;
      };
      nlohmann::json timeline;
      if (opt.timeline) timeline = timeline_of(*exact, last_step(), median(s) * 1e3);
      nlohmann::json marks;
      if (opt.graph_marks) marks = graph_marks_of(*exact, [&] { return timed_forward(*exact, last_step()); });
      // the last sequence alone, from the same start: the bits it got inside the batch
      auto alone = exact->new_state(ctx0 + extra);
      alone->import_classes(ctx0, classes);
      std::vector<float> logits_alone(V);
      SequenceStep st{alone.get(), std::span<const int32_t>(&toks[B - 1][0], 1), logits_alone.data(), nullptr};
      exact->forward(std::span<const SequenceStep>(&st, 1));
      const bool same = std::memcmp(logits_alone.data(), logits_first.data(), V * sizeof(float)) == 0;
      std::vector<int64_t> pos(B, ctx0);
      const Floor f = floor_for(cfg, pos, touched, copy_gbs);
      const double t = median(s);
      nlohmann::json ex = nlohmann::json::array();
      for (int64_t e : touched) ex.push_back(e);
      out["batch"].push_back({{"batch", B},
                              {"context", ctx0},
                              {"step_ms", t * 1e3},
                              {"tokens_per_s", B / t},
                              {"distinct_experts_per_layer", ex},
                              {"floor_ms", f.ms},
                              {"floor_tokens_per_s", B / (f.ms * 1e-3)},
                              {"ratio_to_floor", t * 1e3 / f.ms},
                              {"last_sequence_bits_equal_alone", same}});
      if (opt.timeline) out["batch"].back()["timeline"] = timeline;
      if (opt.graph_marks) out["batch"].back()["graph_marks"] = marks;
      note(ctx, "batch " + std::to_string(B) + ": " + fmt("%.0f", B / t) + " tokens/s, floor " + fmt("%.0f", B / (f.ms * 1e-3)) +
                    (same ? "" : ", NOT bit-identical to running alone"));
      if (!same) out["failures"].push_back("batch " + std::to_string(B) + ": a sequence differs from running alone");
    }
  }
  first_ctx.reset();

  // ---- snapshot / restore of a large state (random finite classes, streamed in)
  {
    const int64_t per_token = [&] {
      auto a = trunk_layout(cfg, 1 << 20), b = trunk_layout(cfg, 1 << 19);
      size_t x = 0, y = 0;
      for (const auto& l : a) x += l.nbytes();
      for (const auto& l : b) y += l.nbytes();
      return static_cast<int64_t>((x - y) >> 19);
    }();
    const int64_t pos = std::max<int64_t>(static_cast<int64_t>(snap_bytes_hint / std::max<int64_t>(per_token, 1)), 1024);
    auto st = exact->new_state(pos);
    std::vector<ClassLayout> layout = st->layout(pos);
    size_t total = 0;
    for (const auto& l : layout) total += l.nbytes();
    HostBuffer src = exact->host_buffer(total), dst = exact->host_buffer(total);
    auto* f = reinterpret_cast<float*>(src.data());
    for (size_t i = 0; i < total / 4; ++i) f[i] = static_cast<float>(synthetic_hash(12345u, i) >> 8) * 5.96e-8f - 0.5f;
    auto t1 = Clock::now();
    st->import_stream(pos, src.data(), total);
    const double restore_s = seconds_since(t1);
    std::vector<double> s;
    std::vector<Hash128> hashes;
    for (int r = 0; r < 3; ++r) {
      t1 = Clock::now();
      hashes = export_hashed(*st, dst.data(), total);  // the product path: class hashes on the device
      s.push_back(seconds_since(t1));
    }
    const bool equal = std::memcmp(src.data(), dst.data(), total) == 0;
    t1 = Clock::now();
    const std::vector<Hash128> host_hashes = export_hashed(*st, dst.data(), total, 0, false);
    const double host_s = seconds_since(t1);
    t1 = Clock::now();
    const StreamedSnapshot full = stream_snapshot(*exact, *st);
    const double full_s = seconds_since(t1);
    const bool same_hashes = full.hashes == hashes && host_hashes == hashes;
    const double snap_gbs = total / median(s) / 1e9, restore_gbs = total / restore_s / 1e9;
    out["snapshot"] = {{"bytes", total},
                       {"position", pos},
                       {"snapshot_GBps", snap_gbs},
                       {"snapshot_share_of_pinned_d2h", snap_gbs / rates[2]},
                       {"restore_GBps", restore_gbs},
                       {"restore_share_of_pinned_h2d", restore_gbs / rates[3]},
                       {"stream_snapshot_with_pinned_alloc_GBps", total / full_s / 1e9},
                       {"snapshot_host_hashed_GBps", total / host_s / 1e9},
                       {"round_trip_bits_equal", equal && same_hashes}};
    if (!(equal && same_hashes)) out["failures"].push_back("snapshot round trip differs");
  }

  // ---- memory
  {
    const auto rep = exact->device_report();
    auto per_token = [](const ModelConfig& c) {
      auto a = trunk_layout(c, 1 << 20), b = trunk_layout(c, 1 << 19);
      size_t x = 0, y = 0;
      for (const auto& l : a) x += l.nbytes();
      for (const auto& l : b) y += l.nbytes();
      return static_cast<double>(x - y) / (1 << 19);
    };
    const double flash = per_token(v4_flash_config(v4_flash_schedule(), V));
    out["memory"] = {{"weights_bytes", rep.at("weights_bytes")},
                     {"weights_bytes_per_layer", rep.at("weights_bytes") / L},
                     {"scratch_bytes", rep.at("scratch_bytes")},
                     {"state_bytes_per_token", per_token(cfg)},
                     {"v4_flash_state_bytes_per_token", flash},
                     {"architecture_note_bf16_bytes_per_token", 6880},
                     {"v4_flash_over_note", flash / 6880.0}};
  }

  if (opt.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "memra bench: V4-Flash layer geometry, layers " << opt.layers << ", vocab " << V << ", seed " << opt.seed << ", "
              << out.value("device", std::string("?")) << "\n";
    if (!out["environment"].empty()) {
      std::cout << "environment:";
      for (const auto& [name, value] : out["environment"].items()) std::cout << " " << name << "=" << value.get<std::string>();
      std::cout << "\n";
    }
    std::cout << "ceilings: copy " << fmt("%.0f", copy_gbs) << " GB/s, bf16 " << fmt("%.0f", tflops) << " TFLOP/s, pinned D2H "
              << fmt("%.1f", rates[2]) << " / H2D " << fmt("%.1f", rates[3]) << " GB/s, launch step " << fmt("%.2f", launch_step_us[0])
              << " us (PDL) / " << fmt("%.2f", launch_step_us[1]) << " us, grid barrier " << fmt("%.2f", barrier_us[0])
              << " us\n\n";
    std::printf("%-34s %12s %12s %8s\n", "measure", "memra", "floor", "ratio");
    for (const auto& d : out["decode"])
      std::printf("%-34s %12.3f %12.3f %8.2f\n", ("decode ms/layer/token @" + std::to_string(d["context"].get<int64_t>())).c_str(),
                  d["ms_per_layer_token"].get<double>(), d["floor_ms_per_layer"].get<double>(), d["ratio_to_floor"].get<double>());
    for (const auto& d : out["decode"])
      std::printf("  decode @%lld: %.0f kernels on the graph's longest chain, %.3f ms between them of a %.3f ms step\n",
                  static_cast<long long>(d["context"].get<int64_t>()), d["graph_critical_kernels"].get<double>(),
                  d["critical_launch_ms"].get<double>(), d["step_ms"].get<double>());
    for (const auto& b : out["batch"])
      std::printf("%-34s %12.0f %12.0f %8.2f\n", ("batch " + std::to_string(b["batch"].get<int64_t>()) + " tokens/s").c_str(),
                  b["tokens_per_s"].get<double>(), b["floor_tokens_per_s"].get<double>(), b["ratio_to_floor"].get<double>());
    for (const auto& v : out["verify"])
      std::printf("%-34s %12.3f %12.3f %8.2f   (%.2fx one step, %.2f of %lld steps)\n",
                  ("verify " + std::to_string(v["block"].get<int64_t>()) + " ms").c_str(), v["ms"].get<double>(),
                  v["floor_ms"].get<double>(), v["ratio_to_floor"].get<double>(), v["block_over_one_step"].get<double>(),
                  v["block_over_steps"].get<double>(), static_cast<long long>(v["block"].get<int64_t>()));
    const auto& p = out["prefill"];
    std::printf("%-34s %12.0f %12s %8s   (linears %.0f TFLOP/s = %.0f%% of bf16)\n",
                ("prefill " + std::to_string(opt.prefill) + " tokens/s (cuda-fast)").c_str(), p["tokens_per_s"].get<double>(), "",
                "", p["linear_TFLOPs"].get<double>(), 100 * p["linear_share_of_bf16_rate"].get<double>());
    const auto& sn = out["snapshot"];
    std::printf("%-34s %12.1f %12.1f %8.2f\n", "snapshot GB/s (hashed) vs pinned", sn["snapshot_GBps"].get<double>(), rates[2],
                sn["snapshot_share_of_pinned_d2h"].get<double>());
    std::printf("%-34s %12.1f %12.1f %8.2f\n", "restore GB/s vs pinned", sn["restore_GBps"].get<double>(), rates[3],
                sn["restore_share_of_pinned_h2d"].get<double>());
    const auto& m = out["memory"];
    std::printf("\nweights %.2f GB (%.2f GB/layer), scratch %.1f MB, state %.0f B/token (V4-Flash 43 layers: %.0f B/token, %.2fx the note's bf16 %d)\n",
                m["weights_bytes"].get<double>() / 1e9, m["weights_bytes_per_layer"].get<double>() / 1e9,
                m["scratch_bytes"].get<double>() / 1e6, m["state_bytes_per_token"].get<double>(),
                m["v4_flash_state_bytes_per_token"].get<double>(), m["v4_flash_over_note"].get<double>(), 6880);
    if (opt.timeline) print_timelines(out);
  }
  return out.contains("failures") ? kExitNegative : kExitOk;
}

}  // namespace

void setup_bench(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<BenchOptions>();
  auto* sub = app.add_subcommand(
      "bench", "Time DeepSeek-V4 at V4-Flash layer geometry on the GPU with seeded weights (no checkpoint)");
  sub->add_option("--layers", opt->layers, "Layer kinds, one letter each: S sliding, C CSA, H HCA")->capture_default_str();
  add_count(sub, "--vocab", opt->vocab, "Vocabulary size (the LM head is not what is measured)", 2, 1 << 20)->capture_default_str();
  add_count(sub, "--seed", opt->seed, "Seed of the weights and token streams (bench/transformers_bench.py uses the same)", 0,
            4294967295)
      ->capture_default_str();
  add_count_list(sub, "--devices", opt->devices, "GPU indices, e.g. 0,1", 0, 1023)->capture_default_str();
  sub->add_option("--contexts", opt->contexts, "Contexts for batch-1 decode (the first also for batches and verify)")
      ->capture_default_str();
  sub->add_option("--batches", opt->batches, "Batch sizes for decode throughput")->capture_default_str();
  sub->add_option("--verify", opt->verify, "Speculative verify block sizes")->capture_default_str();
  add_count(sub, "--prefill", opt->prefill, "Prefill tokens (cuda-fast)", 1, 1 << 20)->capture_default_str();
  add_count(sub, "--steps", opt->steps, "Timed decode steps per measurement", 1, 1 << 20)->capture_default_str();
  add_count(sub, "--reps", opt->reps, "Timed repetitions of prefill and verify", 1, 1000)->capture_default_str();
  sub->add_option("--snapshot-gib", opt->snapshot_gib, "Size of the state for snapshot/restore bandwidth")
      ->type_name("GIB")
      ->check(CLI::Range(0.001, 1024.0))
      ->capture_default_str();
  sub->add_option("--config-out", opt->config_out, "Also write the model's config.json here (for transformers)");
  sub->add_flag("--json", opt->json, "Print one JSON document");
  sub->add_flag("--timeline", opt->timeline,
                "Also time every kernel launch of one prefill, decode, verify and batch step (device time by site)");
  sub->add_flag("--graph-marks", opt->graph_marks,
                "Also mark when each site of one decode, verify and batch step finishes inside its CUDA graph (by stream)");
  sub->callback([opt, &ctx] { ctx.run = [opt, &ctx] { return run_bench(*opt, ctx); }; });
}

}  // namespace memra::cli
