// State hash manifests: writing, and checking a state file against one (parsing is shared with
// model manifests: parse_manifest()).
#include "state/state_manifest.h"

#include <map>

namespace memra {

std::string state_manifest_text(const StateFile& file) {
  std::string out;
  for (const auto& c : file.classes()) out += std::string(kManifestAlgo) + "  " + c.hash.hex() + "  " + c.name + "\n";
  out += std::string(kManifestAlgo) + "  " + file.state_hash().hex() + "  " + kManifestStateName + "\n";
  return out;
}

ManifestCheck check_state_manifest(const StateFile& file, const std::vector<ManifestEntry>& entries) {
  std::map<std::string, const ManifestEntry*> listed;
  for (const auto& e : entries) listed[e.name] = &e;
  ManifestCheck c;
  auto judge = [&](const std::string& name, const Hash128& actual) {
    ManifestCheck::Item item;
    item.name = name;
    item.actual = actual;
    auto it = listed.find(name);
    if (it == listed.end()) {
      item.status = "UNLISTED";
      ++c.unlisted;
    } else {
      item.expected = it->second->hash;
      const bool ok = item.expected == actual;
      item.status = ok ? "OK" : "MISMATCH";
      ++(ok ? c.ok : c.mismatch);
      listed.erase(it);
    }
    c.items.push_back(std::move(item));
  };
  for (const auto& cls : file.classes()) judge(cls.name, cls.hash);
  judge(kManifestStateName, file.state_hash());
  for (const auto& e : entries) {  // names the state lacks, in manifest order
    if (!listed.count(e.name)) continue;
    ManifestCheck::Item item;
    item.status = "MISSING";
    item.name = e.name;
    item.expected = e.hash;
    c.items.push_back(std::move(item));
    ++c.missing;
  }
  return c;
}

}  // namespace memra
