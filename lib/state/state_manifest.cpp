// State hash manifests: writing, and checking a state file against one (parsing is shared with
// model manifests: parse_manifest()).
#include "state/state_manifest.h"


namespace memra {

std::string state_manifest_text(const StateFile& file) {
  std::string out;
  for (const auto& c : file.classes()) out += std::string(kManifestAlgo) + "  " + c.hash.hex() + "  " + c.name + "\n";
  out += std::string(kManifestAlgo) + "  " + file.state_hash().hex() + "  " + kManifestStateName + "\n";
  return out;
}

ManifestCheck check_state_manifest(const StateFile& file, const std::vector<ManifestEntry>& entries) {
  std::vector<std::pair<std::string, Hash128>> actual;
  for (const auto& cls : file.classes()) actual.emplace_back(cls.name, cls.hash);
  actual.emplace_back(kManifestStateName, file.state_hash());
  return check_manifest_items(actual, entries);
}

}  // namespace memra
