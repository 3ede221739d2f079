// The fused-MoE gate (seed 000's fused-vs-per-expert gate, on the trunk): the CUDA backend's fused
// MoE kernels (every selected expert of every row in one launch per stage) against its per-expert
// path (one expert at a time, gathered rows), on the exact realization:
//  - the same prompt (prefill in one call, so rows share experts) and greedy steps on each path:
//    logits of every row and step, the greedy tokens and the final cache classes equal by bits;
//  - both paths timed on the same work, interleaved, median of `reps` runs.
// The CPU backends have one MoE path: the gate is refused for them (an Error, exit 2).
#pragma once
#include "engine/backend.h"
#include "gate/gate.h"
#include "gate/trunk_gates.h"
#include "model/model.h"

namespace memra {

struct FusedMoeOptions {
  int64_t steps = 7;  // greedy steps after the prefill
  int64_t reps = 5;   // timing repetitions per path
};

// `fused_backend` and `per_expert_backend`: the same CUDA realization made with
// BackendOptions::moe_per_expert false and true.
GateResult gate_fused_moe(const Model& model, const Backend& fused_backend, const Backend& per_expert_backend,
                          const TrunkGateOptions& trunk, const FusedMoeOptions& options);

}  // namespace memra
