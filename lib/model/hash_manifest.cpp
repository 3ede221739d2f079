// Hash manifest writing, parsing (hostile-safe) and checking.
#include "model/hash_manifest.h"

#include <map>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "format/json_guard.h"

namespace memra {

std::string manifest_text(const Model& model) {
  std::string out;
  for (size_t i = 0; i < model.tensors().size(); ++i)
    out += std::string(kManifestAlgo) + "  " + model.hash(i).hex() + "  " + model.tensors()[i].name + "\n";
  for (size_t i = 0; i < model.unused_tensors().size(); ++i)  // stored names (mtp.*)
    out += std::string(kManifestAlgo) + "  " + model.unused_hash(i).hex() + "  " + model.unused_tensors()[i].name + "\n";
  out += std::string(kManifestAlgo) + "  " + model.fingerprint().hex() + "  " + kManifestModelName + "\n";
  return out;
}

std::vector<ManifestEntry> parse_manifest(std::string_view text, const std::string& what) {
  const std::string hint = "a manifest line is `xxh3-128  <32 hex>  <tensor name>` (write one with --write-manifest)";
  if (text.size() > (64u << 20)) throw Error(what + " is larger than 64 MiB; not a hash manifest", hint);
  size_t bad = 0;
  if (!valid_utf8(text, &bad)) throw Error(what + " is not UTF-8 text (byte offset " + std::to_string(bad) + ")", hint);
  std::vector<ManifestEntry> out;
  std::set<std::string> seen;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::vector<std::string_view> fields;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i >= line.size()) break;
      size_t start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
      fields.push_back(line.substr(start, i - start));
    }
    if (fields.empty() || fields[0][0] == '#') continue;
    const std::string where = what + " line " + std::to_string(line_no);
    if (fields.size() != 3)
      throw Error(where + " has " + std::to_string(fields.size()) + " fields, expected 3", hint);
    if (fields[0] != kManifestAlgo)
      throw Error(where + " uses hash '" + printable(fields[0]) + "', only xxh3-128 is supported", hint);
    ManifestEntry e;
    if (!Hash128::parse_hex(fields[1], &e.hash)) throw Error(where + " has a malformed hash (need 32 hex digits)", hint);
    e.name = std::string(fields[2]);
    e.line = line_no;
    if (!seen.insert(e.name).second) throw Error(where + " lists " + printable(e.name) + " a second time", hint);
    out.push_back(std::move(e));
  }
  if (out.empty()) throw Error(what + " has no hash lines", hint);
  return out;
}

ManifestCheck check_manifest_items(const std::vector<std::pair<std::string, Hash128>>& actual,
                                   const std::vector<ManifestEntry>& entries) {
  std::map<std::string, const ManifestEntry*> listed;
  for (const auto& e : entries) listed[e.name] = &e;
  ManifestCheck c;
  for (const auto& [name, hash] : actual) {
    ManifestCheck::Item item;
    item.name = name;
    item.actual = hash;
    auto it = listed.find(name);
    if (it == listed.end()) {
      item.status = "UNLISTED";
      ++c.unlisted;
    } else {
      item.expected = it->second->hash;
      const bool ok = item.expected == hash;
      item.status = ok ? "OK" : "MISMATCH";
      ++(ok ? c.ok : c.mismatch);
      listed.erase(it);
    }
    c.items.push_back(std::move(item));
  }
  for (const auto& e : entries) {  // what is left names something the artifact lacks, in manifest order
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

ManifestCheck check_manifest(const Model& model, const std::vector<ManifestEntry>& entries) {
  std::vector<std::pair<std::string, Hash128>> actual;
  std::unordered_map<std::string, std::string> where;  // tensor → the shard(s) holding its bytes
  for (size_t i = 0; i < model.tensors().size(); ++i) {
    const WeightTensor& w = model.tensors()[i];
    actual.emplace_back(w.name, model.hash(i));
    where[w.name] = w.scale_file.empty() || w.scale_file == w.file ? w.file : w.file + " + " + w.scale_file;
  }
  for (size_t i = 0; i < model.unused_tensors().size(); ++i) {
    const UnusedTensor& u = model.unused_tensors()[i];
    actual.emplace_back(u.name, model.unused_hash(i));
    where[u.name] = u.file;
  }
  actual.emplace_back(kManifestModelName, model.fingerprint());
  ManifestCheck c = check_manifest_items(actual, entries);
  for (auto& it : c.items) {
    auto f = where.find(it.name);
    if (f != where.end()) it.file = f->second;
    if (it.status == "MISMATCH" && !it.file.empty()) ++c.altered_files[it.file];
  }
  return c;
}

std::string ManifestCheck::text(const std::string& subject, bool show_ok) const {
  std::string out;
  for (const auto& it : items) {
    if (it.status == "OK") {
      if (show_ok) out += "OK        " + it.name + "\n";
    } else if (it.status == "MISMATCH") {
      out += "MISMATCH  " + it.name + "  manifest " + it.expected.hex() + "  " + subject + " " + it.actual.hex() +
             (it.file.empty() ? "" : "  (in " + printable(it.file) + ")") + "\n";
    } else if (it.status == "MISSING") {
      out += "MISSING   " + printable(it.name) + "  (listed in the manifest, not in the " + subject + ")\n";
    } else {
      out += "UNLISTED  " + it.name + "  (in the " + subject + ", not in the manifest)\n";
    }
  }
  for (const auto& [file, n] : altered_files)
    out += "ALTERED   " + printable(file) + "  (" + std::to_string(n) + (n == 1 ? " tensor differs" : " tensors differ") + ")\n";
  out += std::string("check ") + (passed() ? "PASS" : "FAIL") + ": " + std::to_string(ok) + " ok, " +
         std::to_string(mismatch) + " mismatch, " + std::to_string(missing) + " missing, " + std::to_string(unlisted) +
         " unlisted\n";
  return out;
}

nlohmann::json ManifestCheck::to_json() const {
  nlohmann::json altered = nlohmann::json::object();
  for (const auto& [file, n] : altered_files) altered[printable(file)] = n;
  nlohmann::json items_json = nlohmann::json::array();
  for (const auto& it : items) {
    nlohmann::json j = {{"status", it.status}, {"name", printable(it.name)}};
    if (it.status != "UNLISTED") j["expected"] = it.expected.hex();
    if (it.status != "MISSING") j["actual"] = it.actual.hex();
    if (!it.file.empty()) j["file"] = printable(it.file);
    items_json.push_back(std::move(j));
  }
  nlohmann::json j = {{"passed", passed()},   {"ok", ok},           {"mismatch", mismatch},
                      {"missing", missing}, {"unlisted", unlisted}, {"items", items_json}};
  if (!altered_files.empty()) j["altered_files"] = altered;
  return j;
}

}  // namespace memra
