// Greedy speculative decoding (speculative.h).
#include "drafter/speculative.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "drafter/taps.h"
#include "engine/engine.h"

namespace memra {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One traced trunk forward over `tokens`: logits [T, V] and taps [T, n_taps·D]; the drafter is not
// fed. `journal`: the state keeps what State::rewind(mark, rows) needs to keep a prefix of it.
void traced_forward(const Backend& backend, const Drafter& drafter, State& state, std::span<const int32_t> tokens,
                    std::vector<float>& logits, std::vector<float>& taps, bool journal) {
  ForwardTrace trace;
  trace.only = tap_arrays(drafter.config());  // the taps alone: a CUDA trunk keeps its graph
  logits.resize(tokens.size() * backend.vocab_size());
  SequenceStep step{&state, tokens, logits.data(), &trace, journal};
  backend.forward(std::span<const SequenceStep>(&step, 1));
  taps = drafter.taps(trace, tokens);
}

}  // namespace

const char* rollback_name(Rollback r) { return r == Rollback::kKeep ? "keep" : "rerun"; }

double SpeculativeStats::tau() const {
  if (accepted.empty()) return 0.0;
  double s = 0;
  for (int64_t a : accepted) s += static_cast<double>(a + 1);
  return s / static_cast<double>(accepted.size());
}

std::vector<double> SpeculativeStats::acceptance_by_position() const {
  std::vector<double> out(drafts, 0.0);
  for (int64_t a : accepted)
    for (int64_t k = 0; k < a && k < drafts; ++k) out[k] += 1.0;
  for (double& v : out) v = accepted.empty() ? 0.0 : v / static_cast<double>(accepted.size());
  return out;
}

std::vector<int32_t> generate_speculative(const Backend& backend, const Drafter& drafter, State& state, int64_t steps,
                                          const DraftShape& shape, SpeculativeStats* stats,
                                          std::span<const int32_t> stop, Rollback rollback) {
  const auto t_start = Clock::now();
  if (!backend.realization().exact)
    throw Error("speculative decoding rewinds to the accepted rows (kept or run again), which is lossless only on an "
                "exact realization; " +
                    backend.name() + " is not",
                "use --backend cpu (or another exact realization)");
  drafter_component(state);  // throws when absent
  std::vector<int32_t> out;
  if (steps <= 0) return out;
  if (state.position() > state.capacity() - steps)
    throw Error("capacity exceeded: position " + std::to_string(state.position()) + " + " + std::to_string(steps) +
                    " steps > capacity " + std::to_string(state.capacity()),
                "plan a larger --capacity");
  std::vector<float> last = backend.last_logits(state);
  if (last.empty())
    throw Error("speculative generation needs the logits of a processed position", "prefill at least one token first");
  const int64_t V = backend.vocab_size(), nd = shape.drafts();
  SpeculativeStats local;
  SpeculativeStats& st = stats ? *stats : local;
  st = SpeculativeStats{};
  st.drafts = nd;
  st.rollback = rollback;
  st.histogram.assign(nd + 1, 0);
  st.rerun_histogram.assign(nd + 1, 0);

  std::vector<float> logits, taps;
  while (static_cast<int64_t>(out.size()) < steps) {
    const int64_t remaining = steps - static_cast<int64_t>(out.size());
    const int32_t anchor = argmax(last);
    auto t0 = Clock::now();
    const Proposal prop = drafter.propose(state, anchor, shape);
    st.propose_s += since(t0);
    // Verify no more drafts than tokens still to emit (the anchor is one of them).
    const int64_t n_verify = std::min(nd, remaining - 1);
    std::vector<int32_t> block(1, anchor);
    block.insert(block.end(), prop.tokens.begin(), prop.tokens.begin() + n_verify);

    t0 = Clock::now();
    const StateMark mark = state.mark();
    st.mark_s += since(t0);
    st.mark_bytes = std::max(st.mark_bytes, static_cast<int64_t>(mark.bytes()));
    t0 = Clock::now();
    traced_forward(backend, drafter, state, block, logits, taps, rollback == Rollback::kKeep);
    int64_t acc = 0;
    while (acc < n_verify && prop.tokens[acc] == argmax(std::span<const float>(logits.data() + acc * V, V))) ++acc;
    st.verify_s += since(t0);
    st.trunk_rows += static_cast<int64_t>(block.size());
    st.verify_rows += static_cast<int64_t>(block.size());
    int64_t commit = acc + 1;
    bool stopped = false;
    for (int64_t i = 0; i < commit && !stopped; ++i)
      if (is_stop_token(stop, block[i])) {
        commit = i + 1;  // end of sequence: nothing after it is committed
        stopped = true;
      }
    if (commit < static_cast<int64_t>(block.size())) {
      // Rejected drafts: back to the mark with only the committed rows (the verify's logits and taps
      // of rows < commit are those a forward of the committed tokens alone gives: chunk invariance).
      t0 = Clock::now();
      if (rollback == Rollback::kKeep) {
        state.rewind(mark, commit);
      } else {
        state.rewind(mark);
        traced_forward(backend, drafter, state, std::span<const int32_t>(block.data(), commit), logits, taps, false);
        st.trunk_rows += commit;
      }
      st.rollback_s += since(t0);
      ++st.rollbacks;
      ++st.rerun_histogram[commit];  // commit < block.size() <= nd + 1
    }
    t0 = Clock::now();
    const int64_t tap_width = drafter.config().n_taps() * drafter.config().hidden_size;  // a row of taps
    drafter.feed(state, std::span<const float>(taps.data(), commit * tap_width), commit);  // rows 0 … commit − 1
    st.feed_s += since(t0);
    last.assign(logits.begin() + (commit - 1) * V, logits.begin() + commit * V);
    out.insert(out.end(), block.begin(), block.begin() + commit);
    st.accepted.push_back(acc);
    ++st.histogram[acc];
    ++st.rounds;
    if (stopped) break;
  }
  st.tokens = static_cast<int64_t>(out.size());
  st.total_s = since(t_start);
  return out;
}

std::vector<int32_t> generate_greedy_primed(const Backend& backend, const Drafter& drafter, State& state, int64_t steps,
                                            std::vector<float>* step_logits, std::span<const int32_t> stop) {
  std::vector<int32_t> out;
  if (steps <= 0) return out;
  std::vector<float> last = backend.last_logits(state);
  if (last.empty())
    throw Error("greedy generation needs the logits of a processed position", "prefill at least one token first");
  std::vector<float> row;
  for (int64_t s = 0; s < steps; ++s) {
    const int32_t token = argmax(last);
    out.push_back(token);
    row.clear();
    drafter.prefill(backend, state, std::span<const int32_t>(&token, 1), 1, &row);
    if (step_logits) step_logits->insert(step_logits->end(), row.begin(), row.end());
    last.swap(row);
    if (is_stop_token(stop, token)) break;
  }
  return out;
}

}  // namespace memra
