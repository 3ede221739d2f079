// The bundled model (models/tiny) as the default MODEL of `memra gate all`: installed under
// PREFIX/share/memra/models/tiny next to PREFIX/bin/memra (cmake --install), or in the source tree
// this binary was built from.
#pragma once
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "core/error.h"

namespace memra::cli {

inline std::string bundled_model_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec && !exe.empty()) candidates.push_back((exe.parent_path() / ".." / "share" / "memra" / "models" / "tiny").lexically_normal());
  candidates.push_back(fs::path(MEMRA_SOURCE_DIR) / "models" / "tiny");
  std::string looked;
  for (const fs::path& p : candidates) {
    if (fs::is_regular_file(p / "config.json", ec)) return p.string();
    looked += (looked.empty() ? "" : ", ") + p.string();
  }
  throw Error("no MODEL given and no bundled model found (looked in " + looked + ")",
              "give a model folder: memra gate all MODEL");
}

}  // namespace memra::cli
