// Model hash manifests, in the spirit of llama.cpp's gguf-hash: one text line per tensor,
//   xxh3-128  <32 hex digits>  <canonical tensor name>
// (then the unused mtp.* tensors under their stored names, so every stored byte is covered)
// and a last line `xxh3-128  <32 hex>  model` carrying the whole-model fingerprint. Blank lines and
// lines starting with '#' are ignored on reading. Checking a model against a manifest gives, per name:
//   OK        hash equal
//   MISMATCH  hash differs
//   MISSING   the manifest names a tensor the model lacks
//   UNLISTED  the model has a tensor the manifest does not list
// and, for a model, one ALTERED line per shard file that holds a MISMATCH tensor.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "model/model.h"

namespace memra {

inline constexpr const char* kManifestAlgo = "xxh3-128";
inline constexpr const char* kManifestModelName = "model";  // the fingerprint line

struct ManifestEntry {
  Hash128 hash;
  std::string name;  // canonical tensor name, or "model"
  size_t line = 0;   // 1-based, for messages
};

std::string manifest_text(const Model& model);
// Throws Error (exit 2) naming `what` and the line on a malformed manifest: wrong field count,
// unknown algorithm, bad hex, duplicate name, non-UTF-8 text, more than 64 MiB.
std::vector<ManifestEntry> parse_manifest(std::string_view text, const std::string& what);

struct ManifestCheck {
  struct Item {
    std::string status;  // OK | MISMATCH | MISSING | UNLISTED
    std::string name;
    Hash128 expected;    // from the manifest (MISSING, MISMATCH, OK)
    Hash128 actual;      // from the model (UNLISTED, MISMATCH, OK)
    std::string file;    // model tensors: the shard file(s) holding its bytes
  };
  std::vector<Item> items;  // model order, then manifest-only names
  size_t ok = 0, mismatch = 0, missing = 0, unlisted = 0;
  std::map<std::string, size_t> altered_files;  // shard file → MISMATCH tensors in it (model checks)
  bool passed() const { return mismatch == 0 && missing == 0 && unlisted == 0; }
  nlohmann::json to_json() const;
  // One line per name (OK lines only when show_ok) and a closing `check PASS|FAIL: …` line;
  // `subject` names the checked artifact in the lines ("model", "state").
  std::string text(const std::string& subject, bool show_ok) const;
};

ManifestCheck check_manifest(const Model& model, const std::vector<ManifestEntry>& entries);
// The same check over any named hashes (state classes use it too): actual in artifact order.
ManifestCheck check_manifest_items(const std::vector<std::pair<std::string, Hash128>>& actual,
                                   const std::vector<ManifestEntry>& entries);

}  // namespace memra
