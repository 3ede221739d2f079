// Drafter reference dumps (tools/oracle/dump_drafter.py): manifest.json (format memra.drafter-dump,
// the geometry the dump was computed under, harvest and ctx included) + arrays.safetensors.
// Validation is manifest-first (seed 003): the drafter's config is the authority. Geometry is
// compared field by field before any value is read (absent optional fields reported); ctx and the
// harvest convention come from the manifest, never from a byte count; every array's shape is
// asserted against the product the config predicts and its bytes against the manifest's xxh3.
// Harvest: a dump with an unknown harvest, or one disagreeing with the config's, is REFUSED; a dump
// without one is REFUSED for a drafter with a Markov head (the row set would be guessed) and for
// one whose config does not name it either.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drafter/drafter_config.h"
#include "format/safetensors.h"
#include "parity/dump.h"

namespace memra {

// Arrays a dump of `ctx` context rows holds, name → shape (with_tokens: the trunk-produced form).
std::map<std::string, std::vector<int64_t>> predicted_drafter_dump_shapes(const DrafterConfig& config, int64_t ctx,
                                                                           Harvest harvest, bool with_tokens);
// Names in predicted_drafter_dump_shapes whose dtype is I32 (the rest are F32).
bool drafter_dump_array_is_int(const std::string& name);

struct DrafterDumpValidation : DumpValidation {
  std::optional<Harvest> harvest;  // the convention the comparison uses (when not refused)
  std::string harvest_source;      // "dump and config", "dump", "config"
  int64_t ctx = 0;
};

class DrafterDump {
 public:
  // Reads manifest.json and opens the data file (hostile-safe); throws Error (exit 2) when the
  // folder is not a readable drafter dump. Disagreement is not an error here (see validate()).
  static DrafterDump open(const std::string& dir);

  const nlohmann::json& manifest() const { return manifest_; }
  const std::string& dir() const { return dir_; }
  std::string compute_dtype() const;  // producer.compute_dtype, or "unknown"

  DrafterDumpValidation validate(const DrafterConfig& config) const;

  bool has(const std::string& name) const;
  std::vector<float> f32(const std::string& name) const;
  std::vector<int64_t> ints(const std::string& name) const;

 private:
  std::string dir_;
  nlohmann::json manifest_;
  std::shared_ptr<SafetensorsFile> data_;
};

}  // namespace memra
