// In-process trunk gates (seed 000, dsv4-host-cache-gate), on any backend:
//  restore-roundtrip  warm a state (prefill + greedy steps across several CSA phases), snapshot it
//                     through a hashed state file, restore into a grown capacity, continue both:
//                     logits bit-equal every step, cache classes bit-equal before and after.
//  chunk-invariance   bounded-prefill widths (1 and 64 by default) give bit-identical logits and classes.
//  chunk-semantics    monolithic vs chunked prefill as two realizations: initial logits max-abs, then
//                     16 teacher-forced steps with every argmax disagreement classified IN-/OUT-OF-BAND
//                     against the pair band (band.h); OUT-OF-BAND fails. Reports cache bit-equality.
//  parity             the manifest-first oracle comparison (parity_run.h) as a gate line.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "gate/gate.h"
#include "model/model.h"

namespace memra {

struct TrunkGateOptions {
  int64_t prompt = 66;        // prompt tokens
  int64_t warm = 17;          // greedy steps before the snapshot (crosses several CSA phases)
  int64_t continuation = 11;  // steps after the restore
  int64_t grow = 97;          // capacity added on restore
  int64_t steps = 16;         // teacher-forced steps (chunk semantics)
  std::vector<int64_t> widths = {1, 64};
  uint32_t seed = 0;                // prompt ids drawn from this seed …
  std::vector<int32_t> tokens;      // … unless given
  std::string scratch_dir;          // where the restore gate writes its state file (default: temp dir)
  uint64_t max_memory = 0;          // memory plan limit in bytes (0: the default share; engine/memory_plan.h)
};

// The prompt the gates use: options.tokens if given, else `prompt` ids in [2, V) from the seed.
std::vector<int32_t> gate_prompt(const ModelConfig& config, const TrunkGateOptions& options);

GateResult gate_restore_roundtrip(const Model& model, const Backend& backend, const TrunkGateOptions& options);
GateResult gate_chunk_invariance(const Model& model, const Backend& backend, const TrunkGateOptions& options);
// `monolithic` and `chunked` may be the same backend (then both realizations are the exact path).
GateResult gate_chunk_semantics(const Model& model, const Backend& monolithic, const Backend& chunked,
                                const TrunkGateOptions& options);
GateResult gate_parity(const Model& model, const Backend& backend, const std::string& model_dir, const std::string& dump_dir);

}  // namespace memra
