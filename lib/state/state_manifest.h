// Hash manifests of state files, in the same text form as model manifests (model/hash_manifest.h):
//   xxh3-128  <32 hex>  <class name>      one line per class, in file order
//   xxh3-128  <32 hex>  state             the whole-state hash, last
// so CI can keep expected state hashes in a text file and check a fresh state against it.
#pragma once
#include <string>
#include <vector>

#include "model/hash_manifest.h"
#include "state/state_file.h"

namespace memra {

inline constexpr const char* kManifestStateName = "state";

// The manifest of a (fully verified) state file.
std::string state_manifest_text(const StateFile& file);

// Per name: OK, MISMATCH, MISSING (in the manifest only), UNLISTED (in the state only).
ManifestCheck check_state_manifest(const StateFile& file, const std::vector<ManifestEntry>& entries);

}  // namespace memra
