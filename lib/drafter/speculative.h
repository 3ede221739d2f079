// Greedy speculative decoding with a drafter (drafters.md §1.4): each round the drafter proposes nd
// drafts after the anchor x_0 = argmax(last logits); the trunk verifies [x_0, d_1..d_nd] in ONE
// forward; the longest prefix of drafts that equals the trunk's own argmax is accepted (acc) and the
// trunk's next argmax is the bonus (the next round's anchor). Committed per round: x_0, d_1..d_acc.
//
// Rollback: on partial acceptance the state (trunk compressors, indexer keys, window, drafter) goes
// back to the mark taken before verifying (State::mark/rewind) and keeps the acc+1 committed rows of
// the journaled verify (Rollback::kKeep: SequenceStep::journal, no second forward), or runs them
// again (kRerun). On an exact realization a position's result does not depend on how tokens were
// split into calls, so the emitted tokens are exactly plain greedy's and the final state is
// bit-identical to plain greedy's (trunk and drafter) either way. A non-exact realization is refused.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "drafter/drafter.h"

namespace memra {

// How a round with rejected drafts gets back to its committed rows.
enum class Rollback {
  kKeep,   // rewind to the mark keeping the verify's committed rows (its journal)
  kRerun,  // rewind to the mark, then a second trunk forward over the committed rows
};
const char* rollback_name(Rollback r);

struct SpeculativeStats {
  int64_t rounds = 0;
  int64_t tokens = 0;              // emitted
  int64_t drafts = 0;              // nd (per round)
  std::vector<int64_t> accepted;   // [rounds] acc of each round (before the last round's trim)
  std::vector<int64_t> histogram;  // [nd+1] rounds that accepted exactly k drafts
  Rollback rollback = Rollback::kKeep;
  int64_t rollbacks = 0;           // rounds that rewound (rejected drafts)
  std::vector<int64_t> rerun_histogram;  // [nd+1] rollbacks by the k committed rows they kept or re-ran
  int64_t verify_rows = 0;         // tokens run through the trunk by the verifies (anchor + drafts)
  int64_t trunk_rows = 0;          // tokens run through the trunk (verify, + re-run with kRerun)
  int64_t mark_bytes = 0;          // the largest round's mark (State::mark: does not grow with the context)
  double propose_s = 0, mark_s = 0, verify_s = 0, rollback_s = 0, feed_s = 0, total_s = 0;

  double tau() const;                                  // mean acc + 1 per round
  std::vector<double> acceptance_by_position() const;  // [nd] fraction of rounds with acc ≥ k (k = 1..nd)
};

// `steps` tokens greedily with the drafter; the state (with a primed drafter) advances by exactly
// the tokens returned. A token in `stop` ends the generation after it (committed and fed, as
// generate_greedy does; later accepted drafts are rolled back), so the tokens and the final state
// stay plain greedy's. Throws Error when the state has no processed position or no drafter, the
// realization is not exact, or the capacity cannot hold position + steps.
std::vector<int32_t> generate_speculative(const Backend& backend, const Drafter& drafter, State& state, int64_t steps,
                                          const DraftShape& shape, SpeculativeStats* stats = nullptr,
                                          std::span<const int32_t> stop = {}, Rollback rollback = Rollback::kKeep);

// Plain greedy decoding of `steps` tokens that keeps the drafter primed (one token per trunk call,
// each fed to the drafter): the reference speculative decoding must reproduce. Optionally collects
// the logits each fed token produced [returned, V]; stops after a token in `stop` (generate_greedy).
std::vector<int32_t> generate_greedy_primed(const Backend& backend, const Drafter& drafter, State& state, int64_t steps,
                                            std::vector<float>* step_logits = nullptr,
                                            std::span<const int32_t> stop = {});

}  // namespace memra
