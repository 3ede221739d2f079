// Drafter state in state files (drafter_file.h).
#include "drafter/drafter_file.h"

#include "core/error.h"

namespace memra {

std::map<std::string, std::string> drafter_metadata(const DrafterWeights& d) {
  return {{kDrafterFingerprintKey, d.fingerprint().hex()}, {kDrafterFamilyKey, drafter_family_name(d.config().family)}};
}

std::unique_ptr<State> restore_state_file_with_drafter(const StateFile& file, const Backend& backend,
                                                       const std::string& model_fingerprint, int64_t capacity,
                                                       const Drafter& drafter) {
  const std::string where = "state file " + file.path();
  const std::string want = drafter.weights().fingerprint().hex();
  auto it = file.metadata().find(kDrafterFingerprintKey);
  if (it == file.metadata().end()) {
    if (file.position() > 0)
      throw negative(where + " holds no drafter state",
                     "write it with the drafter attached: memra draft MODEL --drafter DIR --tokens ... -o STATE");
  } else if (it->second != want) {
    throw negative(where + " was written with drafter " + it->second + ", not with this one (" + want + ")",
                   "restore it with the drafter it was written with");
  }
  return restore_state_file(file, backend, model_fingerprint, capacity, [&](State& s) { drafter.attach(s); });
}

}  // namespace memra
