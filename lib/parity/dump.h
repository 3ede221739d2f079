// Reference dumps: a folder with manifest.json (geometry the dump was computed under, producer,
// seed, regeneration command, per-array dtype/shape/XXH3-128) and the arrays in safetensors.
// Validation is manifest-first (docs/parity.md): the model's config is the authority, the dump the
// claimant. Geometry is compared field by field before any value is read; every array's shape is
// asserted against the product the config predicts, never divided to infer a dimension.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/safetensors.h"
#include "model/config.h"

namespace memra {

// One geometry field's verdict.
struct GeometryCheck {
  std::string field;   // dotted path, e.g. "rope_parameters.compress.factor"
  std::string status;  // "agree", "DISAGREE", "MISSING" (required, absent), "absent" (optional, absent)
  std::string config_value;
  std::string dump_value;
};

struct ArrayCheck {
  std::string name;
  std::string status;  // "ok", "DISAGREE" (shape/dtype vs config or manifest), "HASH" (bytes), "MISSING", "unexpected"
  std::string detail;
};

// The stage families parity compares (docs/parity.md), in report order. A run compares all of them
// unless the user narrows the set explicitly (`memra parity --stages`).
inline const std::vector<std::string> kStageFamilies = {"hidden", "router", "indexer", "logits", "logits_incremental"};
// The family an array belongs to: "tokens", or one of kStageFamilies ("hidden.3" → "hidden").
std::string stage_family(const std::string& array_name);

struct DumpValidation {
  bool refused = false;
  bool geometry_disagrees = false;   // refused because the dump was made under another geometry
  std::vector<std::string> reasons;  // why refused, one line each
  std::vector<GeometryCheck> geometry;
  std::vector<ArrayCheck> arrays;
  std::string regenerate;  // the manifest's regeneration command (or a default)
};

// The files ReferenceDump::open reads in `dir` that exist (manifest.json and its data file); never
// throws. For the output rules.
std::vector<std::string> dump_input_files(const std::string& dir);

class ReferenceDump {
 public:
  // Reads manifest.json and opens the data file (hostile-safe). Throws Error (exit 2) when the
  // folder is not a readable dump; geometry disagreement is NOT an error here (see validate()).
  static ReferenceDump open(const std::string& dir);
  // The same checks over a manifest already parsed; `open_data` opens the named data file (the
  // folder's file for open(); the fuzzer hands in a fixed one).
  static ReferenceDump from_manifest(const std::string& dir, nlohmann::json manifest,
                                     const std::function<std::shared_ptr<SafetensorsFile>(const std::string&)>& open_data);

  const nlohmann::json& manifest() const { return manifest_; }
  const std::string& dir() const { return dir_; }
  int64_t tokens() const { return tokens_; }  // T claimed by the manifest
  int64_t incremental_prefix() const { return incremental_prefix_; }  // P, or -1 when absent
  std::string compute_dtype() const;  // producer.compute_dtype, or "" when absent
  bool qat() const;                   // producer.qat: made with the QAT simulations (dump_reference.py --qat)

  // Manifest-first validation against `config`; never reads array values before geometry passes.
  // Every array of a family in `stages` (empty: all families) must be present: a dump that lacks
  // one is refused naming it, as is a manifest without producer.compute_dtype (the tolerance
  // depends on it). Never a silent skip, never a looser tolerance.
  DumpValidation validate(const ModelConfig& config, const std::set<std::string>& stages = {}) const;

  bool has(const std::string& name) const;
  std::vector<float> f32(const std::string& name) const;      // F32 (or F64) array as f32
  // An optional array (optional_dump_shapes) as f32 when the manifest lists it (validate() checked
  // its shape, dtype and hash), else empty: a dump made before the array existed.
  std::vector<float> optional_f32(const std::string& name) const;
  std::vector<int64_t> ints(const std::string& name) const;   // I32/I64 array
  std::vector<int64_t> shape(const std::string& name) const;

 private:
  std::string dir_;
  nlohmann::json manifest_;
  int64_t tokens_ = 0;
  int64_t incremental_prefix_ = -1;
  std::shared_ptr<SafetensorsFile> data_;
};

// Geometry, field by field (nested objects flattened to dotted paths): `want` (from the config) is
// the authority. A field of `want` absent from `got` is "absent" when its top-level key is in
// `optional`, else "MISSING" (a reason); a different value is "DISAGREE" (a reason); fields only in
// `got` are listed as "unknown". Appends to v.geometry and v.reasons.
void compare_geometry(const nlohmann::json& want, const nlohmann::json& got, const std::set<std::string>& optional,
                      DumpValidation& v);

// One array of a dump: the manifest entry (`entry`, or null when absent), the data file's tensor
// (`tensor`, or null) and the predicted shape and dtype must agree and the bytes must hash to the
// manifest's xxh3. Appends the verdict to v.arrays, and a reason when `required` or present-but-wrong.
void check_dump_array(const std::string& name, const nlohmann::json* entry, const TensorView* tensor,
                      const std::vector<int64_t>& shape, DType dtype, bool required, const std::string& data_file,
                      DumpValidation& v);

// The shapes the config predicts for a dump of T tokens (incremental prefix P, or -1).
std::map<std::string, std::vector<int64_t>> predicted_dump_shapes(const ModelConfig& config, int64_t T, int64_t P);
// Arrays a dump may carry (F32): each decision stage's boundary score per row, `router.L.boundary`
// (learned layers) and `indexer.L.boundary` (CSA) [T], the k-th largest score (docs/parity.md §4).
// Absent: unknown (dumps made before them). Present: checked like any predicted array, a wrong
// shape, dtype or hash REFUSES the dump.
std::map<std::string, std::vector<int64_t>> optional_dump_shapes(const ModelConfig& config, int64_t T);

}  // namespace memra
