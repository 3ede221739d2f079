// Backend-level GPU checks on real checkpoints (models/tiny, models/tiny-bf16), through the same
// make_backend() the CLI uses:
//  - cuda vs cpu (exact): prefill and teacher-forced decode logits, rel-to-max ≤ 1e-5, same argmax;
//  - chunk invariance: every chunk width 1…64 gives the one-call logits and classes by bits;
//  - round splitting (a sequence and a batch spread over several internal rounds): bits;
//  - batch invariance: four sequences of different lengths in one forward, and batched decode
//    steps, give each sequence's solo bits;
//  - speculative verify: a block of 6 tokens in one forward = 6 single steps, by bits;
//  - mark and rewind: a rejected block of 8 leaves no trace in what follows, by bits; and a rewind
//    keeping the first rows of a journaled block (no re-run) equals running them alone, by bits;
//  - restore round trip into a larger capacity, bits; cpu ⇄ cuda state exchange through classes;
//  - --devices 0,1 (when two GPUs exist): every logit and class of the one-GPU run, by bits;
//  - cuda-fast: prefill logits against the exact CPU within the band rule (docs/bands.md); on a
//    checkpoint with packed (FP8/FP4) weights also a 160-row prefill, whose linears dequantise one
//    matrix at a time for cuBLAS;
//  - packed checkpoints (models/tiny-fp8, models/tiny-fp4): the device holds exactly the stored
//    codes and scales of every quantised matrix and no dequantised copy (weights_bytes bound);
//    the logits checks above apply unchanged (the packed kernels decode the CPU's values exactly,
//    so the realization's bound, rel-to-max ≤ 1e-5, is the f32-accumulation one);
//  - programmatic dependent launch: programmatic edges in the decode graph, and the bits of the
//    graphed rounds with and without it and of the eager rounds equal;
//  - timings (indicative only): prefill tokens/s and decode ms/token.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>

#include "ab_switch.h"
#include "cuda_backend.h"
#include "cuda_check.h"
#include "engine/backend.h"
#include "engine/realization.h"
#include "gate/band.h"
#include "harness.h"
#include "model/model.h"
#include "parity/compare.h"
#include "parity/decision_log.h"
#include "pdl.h"
#include "state/class_hash.h"
#include "state/snapshot.h"

namespace memra::cuda::test {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<float> run(const Backend& b, State& s, std::span<const int32_t> tokens) {
  std::vector<float> logits(tokens.size() * b.vocab_size());
  SequenceStep st;
  st.state = &s;
  st.tokens = tokens;
  st.logits = logits.data();
  b.forward(std::span<const SequenceStep>(&st, 1));
  return logits;
}

std::vector<float> run_chunked(const Backend& b, State& s, std::span<const int32_t> tokens, int64_t width) {
  std::vector<float> all;
  for (size_t i = 0; i < tokens.size(); i += width) {
    auto part = run(b, s, tokens.subspan(i, std::min<size_t>(width, tokens.size() - i)));
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

int32_t argmax(const float* row, int64_t V) {
  int32_t best = 0;
  for (int64_t i = 1; i < V; ++i)
    if (row[i] > row[best]) best = static_cast<int32_t>(i);
  return best;
}

int argmax_disagreements(const std::vector<float>& a, const std::vector<float>& b, int64_t V) {
  int n = 0;
  for (size_t r = 0; r * V < a.size(); ++r) n += argmax(a.data() + r * V, V) != argmax(b.data() + r * V, V);
  return n;
}

std::vector<int32_t> prompt_ids(int64_t V, int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng.integer(2, V - 1));
  return t;
}

// How much each check runs: full (every chunk width), quick (fewer widths) and race (the fewest
// launches that still reach every kernel path: compute-sanitizer's racecheck serialises each
// shared-memory access, and the quick workload ran past 300 s under it).
struct Workload {
  int64_t prompt = 100, steps = 20;          // prefill length, then teacher-forced decode steps
  std::vector<int64_t> widths;               // chunk widths against one call
  std::vector<int64_t> batch_lens = {17, 40, 1, 70};
  int batch_steps = 5;                       // batched decode steps
  int64_t warm = 17, cont = 11;              // restore: steps before the snapshot and after
};

Workload workload(bool quick, bool race) {
  Workload w;
  if (race) {
    w.prompt = 40, w.steps = 3, w.widths = {7, 40}, w.batch_lens = {17, 1}, w.batch_steps = 1, w.warm = 3, w.cont = 2;
    return w;
  }
  for (int64_t c = 1; c <= 64; ++c)
    if (!quick || c == 1 || c == 7 || c == 64) w.widths.push_back(c);
  return w;
}

std::string widths_text(const std::vector<int64_t>& widths) {
  if (widths.size() == 64) return "1..64";
  std::string t;
  for (int64_t w : widths) {
    if (!t.empty()) t += ',';
    t += std::to_string(w);
  }
  return t;
}

struct DeviceRun {  // what a device set produced, for the two-GPU comparison
  std::vector<float> prefill, decode, batch;
  std::vector<CacheClass> classes;
};

DeviceRun check_exact(const Model& model, const Backend& cpu, const std::vector<int>& devices, Report& rep,
                      const std::string& tag, const Workload& W) {
  const ModelConfig& cfg = model.config();
  const int64_t V = cfg.vocab_size, P = W.prompt, steps = W.steps;
  DeviceRun out;
  BackendOptions opt;
  opt.devices = devices;
  auto gpu = make_backend("cuda", model, opt);
  const std::vector<int32_t> prompt = prompt_ids(V, P, 7);

  // 1. cuda vs cpu: prefill, then teacher-forced decode (the CPU's argmax fed to both).
  {
    auto cs = cpu.new_state(P + steps), gs = gpu->new_state(P + steps);
    const auto c_pre = run(cpu, *cs, prompt);
    const auto t0 = Clock::now();
    const auto g_pre = run(*gpu, *gs, prompt);
    const double prefill_s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::vector<float> c_dec, g_dec;
    int32_t tok = argmax(c_pre.data() + (P - 1) * V, V);
    const auto t1 = Clock::now();
    double gpu_decode_s = 0;
    for (int64_t s = 0; s < steps; ++s) {
      auto c = run(cpu, *cs, std::span<const int32_t>(&tok, 1));
      const auto g0 = Clock::now();
      auto g = run(*gpu, *gs, std::span<const int32_t>(&tok, 1));
      gpu_decode_s += std::chrono::duration<double>(Clock::now() - g0).count();
      c_dec.insert(c_dec.end(), c.begin(), c.end());
      g_dec.insert(g_dec.end(), g.begin(), g.end());
      tok = argmax(c.data(), V);
    }
    (void)t1;
    const Diff dp = compare(g_pre, c_pre), dd = compare(g_dec, c_dec);
    const int ap = argmax_disagreements(g_pre, c_pre, V), ad = argmax_disagreements(g_dec, c_dec, V);
    rep.add("cuda vs cpu logits" + tag, dp.rel_to_max() <= 1e-5 && dd.rel_to_max() <= 1e-5 && ap == 0 && ad == 0 && dp.unwritten == 0,
            "prefill rel " + fmt("%.2e", dp.rel_to_max()) + " decode rel " + fmt("%.2e", dd.rel_to_max()) +
                " argmax diffs " + std::to_string(ap) + "+" + std::to_string(ad) + " | prefill " +
                fmt("%.0f", P / prefill_s) + " tok/s, decode " + fmt("%.3f", 1e3 * gpu_decode_s / steps) + " ms/token");
    const Diff dl = compare(gpu->last_logits(*gs), cpu.last_logits(*cs));
    rep.add("cuda last_logits vs cpu" + tag, dl.rel_to_max() <= 1e-5, "rel " + fmt("%.2e", dl.rel_to_max()));
    out.prefill = g_pre;
    out.decode = g_dec;
    out.classes = gs->export_classes();
  }

  // 2. chunk invariance: widths 1…64 against one call.
  {
    auto ref_state = gpu->new_state(P);
    const auto ref = run(*gpu, *ref_state, prompt);
    const auto ref_classes = ref_state->export_classes();
    int equal = 0, tried = 0;
    std::string first_bad;
    for (int64_t w : W.widths) {
      ++tried;
      auto st = gpu->new_state(P);
      const auto lg = run_chunked(*gpu, *st, prompt, w);
      const bool ok = bits_equal(lg, ref) && classes_bit_equal(st->export_classes(), ref_classes);
      equal += ok;
      if (!ok && first_bad.empty()) first_bad = " first differing width " + std::to_string(w);
    }
    rep.add("chunk widths " + widths_text(W.widths) + " bit-identical" + tag, equal == tried,
            std::to_string(equal) + "/" + std::to_string(tried) + first_bad);
  }

  // 3. batch invariance: four sequences in one forward, then batched decode steps.
  {
    const std::vector<int64_t>& lens = W.batch_lens;
    const int n = static_cast<int>(lens.size());
    std::vector<std::vector<int32_t>> prompts;
    for (size_t i = 0; i < lens.size(); ++i) prompts.push_back(prompt_ids(V, lens[i], 100 + i));
    std::vector<std::unique_ptr<State>> solo, batched;
    std::vector<std::vector<float>> solo_logits, batch_logits(lens.size());
    for (size_t i = 0; i < lens.size(); ++i) {
      solo.push_back(gpu->new_state(lens[i] + 5));
      batched.push_back(gpu->new_state(lens[i] + 5));
      solo_logits.push_back(run(*gpu, *solo.back(), prompts[i]));
    }
    std::vector<SequenceStep> steps_v(lens.size());
    for (size_t i = 0; i < lens.size(); ++i) {
      batch_logits[i].resize(lens[i] * V);
      steps_v[i].state = batched[i].get();
      steps_v[i].tokens = prompts[i];
      steps_v[i].logits = batch_logits[i].data();
    }
    gpu->forward(steps_v);
    int equal = 0;
    for (size_t i = 0; i < lens.size(); ++i) equal += bits_equal(batch_logits[i], solo_logits[i]);
    // five batched decode steps, each sequence its own greedy token
    int dec_equal = 0;
    for (int s = 0; s < W.batch_steps; ++s) {
      std::vector<int32_t> toks(lens.size());
      std::vector<std::vector<float>> bl(lens.size(), std::vector<float>(V));
      for (size_t i = 0; i < lens.size(); ++i) {
        const auto ll = gpu->last_logits(*batched[i]);
        toks[i] = argmax(ll.data(), V);
        steps_v[i].tokens = std::span<const int32_t>(&toks[i], 1);
        steps_v[i].logits = bl[i].data();
      }
      gpu->forward(steps_v);
      for (size_t i = 0; i < lens.size(); ++i) dec_equal += bits_equal(bl[i], run(*gpu, *solo[i], std::span<const int32_t>(&toks[i], 1)));
    }
    int classes_equal = 0;
    for (size_t i = 0; i < lens.size(); ++i) classes_equal += classes_bit_equal(batched[i]->export_classes(), solo[i]->export_classes());
    const std::string ns = std::to_string(n);
    rep.add("batch of " + ns + " sequences bit-identical to solo" + tag,
            equal == n && dec_equal == n * W.batch_steps && classes_equal == n,
            "prefill " + std::to_string(equal) + "/" + ns + ", decode steps " + std::to_string(dec_equal) + "/" +
                std::to_string(n * W.batch_steps) + ", classes " + std::to_string(classes_equal) + "/" + ns);
    out.batch = batch_logits.back();
  }

  // 4. speculative verify: a block of 6 after the prompt = 6 single steps.
  {
    auto a = gpu->new_state(P + 6), b = gpu->new_state(P + 6);
    run(*gpu, *a, prompt);
    run(*gpu, *b, prompt);
    const std::vector<int32_t> block = prompt_ids(V, 6, 55);
    const auto verify = run(*gpu, *a, block);
    std::vector<float> single;
    for (int32_t t : block) {
      auto r = run(*gpu, *b, std::span<const int32_t>(&t, 1));
      single.insert(single.end(), r.begin(), r.end());
    }
    rep.add("speculative verify block == single steps" + tag,
            bits_equal(verify, single) && classes_bit_equal(a->export_classes(), b->export_classes()),
            std::string("logits ") + (bits_equal(verify, single) ? "equal" : "DIFFER"));
  }

  // 4b. a rejected block leaves no trace: mark, a block of 8, rewind, the 3 accepted tokens and 6
  // more equal a run that never saw the rejected 5 (logits and classes), by bits. The mark (a
  // device copy of every buffer but the compressor entries, which only grow past the mark's live
  // rows; State::mark) does not grow with the position.
  {
    auto a = gpu->new_state(P + 20), b = gpu->new_state(P + 20);
    run(*gpu, *a, prompt);
    run(*gpu, *b, prompt);
    const StateMark mark = a->mark();
    bool no_entries = mark.bytes() > 0;
    {
      auto later = gpu->new_state(P + 20);
      run(*gpu, *later, prompt);
      const std::vector<int32_t> more_tokens = prompt_ids(V, 17, 76);
      run(*gpu, *later, more_tokens);
      no_entries = no_entries && later->mark().bytes() == mark.bytes();
    }
    std::vector<int32_t> block = prompt_ids(V, 9, 77);
    std::vector<int32_t> rejected(block.begin(), block.begin() + 8);
    rejected[3] = (rejected[3] + 1) % static_cast<int32_t>(V);
    run(*gpu, *a, rejected);
    a->rewind(mark);
    std::vector<int32_t> kept(block.begin(), block.begin() + 3), more = prompt_ids(V, 6, 78);
    kept.insert(kept.end(), more.begin(), more.end());
    const auto got = run(*gpu, *a, kept), want = run(*gpu, *b, kept);
    const bool logits = bits_equal(got, want), classes = classes_bit_equal(a->export_classes(), b->export_classes());
    rep.add("mark and rewind: a rejected block leaves no trace" + tag, no_entries && logits && classes,
            std::string("logits ") + (logits ? "equal" : "DIFFER") + ", classes " + (classes ? "equal" : "DIFFER") +
                (no_entries ? "" : ", the mark grows with the position"));
  }

  // 4c. the same without the re-run: a journaled block of B, rewind keeping its first k rows
  // (keep_rows.cu), then 6 more tokens, equal a run of the k tokens alone (last logits, logits and
  // classes), by bits. B = 30 is longer than tiny's window (24): the kept window rows come from the
  // journal, and the blocks close CSA and HCA windows at several offsets.
  {
    int cases = 0, equal = 0;
    std::string first_bad;
    for (int64_t B : {8, 30})
      for (int64_t k : {int64_t{1}, int64_t{4}, B - 1}) {
        auto a = gpu->new_state(P + 40), b = gpu->new_state(P + 40);
        run(*gpu, *a, prompt);
        run(*gpu, *b, prompt);
        const StateMark mark = a->mark();
        std::vector<int32_t> block = prompt_ids(V, B, 81 + B);
        block[k] = (block[k] + 1) % static_cast<int32_t>(V);  // rejected from k on
        std::vector<float> verify(B * V);
        SequenceStep st{a.get(), block, verify.data(), nullptr, true};
        gpu->forward(std::span<const SequenceStep>(&st, 1));
        a->rewind(mark, k);
        const auto alone = run(*gpu, *b, std::span<const int32_t>(block).first(k));
        bool ok = a->position() == b->position() && bits_equal(gpu->last_logits(*a), gpu->last_logits(*b)) &&
                  bits_equal(std::vector<float>(verify.begin(), verify.begin() + k * V), alone) &&
                  classes_bit_equal(a->export_classes(), b->export_classes());
        const std::vector<int32_t> more = prompt_ids(V, 6, 79);
        ok = ok && bits_equal(run(*gpu, *a, more), run(*gpu, *b, more)) &&
             classes_bit_equal(a->export_classes(), b->export_classes());
        ++cases;
        equal += ok;
        if (!ok && first_bad.empty()) first_bad = ", first DIFFER: block " + std::to_string(B) + " keep " + std::to_string(k);
      }
    rep.add("rewind keeping rows of a journaled block == running them alone" + tag, equal == cases,
            std::to_string(equal) + "/" + std::to_string(cases) + " equal" + first_bad);
  }

  // 5. restore round trip into a larger capacity; 6. cpu ⇄ cuda through classes.
  {
    const int64_t warm = W.warm, cont = W.cont, small = P + warm + cont + 1;
    auto a = gpu->new_state(small);
    run(*gpu, *a, prompt);
    for (int64_t s = 0; s < warm; ++s) {
      const int32_t t = argmax(gpu->last_logits(*a).data(), V);
      run(*gpu, *a, std::span<const int32_t>(&t, 1));
    }
    auto b = gpu->new_state(small + 97);
    b->import_classes(a->position(), a->export_classes());
    bool eq = classes_bit_equal(a->export_classes(), b->export_classes());
    int steps_equal = 0;
    auto c = cpu.new_state(small);  // the same state on the CPU
    c->import_classes(a->position(), a->export_classes());
    std::vector<float> gl, cl;
    for (int64_t s = 0; s < cont; ++s) {
      const int32_t t = argmax(gpu->last_logits(*a).data(), V);
      const auto ra = run(*gpu, *a, std::span<const int32_t>(&t, 1));
      const auto rb = run(*gpu, *b, std::span<const int32_t>(&t, 1));
      const auto rc = run(cpu, *c, std::span<const int32_t>(&t, 1));
      steps_equal += bits_equal(ra, rb);
      gl.insert(gl.end(), ra.begin(), ra.end());
      cl.insert(cl.end(), rc.begin(), rc.end());
    }
    eq = eq && classes_bit_equal(a->export_classes(), b->export_classes());
    rep.add("restore round trip (capacity +97)" + tag, eq && steps_equal == cont,
            "classes " + std::string(eq ? "equal" : "DIFFER") + ", continuation " + std::to_string(steps_equal) + "/" +
                std::to_string(cont));
    {  // the class hashes the devices make (class_hash.cu) against the host's, on the bytes that landed
      size_t total = 0;
      for (const auto& l : a->layout()) total += l.nbytes();
      std::vector<uint8_t> bytes(total, 0xA5);
      const std::vector<Hash128> placed = export_hashed(*a, bytes.data(), total, 2, true);
      std::vector<Hash128> want;
      for (const CacheClass& k : a->export_classes())
        want.push_back(class_hash({k.name, dtype_name(k.dtype), &k.shape, k.bytes.data(), k.bytes.size()}));
      const std::vector<Hash128> host = export_hashed(*a, bytes.data(), total, 2, false);
      size_t on_device = 0;
      for (bool in : a->hashed_in_place()) on_device += in;
      int differ = 0;
      for (size_t k = 0; k < want.size(); ++k) differ += k >= placed.size() || placed[k] != want[k] || host[k] != want[k];
      rep.add("class hashes made on the device == the host's" + tag, differ == 0 && placed.size() == want.size() && on_device == want.size(),
              std::to_string(want.size() - differ) + "/" + std::to_string(want.size()) + " equal, " + std::to_string(on_device) +
                  " hashed in place");
    }
    const Diff d = compare(gl, cl);
    // and back: the GPU state into the CPU, the CPU's continuation logits against the GPU's
    auto d_state = cpu.new_state(small + 97);
    d_state->import_classes(a->position(), a->export_classes());
    const int32_t t = argmax(gpu->last_logits(*a).data(), V);
    const Diff d2 = compare(run(cpu, *d_state, std::span<const int32_t>(&t, 1)), run(*gpu, *b, std::span<const int32_t>(&t, 1)));
    rep.add("cpu <-> cuda state exchange" + tag,
            d.rel_to_max() <= 1e-5 && argmax_disagreements(gl, cl, V) == 0 && d2.rel_to_max() <= 1e-5,
            "cuda state continued on cpu: rel " + fmt("%.2e", d.rel_to_max()) + ", cuda->cpu rel " + fmt("%.2e", d2.rel_to_max()));
  }
  return out;
}

void check_rounds(const Model& model, Report& rep, const Workload& W) {
  // The same prompt and batch with rounds of 16 rows: a sequence split over rounds, and a batch
  // whose sequences share rounds, give the default run's bits.
  const ModelConfig& cfg = model.config();
  const int64_t V = cfg.vocab_size;
  auto ref = make_backend("cuda", model);
  setenv("MEMRA_CUDA_ROUND_ROWS", "16", 1);
  auto small = make_backend("cuda", model);
  unsetenv("MEMRA_CUDA_ROUND_ROWS");
  const auto prompt = prompt_ids(V, W.prompt, 7);
  auto a = ref->new_state(W.prompt), b = small->new_state(W.prompt);
  const bool same = bits_equal(run(*ref, *a, prompt), run(*small, *b, prompt));
  // classes: export both (states of different backends, same layout)
  const bool cls = classes_bit_equal(a->export_classes(), b->export_classes());
  rep.add("rounds of 16 rows == one round", same && cls, std::string("logits ") + (same ? "equal" : "DIFFER") + ", classes " + (cls ? "equal" : "DIFFER"));
}

// Synthetic weights (`memra bench`) are one copy a process for each (geometry, seed, device,
// layers): the cuda and cuda-fast backends of one seed hold the same copy, another seed makes its
// own, and the exact backend's logits are those of a backend that held them alone.
void check_shared_synthetic(const Model& model, Report& rep, const Workload& W) {
  ModelConfig cfg = model.config();
  cfg.mlp_layer_types.assign(cfg.mlp_layer_types.size(), MlpKind::kLearned);  // no synthetic tid2eid
  const Model syn = Model::synthetic(cfg, 7), other = Model::synthetic(cfg, 8);
  BackendOptions o7, o8;
  o7.synthetic_seed = 7, o8.synthetic_seed = 8;
  const int64_t P = std::min<int64_t>(W.prompt, 12);  // a few rows say whose weights ran (memra-emu is slow)
  const auto prompt = prompt_ids(cfg.vocab_size, P, 3);
  auto holders = [](const Backend& b) { return static_cast<int>(b.device_report().at("weights_holders")); };
  std::vector<float> alone;
  int alone_holders = 0;
  {
    auto a = make_backend("cuda", syn, o7);
    auto st = a->new_state(P);
    alone = run(*a, *st, prompt);
    alone_holders = holders(*a);
  }
  auto exact = make_backend("cuda", syn, o7);
  auto fast = make_backend("cuda-fast", syn, o7);
  auto seed8 = make_backend("cuda", other, o8);
  auto st = exact->new_state(P), st8 = seed8->new_state(P);
  const bool same = bits_equal(alone, run(*exact, *st, prompt));
  const bool differ = !bits_equal(alone, run(*seed8, *st8, prompt));
  const int he = holders(*exact), hf = holders(*fast), h8 = holders(*seed8);
  rep.add("synthetic weights: one copy for cuda and cuda-fast of a seed",
          alone_holders == 1 && he == 2 && hf == 2 && h8 == 1 && same && differ,
          "holders alone " + std::to_string(alone_holders) + ", cuda " + std::to_string(he) + ", cuda-fast " +
              std::to_string(hf) + ", other seed " + std::to_string(h8) + "; logits " + (same ? "equal" : "DIFFER") +
              " to alone, other seed's " + (differ ? "differ" : "EQUAL"));
}

// The per-launch timeline (ForwardProbes::timeline, memra bench --timeline) only observes: a prompt
// and a decode step under it give the bits of the same forwards without it, and every launch of a
// layer is accounted for (at least the ~20 sites of any layer kind, each with device time > 0). The
// probe is the backend's own: a second backend's forward meanwhile and a forward after
// set_probes({}) report no timeline.
void check_timeline(const Model& model, Report& rep, const Workload& W) {
  const ModelConfig& cfg = model.config();
  auto b = make_backend("cuda", model), other = make_backend("cuda", model);
  const auto prompt = prompt_ids(cfg.vocab_size, W.prompt, 11);
  const std::vector<int32_t> next = {prompt[1]};
  auto plain = b->new_state(W.prompt + 1), timed = b->new_state(W.prompt + 1), after = b->new_state(W.prompt + 1);
  auto beside = other->new_state(W.prompt + 1);
  const auto ref_p = run(*b, *plain, prompt), ref_d = run(*b, *plain, next);
  b->device_report();
  b->set_probes({.timeline = true});
  const auto got_p = run(*b, *timed, prompt), got_d = run(*b, *timed, next);
  run(*other, *beside, prompt);
  const auto m = b->device_report();
  b->set_probes({});
  run(*b, *after, prompt);
  auto timeline_keys = [](const std::map<std::string, double>& r) {
    int n = 0;
    for (const auto& [k, v] : r) n += k.rfind("timeline_", 0) == 0;
    return n;
  };
  const int left_on = timeline_keys(b->device_report()) + timeline_keys(other->device_report());
  double launches = 0, sites = 0, nonpositive = 0;
  for (const auto& [k, v] : m) {
    if (k.rfind("timeline_launches:", 0) == 0) launches += v;
    if (k.rfind("timeline_ms:", 0) == 0) sites += 1, nonpositive += v <= 0;
  }
  const double want = 2.0 * 20 * static_cast<double>(cfg.num_hidden_layers);  // two forwards
  const bool same = bits_equal(ref_p, got_p) && bits_equal(ref_d, got_d);
  rep.add("timeline observes only (bits, launches), its backend's alone", same && launches >= want && nonpositive == 0 && left_on == 0,
          std::string("logits ") + (same ? "equal" : "DIFFER") + "; " + fmt("%.0f", launches) + " launches over " +
              fmt("%.0f", sites) + " sites (>= " + fmt("%.0f", want) + "), " + fmt("%.0f", nonpositive) + " without time; " +
              std::to_string(left_on) + " timeline entries from the other backend and after set_probes({})");
}

// Programmatic dependent launch (kernels/launch.cuh) reaches the graph and moves no bit: a graphed
// prompt and decode steps on a backend whose launches may use PDL capture programmatic kernel →
// kernel edges, the same forwards under PdlOff capture none, and both give the same logits and
// classes, by bits, as the eager (ungraphed) run.
void check_pdl(const Model& model, Report& rep, const Workload& W) {
  const ModelConfig& cfg = model.config();
  const auto prompt = prompt_ids(cfg.vocab_size, W.prompt, 23);
  struct Run {
    std::vector<float> logits;
    std::vector<CacheClass> classes;
    double programmatic = 0, kernel_edges = 0;
  };
  auto go = [&](bool pdl, bool graphs) {
    std::optional<PdlOff> off;
    if (!pdl) off.emplace();
    Run r;
    {
      auto b = make_backend("cuda", model);
      b->set_probes({.no_graphs = !graphs});
      auto s = b->new_state(W.prompt + 4);
      r.logits = run(*b, *s, prompt);
      for (int i = 0; i < 3; ++i) {
        const std::vector<int32_t> next = {prompt[static_cast<size_t>(i)]};
        const auto step = run(*b, *s, next);
        r.logits.insert(r.logits.end(), step.begin(), step.end());
      }
      r.classes = s->export_classes();
      const auto m = b->device_report();
      r.programmatic = m.count("graph_programmatic_edges") ? m.at("graph_programmatic_edges") : 0;
      r.kernel_edges = m.count("graph_kernel_edges") ? m.at("graph_kernel_edges") : 0;
    }
    return r;
  };
  const char* env = std::getenv("MEMRA_CUDA_PDL");
  const bool pdl_on = !(env && std::string(env) == "0");
  const Run with = go(true, true), without = go(false, true), eager = go(true, false);
  const bool same = bits_equal(with.logits, eager.logits) && bits_equal(without.logits, eager.logits) &&
                    classes_bit_equal(with.classes, eager.classes) && classes_bit_equal(without.classes, eager.classes);
  // MEMRA_CUDA_SYNC=1 (a synchronisation after every launch) or MEMRA_CUDA_GRAPHS=0 runs every round
  // eagerly: no graph to count.
  const bool graphed = !sync_each_launch() && switch_on("MEMRA_CUDA_GRAPHS");
  // The eager run (ForwardProbes::no_graphs) captured no graph at all.
  const bool edges = !graphed || (with.kernel_edges > 0 && (pdl_on ? with.programmatic > 0 : with.programmatic == 0) &&
                                  without.programmatic == 0 && eager.kernel_edges == 0);
#if defined(MEMRA_CUDA_EMU)
  // memra-emu's graphs keep no nodes and launches no PDL edges: the bits are still compared.
  rep.add("decode graph == without PDL == eager (bits; memra-emu: edges not emulated)", same,
          std::string("logits and classes ") + (same ? "equal" : "DIFFER"));
  (void)edges;
  return;
#endif
  rep.add("PDL in the decode graph, bits unchanged", same && edges,
          std::string("logits and classes ") + (same ? "equal" : "DIFFER") + " (graphed with PDL, graphed without, eager); " +
              fmt("%.0f", with.programmatic) + " of " + fmt("%.0f", with.kernel_edges) + " kernel edges programmatic" +
              (pdl_on ? "" : " (MEMRA_CUDA_PDL=0)") + ", without PDL " + fmt("%.0f", without.programmatic) + ", eager " +
              fmt("%.0f", eager.kernel_edges) + " edges" +
              (graphed ? "" : " (MEMRA_CUDA_SYNC=1 or MEMRA_CUDA_GRAPHS=0: no graphs)"));
}

// The host path's A/B forms move no bit: the default (the logits moved by the head's logits_out,
// inside the graph, to pinned staging and the trunk), the caller's rows copied after the round
// (MEMRA_CUDA_LOGITS_OUT_HOST_KIB=0), all rows copied (MEMRA_CUDA_LOGITS_OUT=0) and the caller's
// pageable memory (MEMRA_CUDA_PINNED_LOGITS=0; each read when a backend is made) give the same logits (into NaN-poisoned buffers) and classes (the
// last logits among them) over a prompt and three decode steps (two replays of one graph with new
// plans), by bits. The phases probe (ForwardProbes::phases) observes only: under it the same bits,
// one phase sample a forward with the device's span inside the host's, and none after
// set_probes({}).
void check_host_path(const Model& model, Report& rep, const Workload& W) {
  const ModelConfig& cfg = model.config();
  const int64_t V = cfg.vocab_size;
  const auto prompt = prompt_ids(V, W.prompt, 29);
  struct Run {
    std::vector<float> logits;
    std::vector<CacheClass> classes;
    std::map<std::string, double> report, after;
  };
  // off: the host-path switches set to "0" while the backend is made (each read once there)
  auto go = [&](std::vector<const char*> off, bool phases) {
    for (const char* k : off) setenv(k, "0", 1);
    auto b = make_backend("cuda", model);
    for (const char* k : off) unsetenv(k);
    if (phases) b->set_probes({.phases = true});
    auto s = b->new_state(W.prompt + 4);
    Run r;
    auto forward = [&](std::span<const int32_t> tokens) {
      std::vector<float> logits(tokens.size() * V, std::nanf(""));
      SequenceStep st;
      st.state = s.get();
      st.tokens = tokens;
      st.logits = logits.data();
      b->forward(std::span<const SequenceStep>(&st, 1));
      r.logits.insert(r.logits.end(), logits.begin(), logits.end());
    };
    forward(prompt);
    for (int i = 0; i < 3; ++i) forward(std::span<const int32_t>(&prompt[static_cast<size_t>(i)], 1));
    r.classes = s->export_classes();
    r.report = b->device_report();
    b->set_probes({});
    forward(std::span<const int32_t>(&prompt[3], 1));
    r.after = b->device_report();
    r.logits.resize(r.logits.size() - static_cast<size_t>(V));  // the unprobed step: only its report is read
    return r;
  };
  const Run staged = go({}, false), phased = go({}, true), copies = go({"MEMRA_CUDA_LOGITS_OUT"}, false);
  const Run host_copied = go({"MEMRA_CUDA_LOGITS_OUT_HOST_KIB"}, false), pageable = go({"MEMRA_CUDA_PINNED_LOGITS"}, false);
  auto same = [&](const Run& r) { return bits_equal(staged.logits, r.logits) && classes_bit_equal(staged.classes, r.classes); };
  auto phase = [](const Run& r, const char* k) {
    const auto it = r.report.find(std::string("phase_us:") + k);
    return it == r.report.end() ? -1.0 : it->second;
  };
  int left_on = 0;
  for (const auto& [k, v] : phased.after) left_on += k.rfind("phase_", 0) == 0;
  const double forwards = phased.report.count("phase_forwards") ? phased.report.at("phase_forwards") : 0;
  const double dev = phase(phased, "device_total"), host = phase(phased, "host_total");
  const bool probe_ok = forwards == 4 && dev > 0 && host >= dev && phase(phased, "host_launch") >= 0 && left_on == 0 &&
                        staged.report.count("phase_forwards") == 0;
  rep.add("host path: logits_out == copies == pageable (bits); phases observe only",
          same(copies) && same(host_copied) && same(pageable) && same(phased) && probe_ok,
          std::string("copies ") + (same(copies) ? "equal" : "DIFFER") + ", host rows copied " +
              (same(host_copied) ? "equal" : "DIFFER") + ", pageable " + (same(pageable) ? "equal" : "DIFFER") +
              ", under phases " +
              (same(phased) ? "equal" : "DIFFER") + "; " + fmt("%.0f", forwards) + " phase samples (4), device " +
              fmt("%.1f", dev) + " us within host " + fmt("%.1f", host) + " us, " + std::to_string(left_on) +
              " phase keys after set_probes({})");
}

// cuda-fast is judged the way parity judges a fast realization (docs/parity.md, docs/bands.md):
// the router and indexer decisions of both sides are compared with their selection margins. A
// decision flip within the band is a legitimate near-tie, and everything causally after the first
// such flip may differ by more than any drift band (another expert, other compressed entries), so
// the logits are judged on the rows before it: per row, max |fast − cpu| within the pair band of
// (cuda-fast, cpu) at the cpu row's top-1 logit, and an argmax disagreement only where the cpu
// row's top-1/top-2 margin is within that band. An out-of-band decision flip FAILS (a decision
// stage's band is relative to its largest |score| over the rows; the scales' drift on agreeing rows is reported).
// Several prompts, so that the rows judged reach a floor (fewer: FAIL, nothing was shown); rows
// after a cut are reported, not judged. (Logits alone cannot tell an internal routing flip from a wrong kernel:
// the first session that ran this on fresh checkpoints saw exactly that, 2026-11-30.)
void check_fast(const Model& model, const Backend& cpu, Report& rep, const std::string& tag, int64_t P) {
  const ModelConfig& cfg = model.config();
  const int64_t V = cfg.vocab_size;
  auto fast = make_backend("cuda-fast", model);
  const Realization ra = realization_for(fast->precision_class(), cfg, P), rb = realization_for(cpu.precision_class(), cfg, P);
  const double decision_band = tolerance_for(fast->realization(), "float32").decision_band;
  const int64_t floor_rows = std::min<int64_t>(64, 2 * P);
  int64_t judged = 0, rows_over = 0, in_band = 0, out_band = 0, nonfinite = 0, unwritten = 0, cuts = 0, flips_out = 0;
  double worst_ratio = 0, max_abs = 0, band_at_worst = 0, after_cut_max = 0, seconds = 0, score_drift = -1;
  std::string cut_text, out_text;
  for (uint64_t seed : {7, 8, 9, 10}) {
    const auto prompt = prompt_ids(V, P, seed);
    auto forward = [&](const Backend& b, ForwardTrace& tr) {
      auto st = b.new_state(P);
      std::vector<float> logits(static_cast<size_t>(P * V), std::nanf(""));  // poisoned
      SequenceStep step;
      step.state = st.get();
      step.tokens = prompt;
      step.logits = logits.data();
      step.trace = &tr;
      const auto t0 = Clock::now();
      b.forward(std::span<SequenceStep>(&step, 1));
      if (&b != &cpu) seconds += std::chrono::duration<double>(Clock::now() - t0).count();
      return logits;
    };
    ForwardTrace ct, ft;
    const auto c = forward(cpu, ct);
    const auto f = forward(*fast, ft);
    // decisions: the cpu is the reference (its margins), cuda-fast the engine
    DecisionLog clog(cfg), flog(cfg);
    clog.append(ct);
    flog.append(ft);
    std::vector<StageResult> decisions = compare_decision_logs(flog, clog, decision_band);
    const InBandCut cut = first_in_band_flip(decisions);
    const int64_t rows = cut.position >= 0 ? std::min<int64_t>(cut.position, P) : P;
    if (cut.position >= 0) {
      ++cuts;
      cut_text += (cut_text.empty() ? "" : ",") + std::to_string(cut.position);
      for (auto& d : decisions) restrict_decisions(d, cut);
    }
    for (const auto& d : decisions) score_drift = std::max(score_drift, d.score_drift_to_band());  // rows before the cut
    for (const auto& d : decisions)
      for (const Flip& fl : d.flips)
        if (!fl.in_band) {
          ++flips_out;
          if (out_text.empty())
            out_text = " first out-of-band decision flip in " + d.name + " at " + std::to_string(fl.position) + " (" + fl.describe() + ")";
        }
    for (int64_t r = 0; r < P; ++r) {
      const float* x = c.data() + r * V;  // reference row (cpu)
      const float* y = f.data() + r * V;
      double row_max = 0;
      for (int64_t j = 0; j < V; ++j) {
        if (std::isnan(y[j]) && !std::isnan(x[j])) ++unwritten;
        else if (!std::isfinite(y[j])) ++nonfinite;
        row_max = std::max(row_max, std::fabs(static_cast<double>(y[j]) - x[j]));
      }
      if (r >= rows) {  // after an in-band decision flip: reported, not judged
        after_cut_max = std::max(after_cut_max, row_max);
        continue;
      }
      ++judged;
      const int32_t tc = argmax(x, V), tf = argmax(y, V);
      const double band = pair_band(x[tc], ra, rb);
      max_abs = std::max(max_abs, row_max);
      if (band > 0 && row_max / band > worst_ratio) worst_ratio = row_max / band, band_at_worst = band;
      rows_over += row_max > band;
      if (tc != tf) (static_cast<double>(x[tc]) - x[tf] <= band ? in_band : out_band)++;
    }
  }
  const bool ok = rows_over == 0 && out_band == 0 && flips_out == 0 && nonfinite == 0 && unwritten == 0 && judged >= floor_rows;
  rep.add("cuda-fast vs cpu within the band, decisions compared" + tag + (P != 100 ? " " + std::to_string(P) + " rows" : ""), ok,
          "rows judged " + std::to_string(judged) + "/" + std::to_string(4 * P) + " (floor " + std::to_string(floor_rows) +
              "; in-band decision flips cut " + std::to_string(cuts) + "/4 prompts" + (cut_text.empty() ? "" : " at " + cut_text) +
              "), out-of-band decision flips " + std::to_string(flips_out) + out_text + ", decision-score drift/band " +
              fmt("%.3f", score_drift) + ", max |diff| " + fmt("%.3g", max_abs) +
              ", worst diff/band " + fmt("%.3f", worst_ratio) + " (band " + fmt("%.3g", band_at_worst) + ", c=" +
              fmt("%.3g", drift_coefficient(ra)) + "+" + fmt("%.3g", drift_coefficient(rb)) + "), rows over " +
              std::to_string(rows_over) + ", argmax flips in-band " + std::to_string(in_band) + " out-of-band " +
              std::to_string(out_band) + ", after the cuts max |diff| " + fmt("%.3g", after_cut_max) + " (not judged), prefill " +
              fmt("%.0f", 4 * P / std::max(seconds, 1e-9)) + " tok/s");
}

// Device memory of a checkpoint with block-quantised weights: the packed matrices occupy exactly
// their stored bytes (codes + e8m0 scales), about 1/2 (FP8) and 1/4 (FP4) of a bf16 copy, and the
// whole upload stays within packed bytes + 4 bytes per value of every other tensor (an f32 or
// bf16 copy of a quantised matrix would exceed it). Returns false when the model has no packed
// tensor (nothing to check).
bool check_packed_weights(const Model& model, Report& rep, const std::string& tag) {
  double fp8_bytes = 0, fp8_values = 0, fp4_bytes = 0, fp4_values = 0, other = 0;
  for (const WeightTensor& t : model.tensors()) {
    if (t.role != TensorRole::kFloat) {
      other += 4.0 * static_cast<double>(t.ids.size());
      continue;
    }
    const double n = static_cast<double>(t.view.rows) * static_cast<double>(t.view.cols);
    if (t.view.format == WeightFormat::kFp8Block) fp8_bytes += static_cast<double>(t.nbytes + t.scale_nbytes), fp8_values += n;
    else if (t.view.format == WeightFormat::kFp4Block) fp4_bytes += static_cast<double>(t.nbytes + t.scale_nbytes), fp4_values += n;
    else other += 4.0 * n;
  }
  if (fp8_values + fp4_values == 0) return false;
  other += 4.0 * static_cast<double>(model.config().qk_rope_head_dim);  // the two RoPE tables
  for (const char* realization : {"cuda", "cuda-fast"}) {
    auto b = make_backend(realization, model);
    auto m = b->device_report();
    auto get = [&](const char* k) { return m.count(k) ? m.at(k) : 0.0; };
    const double total = get("weights_bytes"), f8 = get("weights_fp8_bytes"), f4 = get("weights_fp4_bytes");
    const bool exact_bytes = f8 == fp8_bytes && get("weights_fp8_values") == fp8_values && f4 == fp4_bytes &&
                             get("weights_fp4_values") == fp4_values;
    const double r8 = fp8_values > 0 ? f8 / (2 * fp8_values) : 0, r4 = fp4_values > 0 ? f4 / (2 * fp4_values) : 0;
    const double bound = fp8_bytes + fp4_bytes + other;
    rep.add(std::string("device weights packed (") + realization + ")" + tag,
            exact_bytes && r8 <= 0.51 && r4 <= 0.27 && total <= bound,
            "fp8 " + fmt("%.0f", f8) + " B for " + fmt("%.0f", fp8_values) + " values (" + fmt("%.3f", r8) + " of bf16), fp4 " +
                fmt("%.0f", f4) + " B for " + fmt("%.0f", fp4_values) + " values (" + fmt("%.3f", r4) + " of bf16)" +
                (exact_bytes ? " = stored bytes" : " != STORED BYTES") + "; all weights " + fmt("%.0f", total) + " B <= " +
                fmt("%.0f", bound) + " (packed + 4 B/value of the rest); f32-dequantised would be " +
                fmt("%.0f", 4 * (fp8_values + fp4_values) + other) + " B");
  }
  return true;
}

}  // namespace

int run_backend(const std::vector<std::string>& models, int device_count, bool quick, bool race) {
  Report rep;
  const Workload W = workload(quick, race);
  for (const std::string& dir : models) {
    try {
      Model model = Model::load(dir);
      auto cpu = make_backend("cpu", model);
      const std::string tag = " [" + dir.substr(dir.find_last_of('/') + 1) + "]";
      const DeviceRun one = check_exact(model, *cpu, {0}, rep, tag, W);
      if (device_count >= 2) {
        const DeviceRun two = check_exact(model, *cpu, {0, 1}, rep, tag + "[0,1]", W);
        const bool eq = bits_equal(one.prefill, two.prefill) && bits_equal(one.decode, two.decode) &&
                        bits_equal(one.batch, two.batch) && classes_bit_equal(one.classes, two.classes);
        rep.add("two GPUs == one GPU (bits)" + tag, eq, eq ? "prefill, decode, batch logits and classes equal" : "DIFFER");
      } else {
        std::printf("skip two-GPU checks%s: %d device visible\n", tag.c_str(), device_count);
      }
      check_rounds(model, rep, W);
      check_shared_synthetic(model, rep, W);
      check_timeline(model, rep, W);
      check_pdl(model, rep, W);
      check_host_path(model, rep, W);
      check_fast(model, *cpu, rep, tag, W.prompt);
      if (check_packed_weights(model, rep, tag)) check_fast(model, *cpu, rep, tag, 160);
    } catch (const std::exception& e) {
      rep.add("backend checks [" + dir + "]", false, std::string("threw: ") + e.what());
    }
  }
  rep.table("backend (cuda, cuda-fast) on checkpoints");
  return rep.all_pass() ? 0 : 1;
}

}  // namespace memra::cuda::test
