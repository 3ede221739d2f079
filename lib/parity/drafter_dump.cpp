// Drafter reference-dump reading and manifest-first validation (see drafter_dump.h).
#include "parity/drafter_dump.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "format/json_guard.h"

namespace memra {

using nlohmann::json;

namespace {

// Geometry fields a dump may leave out: reported as absent, never read as agreement.
const std::set<std::string> kOptionalFields = {"sliding_window", "layer_sliding", "layer_causal", "markov_rank",
                                               "rms_norm_eps"};
constexpr int64_t kMaxCtx = int64_t{1} << 24;

}  // namespace

bool drafter_dump_array_is_int(const std::string& name) {
  return name == "tokens" || name == "block_ids" || name == "markov_tokens" || name == "draft_tokens" ||
         name.ends_with(".experts");
}

std::map<std::string, std::vector<int64_t>> predicted_drafter_dump_shapes(const DrafterConfig& c, int64_t ctx,
                                                                           Harvest harvest, bool with_tokens) {
  const int64_t b = c.block_size, D = c.hidden_size, V = c.vocab_size, nd = harvest_drafts(harvest, b);
  std::map<std::string, std::vector<int64_t>> s;
  if (with_tokens) s["tokens"] = {ctx};
  s["taps"] = {ctx, c.n_taps(), D};
  s["block_ids"] = {b};
  s["block_embeddings"] = {b, D};
  s["ctx_features"] = {ctx, D};
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string L = std::to_string(l);
    if (c.family == DrafterFamily::kDspark) {
      s["stage." + L + ".ring"] = {std::min(*c.sliding_window, ctx), c.head_dim};
      s["stage." + L + ".hidden"] = {b, c.hc_mult, D};
      s["stage." + L + ".router.experts"] = {b, c.num_experts_per_tok};
      s["stage." + L + ".router.margin"] = {b};
    } else {
      s["layer." + L + ".hidden"] = {b, D};
    }
  }
  s["prenorm"] = {b, D};
  s["final"] = {b, D};
  s["base_logits"] = {nd, V};
  s["draft_tokens"] = {nd};
  if (c.has_markov()) {
    s["markov_tokens"] = {nd};
    s["markov_logits"] = {nd, V};
    s["markov_margin"] = {nd};
  }
  if (c.confidence) s["confidence"] = {nd};
  return s;
}

DrafterDump DrafterDump::open(const std::string& dir) {
  DrafterDump d;
  d.dir_ = dir;
  const std::string mpath = (std::filesystem::path(dir) / "manifest.json").string();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw Error("dump folder " + dir + " does not exist", "give the folder that holds manifest.json");
  if (!std::filesystem::exists(mpath, ec))
    throw Error(dir + " has no manifest.json", "regenerate the dump with tools/oracle/dump_drafter.py");
  d.manifest_ = read_json_file(mpath, 16u << 20);
  const json& m = d.manifest_;
  if (!m.is_object()) throw Error(mpath + " is not a JSON object");
  if (!m.contains("format") || m["format"] != "memra.drafter-dump")
    throw Error(mpath + ": format is not memra.drafter-dump",
                m.value("format", json()) == json("memra.dump") ? "this is a trunk dump: run memra parity MODEL DUMP"
                                                                : "regenerate the dump with tools/oracle/dump_drafter.py");
  const std::string version = m.contains("format_version") && m["format_version"].is_string() ? m["format_version"].get<std::string>() : "";
  if (version.rfind("1.", 0) != 0)
    throw Error(mpath + ": unsupported format_version '" + printable(version) + "' (this memra reads 1.x)");
  const std::string data_file = m.contains("data_file") && m["data_file"].is_string() ? m["data_file"].get<std::string>() : "";
  if (data_file.empty() || data_file.find('/') != std::string::npos || data_file.find("..") != std::string::npos)
    throw Error(mpath + ": 'data_file' must name a file inside the dump folder");
  d.data_ = std::make_shared<SafetensorsFile>(SafetensorsFile::open((std::filesystem::path(dir) / data_file).string()));
  if (!m.contains("arrays") || !m["arrays"].is_object()) throw Error(mpath + ": 'arrays' must be an object");
  if (!m.contains("geometry") || !m["geometry"].is_object()) throw Error(mpath + ": 'geometry' must be an object");
  return d;
}

std::string DrafterDump::compute_dtype() const {
  if (manifest_.contains("producer") && manifest_["producer"].is_object()) {
    const json& p = manifest_["producer"];
    if (p.contains("compute_dtype") && p["compute_dtype"].is_string()) return p["compute_dtype"].get<std::string>();
  }
  return "unknown";
}

DrafterDumpValidation DrafterDump::validate(const DrafterConfig& config) const {
  DrafterDumpValidation v;
  v.regenerate = manifest_.contains("regenerate") && manifest_["regenerate"].is_string() ? manifest_["regenerate"].get<std::string>() : "";
  if (v.regenerate.empty()) v.regenerate = "tools/oracle/dump_drafter.py DRAFTER_DIR --trunk MODEL_DIR --out " + dir_;

  // 1. Geometry, field by field (harvest and ctx are the dump's own and checked below).
  json got = manifest_["geometry"];
  const json harvest_field = got.contains("harvest") ? got["harvest"] : json();
  const json ctx_field = got.contains("ctx") ? got["ctx"] : json();
  got.erase("harvest");
  got.erase("ctx");
  compare_geometry(config.geometry_json(), got, kOptionalFields, v);

  // 2. Harvest: named by the dump, agreeing with the config when the config names one.
  GeometryCheck hc{"harvest", "agree", config.harvest ? harvest_name(*config.harvest) : "", ""};
  if (!harvest_field.is_null()) {
    hc.dump_value = harvest_field.dump();
    std::optional<Harvest> h = harvest_field.is_string() ? parse_harvest(harvest_field.get<std::string>()) : std::nullopt;
    if (!h) {
      hc.status = "DISAGREE";
      v.reasons.push_back("geometry field 'harvest' = " + printable(harvest_field.dump()) +
                          " is not a known convention (dflash mask-fill | dspark shifted)");
    } else if (config.harvest && *config.harvest != *h) {
      hc.status = "DISAGREE";
      v.reasons.push_back("geometry field 'harvest': config says " + std::string(harvest_name(*config.harvest)) +
                          ", dump says " + harvest_name(*h));
    } else {
      v.harvest = h;
      v.harvest_source = config.harvest ? "dump and config" : "dump (the config names none)";
    }
  } else if (config.has_markov()) {
    hc.status = "MISSING";
    v.reasons.push_back("the dump manifest has no 'harvest': for a drafter with a Markov head the harvested row set "
                        "would be guessed (a harvest-less dump encodes dflash mask-fill rows)");
  } else if (config.harvest) {
    hc.status = "absent";
    v.harvest = config.harvest;
    v.harvest_source = "config (the dump names none)";
  } else {
    hc.status = "MISSING";
    v.reasons.push_back("neither the drafter config nor the dump manifest names the harvest convention");
  }
  v.geometry.push_back(hc);

  // 3. ctx: from the manifest, bounded; the taps and ctx_features lengths over-determine it.
  GeometryCheck cc{"ctx", "agree", "", ctx_field.dump()};
  if (ctx_field.is_number_integer() && ctx_field.get<int64_t>() >= 1 && ctx_field.get<int64_t>() <= kMaxCtx) {
    v.ctx = ctx_field.get<int64_t>();
  } else {
    cc.status = "MISSING";
    v.reasons.push_back(ctx_field.is_null() ? "dump manifest lacks required geometry field 'ctx'"
                                            : "geometry field 'ctx' must be an integer in [1, 2^24]");
  }
  v.geometry.push_back(cc);
  if (!v.reasons.empty()) {
    v.refused = true;
    return v;  // no array is looked at under a disagreeing geometry
  }

  // 4. Arrays: lengths asserted against the config's products, bytes against the manifest's hashes.
  const json& arrays = manifest_["arrays"];
  const bool with_tokens = arrays.contains("tokens");
  const auto predicted = predicted_drafter_dump_shapes(config, v.ctx, *v.harvest, with_tokens);
  const std::string data_file = manifest_["data_file"].get<std::string>();
  for (const auto& [name, shape] : predicted)
    check_dump_array(name, arrays.contains(name) ? &arrays[name] : nullptr, data_->find(name), shape,
                     drafter_dump_array_is_int(name) ? DType::kI32 : DType::kF32, true, data_file, v);
  for (auto it = arrays.begin(); it != arrays.end(); ++it)
    if (!predicted.count(it.key())) v.arrays.push_back({printable(it.key()), "unexpected", "not predicted by the config; not compared"});
  v.refused = !v.reasons.empty();
  return v;
}

bool DrafterDump::has(const std::string& name) const { return data_->find(name) != nullptr; }
std::vector<float> DrafterDump::f32(const std::string& name) const { return tensor_to_f32(data_->get(name)); }
std::vector<int64_t> DrafterDump::ints(const std::string& name) const { return tensor_to_i64(data_->get(name)); }

}  // namespace memra
