// A drafter's state in state files: the metadata that names the drafter (its fingerprint and family,
// beside the format's own keys) and the verified restore of a file with the drafter attached. The
// drafter's classes themselves are ordinary component classes (drafter_state.h, format 1.1).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "drafter/drafter.h"
#include "state/state_file.h"

namespace memra {

inline constexpr const char* kDrafterFingerprintKey = "drafter_fingerprint";
inline constexpr const char* kDrafterFamilyKey = "drafter_family";

// Extra metadata for a state file whose state carries `drafter`'s component.
std::map<std::string, std::string> drafter_metadata(const DrafterWeights& drafter);

// restore_state_file with the drafter attached. Negative Error (exit 1) when the file holds no
// drafter classes past position 0, or names another drafter (or none).
std::unique_ptr<State> restore_state_file_with_drafter(const StateFile& file, const Backend& backend,
                                                       const std::string& model_fingerprint, int64_t capacity,
                                                       const Drafter& drafter);

}  // namespace memra
