// One drafter parity run (`memra parity --drafter DIR DUMP`, seed 003's stages in order): the dump
// is validated manifest-first against the drafter's config (REFUSED on any disagreement), then
// the CPU drafter math runs on the dump's taps and block embeddings and is compared stage by stage:
//   block_ids (EXACT: [anchor, noise...])  ctx_features  DSpark: stage.S.ring, stage.S.hidden,
//   stage.S.router.experts (decisions, judged by the reference margin)  DFlash: layer.L.hidden
//   prenorm  final  [with a trunk: block_embeddings, draft_logits = head(final rows)]
//   markov_tokens (EXACT; chained greedy over the dump's base logits)  markov_logits
//   draft_tokens (EXACT)  confidence (logits, our hidden rows and our chain's previous tokens).
// Value stages use the tolerance class of the realization (cpu-f32-exact vs the dump's compute
// dtype). After an in-band router flip at stage S (a near-tie broken the other way, which changes
// every later row through the bidirectional block attention), stages that depend on it are left
// out and the report says so.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drafter/drafter_weights.h"
#include "model/model.h"
#include "parity/compare.h"
#include "parity/drafter_dump.h"

namespace memra {

struct DrafterParityRun {
  std::string result;  // "PASS", "FAIL", "REFUSED"
  DrafterDumpValidation validation;
  Tolerance tolerance;
  std::vector<StageResult> stages;
  std::vector<std::string> skipped;  // stages left out after an in-band flip (with the reason)
  nlohmann::json report;             // the --json document (manifests/report.schema.json)
};

// trunk (optional): the trunk whose embedding and LM head the drafter borrows; adds the
// block_embeddings and draft_logits stages.
DrafterParityRun run_drafter_parity(const DrafterWeights& drafter, const std::string& dump_dir, const Model* trunk);

}  // namespace memra
