// Drafter gates (issue 12), on an exact realization:
//  speculative      greedy speculative decoding vs plain greedy from the same prompt: identical tokens
//                   over ≥ 96 steps, the final trunk state bit-equal to plain greedy's and the whole
//                   state (trunk + drafter) bit-equal to drafter-primed plain greedy's; three interleaved
//                   timing runs (median) give tokens/s of both and the speed-up; tau and acceptance.
//  drafter-restore  a state warmed by speculative decoding goes through a state file (drafter classes
//                   included) and is restored with the drafter into a grown capacity: every class
//                   (the drafter's rings / context K/V among them) bit-equal, the next proposal's
//                   drafts, confidences and captures bit-equal, and a speculative continuation of both
//                   emits the same tokens and ends in bit-equal states.
#pragma once
#include <cstdint>

#include "drafter/drafter.h"
#include "gate/trunk_gates.h"

namespace memra {

struct DrafterGateOptions {
  int64_t steps = 96;         // speculative: tokens generated (the gate needs at least 96)
  int64_t runs = 3;              // speculative: interleaved timing runs
  int64_t warm = 37;          // drafter-restore: speculative steps before the snapshot
  int64_t continuation = 29;  // drafter-restore: speculative steps after the restore
  int64_t grow = 50;          // drafter-restore: capacity added on restore
  int64_t block_size = 0;     // 0: the drafter's
  std::optional<Harvest> harvest;
};

GateResult gate_speculative(const Model& model, const Backend& backend, const Drafter& drafter,
                            const TrunkGateOptions& trunk, const DrafterGateOptions& options);
GateResult gate_drafter_restore(const Model& model, const Backend& backend, const Drafter& drafter,
                                const TrunkGateOptions& trunk, const DrafterGateOptions& options);

}  // namespace memra
