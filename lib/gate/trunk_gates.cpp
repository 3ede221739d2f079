// Trunk gates: restore round trip, chunk invariance, chunk semantics, parity (see trunk_gates.h).
#include "gate/trunk_gates.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>

#include "core/checked.h"
#include "core/error.h"
#include "engine/engine.h"
#include "engine/memory_plan.h"
#include "gate/band.h"
#include "gate/class_diff.h"
#include "parity/decision_log.h"
#include "parity/parity_run.h"
#include "state/snapshot.h"
#include "state/state_file.h"

namespace memra {

std::vector<int32_t> gate_prompt(const ModelConfig& cfg, const TrunkGateOptions& opt) {
  if (!opt.tokens.empty()) return opt.tokens;
  if (opt.prompt < 1) throw Error("the gate prompt needs at least one token");
  std::mt19937 rng(opt.seed);
  std::uniform_int_distribution<int32_t> dist(std::min<int32_t>(2, cfg.vocab_size - 1), static_cast<int32_t>(cfg.vocab_size - 1));
  std::vector<int32_t> t(opt.prompt);
  for (auto& x : t) x = dist(rng);
  return t;
}

// Refuses a gate whose states, copies and scratch cannot fit (before the prompt is even drawn). The
// host plan counts states and scratch when any of the gate's backends keeps them on the host.
static void check_gate_memory(const Model& model, std::initializer_list<const Backend*> backends,
                              const TrunkGateOptions& opt, RunShape shape, const std::string& gate) {
  shape.device = Device::kCuda;
  for (const Backend* b : backends)
    if (b->realization().device == Device::kCpu) shape.device = Device::kCpu;
  require_fits(plan_memory(model.config(), shape, model_resident_bytes(model, shape.device)), effective_memory_limit(opt.max_memory),
               "the " + gate + " gate (capacity " + std::to_string(shape.capacity) + ")");
}

static int64_t prompt_length(const TrunkGateOptions& opt) {
  if (!opt.tokens.empty()) return static_cast<int64_t>(opt.tokens.size());
  if (opt.prompt < 1) throw Error("the gate prompt needs at least one token");
  return opt.prompt;
}

static double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

static std::string widths_text(const std::vector<int64_t>& w) {
  std::string s;
  for (size_t i = 0; i < w.size(); ++i) s += (i ? "," : "") + std::to_string(w[i]);
  return s;
}

GateResult gate_restore_roundtrip(const Model& model, const Backend& backend, const TrunkGateOptions& opt) {
  const ModelConfig& cfg = model.config();
  GateResult g;
  g.name = "restore-roundtrip";
  if (opt.warm < 0 || opt.continuation < 1 || opt.grow < 0)
    throw Error("the restore gate needs warm >= 0, continuation >= 1 and grow >= 0 steps");
  const int64_t P = prompt_length(opt);
  const int64_t small = add_checked(add_checked(P, opt.warm, "gate capacity"), add_checked(opt.continuation, 1, "gate capacity"),
                                    "gate capacity");
  const int64_t grown = add_checked(small, opt.grow, "gate capacity");
  RunShape shape;
  shape.capacity = grown;
  shape.states = 3;       // the warm state, the file restore, the in-process restore
  shape.live_copies = 3;  // the snapshot, the file's classes, the verified re-hash (plus the class diffs below)
  shape.live_position = small;
  shape.chunk = P;
  check_gate_memory(model, {&backend}, opt, shape, "restore round-trip");
  const auto prompt = gate_prompt(cfg, opt);

  std::unique_ptr<State> a = backend.new_state(small);
  prefill(backend, *a, prompt, 0, nullptr);
  generate_greedy(backend, *a, opt.warm);
  HostSnapshot host = snapshot_state(*a);

  // Through the file: write, verify every hash, restore with a verified re-hash.
  namespace fs = std::filesystem;
  fs::path dir = opt.scratch_dir.empty() ? fs::temp_directory_path() : fs::path(opt.scratch_dir);
  fs::path file = dir / ("memra-gate-restore-" + std::to_string(::getpid()) + ".mst");
  StateWriteResult written = write_state_file(file.string(), host, {model.fingerprint().hex(), backend.precision_class(), backend.qat()});
  std::unique_ptr<State> b;
  try {
    StateFile sf = StateFile::open(file.string(), StateCheck::kFull);
    b = restore_state_file(sf, backend, model.fingerprint().hex(), grown);
  } catch (...) {
    fs::remove(file);
    throw;
  }
  fs::remove(file);
  // And in process (the seeds' API), which must agree with the file path.
  std::unique_ptr<State> c = restore_state(backend, host, grown);

  std::string first;
  auto before = diff_classes(a->export_classes(), b->export_classes(), &first);
  if (!first.empty()) g.fail("restored classes differ: " + describe_first_difference(before, first));
  diff_classes(b->export_classes(), c->export_classes(), &first);
  if (!first.empty()) g.fail("file restore and in-process restore differ at " + first);
  if (b->capacity() != grown) g.fail("restored capacity " + std::to_string(b->capacity()) + " != " + std::to_string(grown));

  int64_t equal_steps = 0;
  Series s{"restore round trip: max |logits(A) - logits(B)| per continuation step", "step", "max abs", {}, {}, {}, false};
  for (int64_t step = 0; step < opt.continuation; ++step) {
    const int32_t token = argmax(backend.last_logits(*a));
    auto ra = decode_step(backend, *a, token);
    auto rb = decode_step(backend, *b, token);
    s.x.push_back(static_cast<double>(step));
    s.y.push_back(max_abs_diff(ra, rb));
    if (bits_equal(ra, rb)) ++equal_steps;
    else g.fail("logits differ at continuation step " + std::to_string(step) + " (max abs " + std::to_string(s.y.back()) + ")");
  }
  auto after = diff_classes(a->export_classes(), b->export_classes(), &first);
  if (!first.empty()) g.fail("final classes differ: " + describe_first_difference(after, first));
  g.series.push_back(s);
  g.class_diffs = after;

  g.figure("prompt", P);
  g.figure("warm", opt.warm);
  g.figure("continuation", opt.continuation);
  g.figure("capacity", std::to_string(small) + "=>" + std::to_string(grown));
  g.figure("position", host.pos);
  g.figure("classes", static_cast<int64_t>(host.classes.size()));
  g.figure("state_bytes", static_cast<int64_t>(host.bytes()));
  g.figure("file_bytes", static_cast<int64_t>(written.file_bytes));
  g.figure("state_xxh3", written.state_hash.hex());
  g.figure("logits_bits_equal", std::to_string(equal_steps) + "/" + std::to_string(opt.continuation));
  g.figure_bool("cache_bits_equal", first.empty());
  return g;
}

GateResult gate_chunk_invariance(const Model& model, const Backend& backend, const TrunkGateOptions& opt) {
  const ModelConfig& cfg = model.config();
  GateResult g;
  g.name = "chunk-invariance";
  if (opt.widths.size() < 2) throw Error("chunk invariance needs at least two widths");
  int64_t widest = 1;
  for (int64_t w : opt.widths) {
    if (w < 1) throw Error("chunk invariance widths must be at least 1");
    widest = std::max(widest, w);
  }
  RunShape shape;
  shape.capacity = prompt_length(opt);
  shape.states = 2;
  shape.live_copies = 2;
  shape.chunk = std::min(widest, shape.capacity);
  shape.chunk_logits = true;
  shape.logits_rows = mul_checked(2, shape.capacity, "gate logits");
  check_gate_memory(model, {&backend}, opt, shape, "chunk invariance");
  const auto prompt = gate_prompt(cfg, opt);
  const int64_t P = static_cast<int64_t>(prompt.size());
  std::vector<float> ref_logits;
  std::unique_ptr<State> ref = backend.new_state(P);
  prefill(backend, *ref, prompt, opt.widths[0], &ref_logits);
  const auto ref_classes = ref->export_classes();
  bool logits_equal = true, cache_equal = true;
  for (size_t i = 1; i < opt.widths.size(); ++i) {
    std::unique_ptr<State> st = backend.new_state(P);
    std::vector<float> logits;
    prefill(backend, *st, prompt, opt.widths[i], &logits);
    if (!bits_equal(logits, ref_logits)) {
      logits_equal = false;
      g.fail("logits of width " + std::to_string(opt.widths[i]) + " differ from width " + std::to_string(opt.widths[0]) +
             " (max abs " + std::to_string(max_abs_diff(logits, ref_logits)) + ")");
    }
    std::string first;
    auto diffs = diff_classes(ref_classes, st->export_classes(), &first);
    if (!first.empty()) {
      cache_equal = false;
      g.fail("width " + std::to_string(opt.widths[i]) + ": " + describe_first_difference(diffs, first));
      if (g.class_diffs.empty()) g.class_diffs = diffs;
    }
  }
  if (g.class_diffs.empty()) {
    std::string none;
    g.class_diffs = diff_classes(ref_classes, ref_classes, &none);
  }
  int64_t bytes = 0;
  for (const auto& c : ref_classes) bytes += static_cast<int64_t>(c.bytes.size());
  g.figure("prompt", P);
  g.figure("chunk_widths", widths_text(opt.widths));
  g.figure("classes", static_cast<int64_t>(ref_classes.size()));
  g.figure("state_bytes", bytes);
  g.figure_bool("logits_bits_equal", logits_equal);
  g.figure_bool("cache_bits_equal", cache_equal);
  return g;
}

// The near-tie band of a decision between two realizations: the looser of their parity classes
// (relative to the decision's scale, docs/parity.md).
static double pair_decision_band(const Backend& a, const Backend& b) {
  return std::max(tolerance_for(a.realization(), "float32").decision_band, tolerance_for(b.realization(), "float32").decision_band);
}

// The earliest in-band decision flip (parity's first_in_band_flip; none: no cut), and the
// out-of-band flips causally before it (all of them when there is none), which fail the gate.
struct FlipScan {
  std::optional<Flip> cut;
  std::string cut_stage;
  std::vector<std::pair<std::string, Flip>> out_of_band;
};
static FlipScan scan_flips(std::vector<StageResult> decisions) {
  FlipScan f;
  const InBandCut cut = first_in_band_flip(decisions);
  for (StageResult& d : decisions) {
    if (cut.position >= 0) {
      if (causal_rank(d.name) == cut.rank)
        for (const Flip& x : d.flips)
          if (x.in_band && x.position == cut.position) f.cut = x, f.cut_stage = d.name;
      restrict_decisions(d, cut);
    }
    for (const Flip& x : d.flips)
      if (!x.in_band) f.out_of_band.emplace_back(d.name, x);
  }
  return f;
}

GateResult gate_chunk_semantics(const Model& model, const Backend& mono_backend, const Backend& chunk_backend,
                                const TrunkGateOptions& opt) {
  const ModelConfig& cfg = model.config();
  GateResult g;
  g.name = "chunk-semantics";
  if (opt.steps < 1) throw Error("chunk semantics needs at least one teacher-forced step");
  RunShape shape;
  shape.capacity = add_checked(prompt_length(opt), opt.steps, "gate capacity");
  shape.states = 2;
  shape.live_copies = 2;
  shape.chunk = prompt_length(opt);
  shape.chunk_logits = true;
  shape.logits_rows = mul_checked(2, prompt_length(opt), "gate logits");
  check_gate_memory(model, {&mono_backend, &chunk_backend}, opt, shape, "chunk semantics");
  const auto prompt = gate_prompt(cfg, opt);
  const int64_t P = static_cast<int64_t>(prompt.size()), cap = P + opt.steps;
  std::unique_ptr<State> mono = mono_backend.new_state(cap), chunk = chunk_backend.new_state(cap);
  // Decisions of both sides, from the position where the two states last were the same (seg0).
  DecisionLog mono_log(cfg), chunk_log(cfg);
  std::vector<float> mono_logits, chunk_logits;
  prefill(mono_backend, *mono, prompt, 0, &mono_logits, {}, [&](const ForwardTrace& t) { mono_log.append(t); });
  prefill(chunk_backend, *chunk, prompt, 1, &chunk_logits, {}, [&](const ForwardTrace& t) { chunk_log.append(t); });
  const double initial = max_abs_diff(mono_logits, chunk_logits);
  std::string first;
  diff_classes(mono->export_classes(), chunk->export_classes(), &first);
  const bool cache_equal = first.empty();

  const Realization ra = realization_for(mono_backend.precision_class(), cfg, cap);
  const Realization rb = realization_for(chunk_backend.precision_class(), cfg, cap);
  const double decision_band = pair_decision_band(mono_backend, chunk_backend);
  std::vector<float> mrow = mono_backend.last_logits(*mono), crow = chunk_backend.last_logits(*chunk);
  int64_t agree = 0, in_band = 0, out_band = 0, after_flip = 0, flips_in = 0, flips_out = 0, reanchored = 0;
  int64_t seg0 = 0, done = 0;  // the segment's first position; its rows whose decisions were judged
  double stream = 0, score_drift = -1;
  Series s{"chunk semantics: |mono - chunk| per teacher-forced step vs the pair band", "step", "max abs logits diff", {}, {}, {}, true};
  for (int64_t step = 0; step < opt.steps; ++step) {
    // The decisions of the rows up to this one: the chunked (exact) side is the engine, the
    // monolithic side the reference, as for the logits. An out-of-band flip FAILS; an in-band flip
    // (a near-tie the two broke differently) explains what follows it, and the monolithic state then
    // continues from a bit copy of the chunked one, so that later steps are judged from a common state.
    const int64_t q = P - 1 + step;
    const auto decisions = compare_decision_logs(chunk_log, mono_log, decision_band, done);  // the new rows
    const FlipScan flips = scan_flips(decisions);
    for (const auto& d : decisions)  // the rows judged now, up to the flip (after it scores may part)
      score_drift = std::max(score_drift, d.score_drift_to_band(done, flips.cut ? flips.cut->position : INT64_MAX));
    done = q - seg0 + 1;
    for (const auto& [stage, f] : flips.out_of_band) {
      ++flips_out;
      g.fail("decision flip in " + stage + " at position " + std::to_string(seg0 + f.position) + ": " + f.describe() +
             (f.double_tie() ? ": a tie on both sides not at one boundary: OUT-OF-BAND" : ": OUT-OF-BAND"));
    }
    const double d = max_abs_diff(mrow, crow);
    stream = std::max(stream, d);
    const int32_t mt = argmax(mrow), ct = argmax(crow);
    const double band = pair_band(mrow[mt], ra, rb);
    s.x.push_back(static_cast<double>(step));
    s.y.push_back(d);
    s.band.push_back(band);
    if (mt == ct) {
      ++agree;
    } else {
      const double margin = static_cast<double>(mrow[mt]) - mrow[ct];
      const bool ok = margin <= band;
      (flips.cut ? after_flip : ok ? in_band : out_band)++;
      char buf[240];
      std::snprintf(buf, sizeof buf, "disagreement step=%lld mono=%d chunk=%d margin=%.6g band=%.6g class=%s",
                    static_cast<long long>(step), mt, ct, margin, band,
                    flips.cut ? "AFTER-DECISION-FLIP" : ok ? "IN-BAND" : "OUT-OF-BAND");
      g.notes.push_back(buf);
      if (!flips.cut && !ok) g.fail(buf);
    }
    if (flips.cut) {
      ++flips_in;
      g.notes.push_back("in-band decision flip in " + flips.cut_stage + " at position " + std::to_string(seg0 + flips.cut->position) +
                        " (margin " + format_g(flips.cut->margin) + ", band " + format_g(flips.cut->band) + ")" +
                        (step + 1 < opt.steps ? ": the monolithic state continues from a copy of the chunked one" : ""));
    }
    if (step + 1 < opt.steps) {  // teacher-force the monolithic pick into both states
      if (flips.cut) {
        ++reanchored;
        mono = state_from_classes(mono_backend, chunk->position(), cap, chunk->export_classes());
        mono_log = DecisionLog(cfg);
        chunk_log = DecisionLog(cfg);
        seg0 = q + 1;
        done = 0;
      }
      ForwardTrace mt_trace, ct_trace;
      mrow = decode_step(mono_backend, *mono, mt, &mt_trace);
      crow = decode_step(chunk_backend, *chunk, mt, &ct_trace);
      mono_log.append(mt_trace);
      chunk_log.append(ct_trace);
    }
  }
  g.series.push_back(s);
  g.figure("prompt", P);
  const bool same = mono_backend.name() == chunk_backend.name();
  g.figure("realizations", mono_backend.name() + "(monolithic)," + chunk_backend.name() + "(chunk1)");
  g.figure_bool("two_realizations", !same);
  if (same)
    g.notes.push_back("monolithic and chunked prefill ran the same realization (" + mono_backend.name() +
                      "): this compares it with itself, which is chunk invariance (gate chunk), not chunk semantics");
  g.figure("initial_logits_maxabs", initial);
  g.figure("stream_maxabs", stream);
  g.figure_bool("cache_bits_equal", cache_equal);
  g.figure("teacher_forced", std::to_string(opt.steps) + ":" + std::to_string(agree) + "_agree," + std::to_string(in_band) +
                                 "_in_band," + std::to_string(out_band) + "_out_of_band");
  g.figure("after_decision_flip", after_flip);
  g.figure("decision_flips", std::to_string(flips_in) + "_in_band," + std::to_string(flips_out) + "_out_of_band");
  g.figure("reanchored", reanchored);
  if (score_drift >= 0) g.figure("decision_score_drift_to_band", score_drift);
  g.figure("drift_coeff", drift_coefficient(ra));
  g.figure("depth", ra.depth);
  g.details["band_rule"] = "band = S*sqrt(2)*(c_a + c_b)*|top1|, S = 2, c = sqrt(depth of one reduction)*unit_roundoff (docs/bands.md)";
  g.details["decision_band_rule"] = "near-tie band of a decision stage = " + format_g(decision_band) +
                                    " x the stage's largest |score| over its rows (the looser parity class of the two, "
                                    "decision_band_at, docs/parity.md)";
  return g;
}

GateResult gate_parity(const Model& model, const Backend& backend, const std::string& model_dir, const std::string& dump_dir) {
  GateResult g;
  g.name = "parity";
  ParityRun run = run_parity(model, backend, model_dir, dump_dir);
  g.details = run.report;
  if (run.result == "REFUSED") {
    g.refuse(run.validation.reasons.front() + "; " + run.hint);
    return g;
  }
  for (const auto& st : run.stages)  // too few rows compared proves nothing either way (docs/parity.md)
    if (run.result == "INCONCLUSIVE" && st.verdict() == "INCONCLUSIVE") g.refuse("INCONCLUSIVE " + st.line());
  int64_t failing = 0;
  Series s{"parity: rel-to-max error per stage (band = tolerance)", "stage", "rel to max", {}, {}, {}, true};
  for (const auto& st : run.stages) {
    if (!st.pass) {
      ++failing;
      g.fail(st.line());
    }
    if (st.kind == "values") {
      s.x.push_back(static_cast<double>(s.x.size()));
      s.y.push_back(std::max(st.rel_to_max, 1e-12));
      s.band.push_back(st.tolerance);
    }
  }
  g.series.push_back(s);
  for (const auto& st : run.stages)
    if (st.name == "logits") {
      g.figure("logits_max_abs", st.max_abs);
      g.figure("logits_rel_to_max", st.rel_to_max);
      g.figure("top1_agree", std::to_string(st.top1_agree) + "/" + std::to_string(st.top1_total));
    }
  g.figure("stages", static_cast<int64_t>(run.stages.size()));
  g.figure("failing", failing);
  g.figure("tolerance", run.tolerance.rel_to_max);
  g.figure("dump", dump_dir);
  return g;
}

}  // namespace memra
