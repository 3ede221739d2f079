// Drafter gates: speculative vs plain greedy, drafter state round trip (drafter_gates.h).
#include "gate/drafter_gates.h"

#include "engine/memory_plan.h"

#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "drafter/drafter_file.h"
#include "drafter/speculative_compare.h"
#include "engine/engine.h"
#include "gate/class_diff.h"
#include "state/state_file.h"

namespace memra {

namespace {

std::vector<CacheClass> trunk_only(const std::vector<CacheClass>& classes) {
  std::vector<CacheClass> out;
  for (const auto& c : classes)
    if (c.name.rfind(kDrafterClassPrefix, 0) != 0) out.push_back(c);
  return out;
}

int64_t drafter_class_count(const std::vector<CacheClass>& classes) {
  return static_cast<int64_t>(classes.size() - trunk_only(classes).size());
}

std::unique_ptr<State> primed_state(const Backend& backend, const Drafter& drafter, std::span<const int32_t> prompt,
                                    int64_t capacity) {
  auto s = backend.new_state(capacity);
  drafter.attach(*s);
  drafter.prefill(backend, *s, prompt, 0);
  return s;
}

std::string fixed(double v, int digits) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(digits);
  o << v;
  return o.str();
}

// The first capture field whose bits differ ("" when none).
std::string capture_difference(const DraftCapture& a, const DraftCapture& b) {
  if (a.block_ids != b.block_ids) return "block_ids";
  const std::pair<const char*, std::pair<const std::vector<float>*, const std::vector<float>*>> fields[] = {
      {"block_embeddings", {&a.block_embeddings, &b.block_embeddings}},
      {"prenorm", {&a.prenorm, &b.prenorm}},
      {"final", {&a.final, &b.final}},
      {"base_logits", {&a.base_logits, &b.base_logits}},
      {"markov_logits", {&a.markov_logits, &b.markov_logits}},
      {"markov_embeddings", {&a.markov_embeddings, &b.markov_embeddings}}};
  for (const auto& [name, pair] : fields)
    if (!bits_equal(*pair.first, *pair.second)) return name;
  if (a.layers.arrays.size() != b.layers.arrays.size()) return "layers";
  for (const auto& [name, values] : a.layers.arrays) {
    auto it = b.layers.arrays.find(name);
    if (it == b.layers.arrays.end() || !bits_equal(values, it->second)) return name;
  }
  return "";
}

void require_exact(const Backend& backend, const char* gate) {
  if (!backend.realization().exact)
    throw Error(std::string("the ") + gate + " gate needs an exact realization; " + backend.name() + " is not",
                "run it with --backend cpu (or another exact realization)");
}

}  // namespace

// Refuses a drafter gate whose states cannot fit before anything is allocated (as the trunk gates do).
static void check_drafter_gate_memory(const Model& model, const Backend& backend, const TrunkGateOptions& trunk,
                                      int64_t extra, const std::string& gate) {
  const int64_t P = trunk.tokens.empty() ? trunk.prompt : static_cast<int64_t>(trunk.tokens.size());
  RunShape shape;
  shape.device = backend.realization().device;
  shape.capacity = P + extra;
  shape.chunk = std::max<int64_t>(P, 1);
  shape.live_copies = 2;
  shape.live_position = shape.capacity;
  require_fits(plan_memory(model.config(), shape, model_resident_bytes(model, shape.device)),
               effective_memory_limit(trunk.max_memory), "the " + gate + " gate (capacity " + std::to_string(shape.capacity) + ")");
}

GateResult gate_speculative(const Model& model, const Backend& backend, const Drafter& drafter,
                            const TrunkGateOptions& trunk, const DrafterGateOptions& opt) {
  require_exact(backend, "speculative");
  if (opt.steps < 96) throw Error("the speculative gate generates at least 96 tokens", "use --steps 96 or more");
  check_drafter_gate_memory(model, backend, trunk, opt.steps + 64, "speculative");
  GateResult g;
  g.name = "speculative";
  const DraftShape shape = drafter.shape(opt.block_size, opt.harvest);
  const auto prompt = gate_prompt(model.config(), trunk);
  const int64_t P = static_cast<int64_t>(prompt.size()), capacity = P + opt.steps;
  auto start = primed_state(backend, drafter, prompt, capacity);
  const SpeculativeComparison cmp = compare_speculative(backend, drafter, *start, opt.steps, shape, opt.runs);
  if (!cmp.identical)
    g.fail(cmp.first_difference >= 0
               ? "speculative output differs from plain greedy at token " + std::to_string(cmp.first_difference)
               : "the timing runs emitted different tokens");
  std::string first;
  const auto final_classes = cmp.final_state->export_classes();
  auto diffs = diff_classes(trunk_only(final_classes), cmp.greedy_state->export_classes(), &first);
  if (!first.empty())
    g.fail("trunk state after speculative decoding differs from plain greedy's: " +
           describe_first_difference(diffs, first));
  const bool trunk_equal = first.empty();
  // The whole state against plain greedy that keeps the drafter primed.
  auto primed = primed_state(backend, drafter, prompt, capacity);
  const auto primed_tokens = generate_greedy_primed(backend, drafter, *primed, opt.steps);
  if (primed_tokens != cmp.greedy) g.fail("drafter-primed plain greedy emitted other tokens than plain greedy");
  auto all_diffs = diff_classes(final_classes, primed->export_classes(), &first);
  if (!first.empty())
    g.fail("state after speculative decoding differs from primed plain greedy's: " +
           describe_first_difference(all_diffs, first));
  g.class_diffs = all_diffs;

  const SpeculativeStats& st = cmp.stats;
  Series acc{
      "speculative: acceptance by draft position", "draft position", "fraction of rounds accepted", {}, {}, {}, false};
  const auto by_pos = st.acceptance_by_position();
  for (size_t k = 0; k < by_pos.size(); ++k) {
    acc.x.push_back(static_cast<double>(k + 1));
    acc.y.push_back(by_pos[k]);
  }
  g.series.push_back(acc);
  g.figure("family", drafter_family_name(drafter.config().family));
  g.figure("harvest", harvest_name(shape.harvest));
  g.figure("block", shape.block_size);
  g.figure("prompt", P);
  g.figure("steps", opt.steps);
  g.figure("runs", static_cast<int64_t>(opt.runs));
  g.figure_bool("tokens_equal", cmp.identical);
  g.figure_bool("trunk_bits_equal", trunk_equal);
  g.figure_bool("state_bits_equal", first.empty());
  g.figure("rounds", st.rounds);
  g.figure("tau", fixed(st.tau(), 3));
  g.figure("rollbacks", st.rollbacks);
  g.figure("spec_tok_s", fixed(cmp.speculative_tokens_per_s(), 1));
  g.figure("greedy_tok_s", fixed(cmp.greedy_tokens_per_s(), 1));
  g.figure("speedup", fixed(cmp.speedup(), 3));
  g.details["acceptance_by_position"] = by_pos;
  g.details["accepted_histogram"] = st.histogram;
  g.details["speculative_seconds"] = cmp.speculative_s;
  g.details["greedy_seconds"] = cmp.greedy_s;
  g.details["backend"] = backend.name();
  return g;
}

GateResult gate_drafter_restore(const Model& model, const Backend& backend, const Drafter& drafter,
                                const TrunkGateOptions& trunk, const DrafterGateOptions& opt) {
  require_exact(backend, "drafter-restore");
  check_drafter_gate_memory(model, backend, trunk, opt.warm + opt.continuation + opt.grow + 64, "drafter-restore");
  GateResult g;
  g.name = "drafter-restore";
  const DraftShape shape = drafter.shape(opt.block_size, opt.harvest);
  const auto prompt = gate_prompt(model.config(), trunk);
  const int64_t P = static_cast<int64_t>(prompt.size());
  const int64_t small = P + opt.warm + opt.continuation, grown = small + opt.grow;
  auto a = primed_state(backend, drafter, prompt, small);
  generate_speculative(backend, drafter, *a, opt.warm, shape);
  const HostSnapshot host = snapshot_state(*a);

  namespace fs = std::filesystem;
  const fs::path dir = trunk.scratch_dir.empty() ? fs::temp_directory_path() : fs::path(trunk.scratch_dir);
  const fs::path file = dir / ("memra-gate-drafter-restore-" + std::to_string(::getpid()) + ".mst");
  StateWriteOptions wo;
  wo.extra_metadata = drafter_metadata(drafter.weights());
  const StateWriteResult written =
      write_state_file(file.string(), host, {model.fingerprint().hex(), backend.precision_class()}, wo);
  std::unique_ptr<State> b;
  std::string version;
  try {
    StateFile sf = StateFile::open(file.string(), StateCheck::kFull);
    version = sf.version();
    b = restore_state_file_with_drafter(sf, backend, model.fingerprint().hex(), grown, drafter);
  } catch (const Error& e) {
    fs::remove(file);
    if (e.exit_code() != kExitNegative) throw;
    g.fail(std::string("the verified restore refused the state: ") +
           e.what());  // e.g. a class that re-hashes differently
    g.figure("position", host.pos);
    return g;
  } catch (...) {
    fs::remove(file);
    throw;
  }
  fs::remove(file);

  std::string first;
  auto before = diff_classes(a->export_classes(), b->export_classes(), &first);
  if (!first.empty()) g.fail("restored classes differ: " + describe_first_difference(before, first));
  const bool classes_equal = first.empty();

  const int32_t anchor = argmax(backend.last_logits(*a));
  DraftCapture ca, cb;
  const Proposal pa = drafter.propose(*a, anchor, shape, &ca);
  const Proposal pb = drafter.propose(*b, anchor, shape, &cb);
  if (pa.tokens != pb.tokens) g.fail("the restored state proposes other drafts");
  if (!bits_equal(pa.confidence, pb.confidence)) g.fail("the restored state's confidences differ");
  const std::string capture = capture_difference(ca, cb);
  if (!capture.empty()) g.fail("the restored state's proposal capture differs at " + capture);

  const auto ta = generate_speculative(backend, drafter, *a, opt.continuation, shape);
  const auto tb = generate_speculative(backend, drafter, *b, opt.continuation, shape);
  if (ta != tb) g.fail("speculative continuations differ");
  auto after = diff_classes(a->export_classes(), b->export_classes(), &first);
  if (!first.empty()) g.fail("classes after the continuation differ: " + describe_first_difference(after, first));
  g.class_diffs = after;

  g.figure("family", drafter_family_name(drafter.config().family));
  g.figure("block", shape.block_size);
  g.figure("position", host.pos);
  g.figure("capacity", std::to_string(small) + "=>" + std::to_string(grown));
  g.figure("format", version);
  g.figure("classes", static_cast<int64_t>(host.classes.size()));
  g.figure("drafter_classes", drafter_class_count(host.classes));
  g.figure("state_xxh3", written.state_hash.hex());
  g.figure_bool("classes_bits_equal", classes_equal);
  g.figure_bool("proposal_equal", pa.tokens == pb.tokens && bits_equal(pa.confidence, pb.confidence));
  g.figure_bool("captures_equal", capture.empty());
  g.figure_bool("continuation_equal", ta == tb && first.empty());
  return g;
}

}  // namespace memra
