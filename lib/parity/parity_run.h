// One parity run: validate the dump against the model's config (manifest first), then run the
// backend over the dump's tokens and compare every stage. Shared by `memra parity` and the parity gate.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.h"
#include "model/model.h"
#include "parity/compare.h"
#include "parity/dump.h"

namespace memra {

struct ParityRun {
  std::string result;  // "PASS", "FAIL", "REFUSED"
  DumpValidation validation;
  Tolerance tolerance;
  std::vector<StageResult> stages;
  nlohmann::json report;  // the --json document (manifests/report.schema.json)
};

ParityRun run_parity(const Model& model, const Backend& backend, const std::string& model_dir,
                     const std::string& dump_dir);

}  // namespace memra
