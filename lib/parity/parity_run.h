// One parity run: validate the dump against the model's config (manifest first), then run the
// backend over the dump's tokens and compare every stage. Shared by `memra parity` and the parity
// gate. Rules (floor, tie flips, refusals): docs/parity.md.
#pragma once
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.h"
#include "model/model.h"
#include "parity/compare.h"
#include "parity/dump.h"

namespace memra {

struct ParityRun {
  std::string result;  // "PASS", "FAIL", "INCONCLUSIVE" (a stage compared fewer rows than its floor), "REFUSED"
  DumpValidation validation;
  Tolerance tolerance;
  std::vector<StageResult> stages;
  std::string hint;                 // REFUSED: what to do about it (one line)
  std::string first_failing_stage;  // FAIL: the earliest failing stage in causal order
  nlohmann::json report;  // the --json document (manifests/report.schema.json)
};

// `stages`: the stage families to compare (kStageFamilies); empty compares all of them.
ParityRun run_parity(const Model& model, const Backend& backend, const std::string& model_dir,
                     const std::string& dump_dir, const std::set<std::string>& stages = {});

}  // namespace memra
