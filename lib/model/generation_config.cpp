// End-of-sequence ids from generation_config.json / config.json (generation_config.h).
#include "model/generation_config.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "format/json_guard.h"

namespace memra {

namespace {

// The eos_token_id field of `path` (null when the file or the field is absent or null).
nlohmann::json eos_field(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return nullptr;
  nlohmann::json j = read_json_file(path.string(), 16u << 20);
  if (!j.is_object()) throw Error(path.string() + ": top level is not a JSON object");
  auto it = j.find("eos_token_id");
  return it == j.end() ? nlohmann::json(nullptr) : *it;
}

}  // namespace

std::vector<int32_t> load_eos_token_ids(const std::string& model_dir, int64_t vocab_size) {
  const std::filesystem::path dir(model_dir);
  std::filesystem::path from = dir / "generation_config.json";
  nlohmann::json v = eos_field(from);
  if (v.is_null()) {
    from = dir / "config.json";
    v = eos_field(from);
  }
  std::vector<int32_t> ids;
  if (v.is_null()) return ids;
  const std::string field = from.filename().string() + " eos_token_id";
  const char* hint = "eos_token_id must be a token id or a list of token ids (or pass --ignore-eos)";
  if (!v.is_array()) v = nlohmann::json::array({v});
  for (const auto& e : v) {
    if (!e.is_number_integer()) throw Error(field + " holds " + printable(e.dump()) + ", which is not a token id", hint);
    const int64_t id = e.get<int64_t>();
    if (id < 0 || id >= vocab_size)
      throw Error(field + " = " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab_size) +
                      ")",
                  hint);
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

}  // namespace memra
