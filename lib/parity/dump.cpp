// Reference-dump reading and manifest-first validation.
#include "parity/dump.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/shape_text.h"
#include "core/hash.h"
#include "format/json_guard.h"

namespace memra {

using nlohmann::json;

namespace {

// Fields a dump may leave out: reported as absent, never read as agreement.
const std::set<std::string> kOptionalFields = {"num_key_value_heads", "norm_topk_prob"};

void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else {
    out[prefix] = j;
  }
}

bool values_agree(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_number_integer() && b.is_number_integer()) return a.get<int64_t>() == b.get<int64_t>();
    double x = a.get<double>(), y = b.get<double>();
    return x == y || std::fabs(x - y) <= 1e-9 * std::max(std::fabs(x), std::fabs(y));
  }
  return a == b;
}

}  // namespace

std::string stage_family(const std::string& name) {
  if (name == "tokens" || name == "logits" || name == "logits_incremental") return name;
  return name.substr(0, name.find('.'));
}

void compare_geometry(const json& want_json, const json& got_json, const std::set<std::string>& optional,
                      DumpValidation& v) {
  std::map<std::string, json> want, got;
  flatten(want_json, "", want);
  flatten(got_json, "", got);
  for (const auto& [field, value] : want) {
    GeometryCheck g{field, "agree", value.dump(), ""};
    auto it = got.find(field);
    const std::string top = field.substr(0, field.find('.'));
    if (it == got.end()) {
      g.status = optional.count(top) ? "absent" : "MISSING";
      if (g.status == "MISSING") v.reasons.push_back("dump manifest lacks required geometry field '" + field + "'");
    } else {
      g.dump_value = it->second.dump();
      if (!values_agree(value, it->second)) {
        g.status = "DISAGREE";
        v.reasons.push_back("geometry field '" + field + "': config says " + g.config_value + ", dump says " + g.dump_value);
      }
    }
    v.geometry.push_back(g);
  }
  for (const auto& [field, value] : got)
    if (!want.count(field)) v.geometry.push_back({field, "unknown", "", value.dump()});
}

void check_dump_array(const std::string& name, const json* e, const TensorView* t, const std::vector<int64_t>& shape,
                      DType dtype, bool required, const std::string& data_file, DumpValidation& v) {
  ArrayCheck a{name, "ok", ""};
  if (!e) {
    a.status = "MISSING";
    a.detail = "not in the manifest";
    if (required) v.reasons.push_back("dump lacks required array '" + name + "'");
    v.arrays.push_back(a);
    return;
  }
  std::vector<int64_t> mshape;
  if (e->is_object() && e->contains("shape") && (*e)["shape"].is_array())
    for (const auto& d : (*e)["shape"]) mshape.push_back(d.is_number_integer() ? d.get<int64_t>() : -1);
  const std::string mdtype = e->is_object() && e->contains("dtype") && (*e)["dtype"].is_string() ? (*e)["dtype"].get<std::string>() : "";
  if (!t) {
    a.status = "MISSING";
    a.detail = "in the manifest but not in the data file";
    v.reasons.push_back("array '" + name + "' is missing from " + data_file);
  } else if (mshape != shape || t->shape != shape) {
    a.status = "DISAGREE";
    a.detail = "config predicts " + shape_text(shape) + ", manifest says " + shape_text(mshape) + ", file has " +
               shape_text(t->shape);
    v.reasons.push_back("array '" + name + "': " + a.detail);
  } else {
    Hash128 want_hash;
    const std::string hex = e->is_object() && e->contains("xxh3") && (*e)["xxh3"].is_string() ? (*e)["xxh3"].get<std::string>() : "";
    if (!Hash128::parse_hex(hex, &want_hash) || !(xxh3_128(t->data, t->nbytes) == want_hash)) {
      a.status = "HASH";
      a.detail = "bytes do not match the manifest's xxh3";
      v.reasons.push_back("array '" + name + "': bytes do not match the manifest's xxh3 " + printable(hex));
    } else if (mdtype != dtype_name(t->dtype) || t->dtype != dtype) {
      a.status = "DISAGREE";
      a.detail = "manifest dtype " + printable(mdtype) + ", file dtype " + dtype_name(t->dtype) + ", expected " +
                 dtype_name(dtype);
      v.reasons.push_back("array '" + name + "': " + a.detail);
    }
  }
  v.arrays.push_back(a);
}

std::map<std::string, std::vector<int64_t>> predicted_dump_shapes(const ModelConfig& c, int64_t T, int64_t P) {
  std::map<std::string, std::vector<int64_t>> s;
  s["tokens"] = {T};
  s["logits"] = {T, c.vocab_size};
  if (P >= 0) s["logits_incremental"] = {T - P, c.vocab_size};
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string L = std::to_string(l);
    s["hidden." + L] = {T, c.hc_mult, c.hidden_size};
    s["router." + L + ".experts"] = {T, c.num_experts_per_tok};
    if (c.mlp_layer_types[l] == MlpKind::kLearned) s["router." + L + ".margin"] = {T};
    if (c.layer_types[l] == LayerKind::kCSA) {
      s["indexer." + L + ".selected"] = {T, c.index_topk};
      s["indexer." + L + ".margin"] = {T};
    }
  }
  return s;
}

std::map<std::string, std::vector<int64_t>> optional_dump_shapes(const ModelConfig& c, int64_t T) {
  std::map<std::string, std::vector<int64_t>> s;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string L = std::to_string(l);
    if (c.mlp_layer_types[l] == MlpKind::kLearned) s["router." + L + ".boundary"] = {T};
    if (c.layer_types[l] == LayerKind::kCSA) s["indexer." + L + ".boundary"] = {T};
  }
  return s;
}

std::vector<std::string> dump_input_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path manifest = fs::path(dir) / "manifest.json";
  if (!fs::exists(manifest, ec)) return out;
  out.push_back(manifest.string());
  try {
    const json m = read_json_file(manifest.string(), 16u << 20);
    if (m.is_object() && m.contains("data_file") && m["data_file"].is_string()) {
      const std::string f = m["data_file"].get<std::string>();
      if (!f.empty() && f.find('/') == std::string::npos) out.push_back((fs::path(dir) / f).string());
    }
  } catch (const Error&) {
    // A broken manifest fails the open itself.
  }
  return out;
}

ReferenceDump ReferenceDump::open(const std::string& dir) {
  const std::string mpath = (std::filesystem::path(dir) / "manifest.json").string();
  if (!std::filesystem::is_directory(dir)) throw Error("dump folder " + dir + " does not exist", "give the folder that holds manifest.json");
  if (!std::filesystem::exists(mpath))
    throw Error(dir + " has no manifest.json", "regenerate the dump with tools/oracle/dump_reference.py");
  return from_manifest(dir, read_json_file(mpath, 16u << 20), [&](const std::string& data_file) {
    return std::make_shared<SafetensorsFile>(SafetensorsFile::open((std::filesystem::path(dir) / data_file).string()));
  });
}

namespace {

// A string member, or `def` when absent; any other type is an Error naming it (nlohmann's value()
// would throw its own type_error, which is not a message for a user).
std::string string_field(const json& obj, const char* key, const std::string& def, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return def;
  if (!it->is_string()) throw Error(where + ": '" + key + "' must be a string");
  return it->get<std::string>();
}

}  // namespace

ReferenceDump ReferenceDump::from_manifest(const std::string& dir, json manifest,
                                           const std::function<std::shared_ptr<SafetensorsFile>(const std::string&)>& open_data) {
  ReferenceDump d;
  d.dir_ = dir;
  const std::string mpath = (std::filesystem::path(dir) / "manifest.json").string();
  d.manifest_ = std::move(manifest);
  const json& m = d.manifest_;
  if (!m.is_object()) throw Error(mpath + " is not a JSON object");
  if (string_field(m, "format", "", mpath) != "memra.dump")
    throw Error(mpath + ": format is not memra.dump", "regenerate the dump with tools/oracle/dump_reference.py");
  const std::string version = string_field(m, "format_version", "", mpath);
  if (version.rfind("1.", 0) != 0)
    throw Error(mpath + ": unsupported format_version '" + printable(version) + "' (this memra reads 1.x)");
  if (!m.contains("tokens") || !m["tokens"].is_number_integer() || m["tokens"].get<int64_t>() < 1 ||
      m["tokens"].get<int64_t>() > (int64_t{1} << 24))
    throw Error(mpath + ": 'tokens' must be an integer in [1, 2^24]");
  d.tokens_ = m["tokens"].get<int64_t>();
  if (m.contains("incremental_prefix")) {
    if (!m["incremental_prefix"].is_number_integer()) throw Error(mpath + ": 'incremental_prefix' must be an integer");
    d.incremental_prefix_ = m["incremental_prefix"].get<int64_t>();
    if (d.incremental_prefix_ < 1 || d.incremental_prefix_ >= d.tokens_)
      throw Error(mpath + ": 'incremental_prefix' must lie in [1, tokens)");
  }
  const std::string data_file = string_field(m, "data_file", "", mpath);
  if (data_file.empty() || data_file.find('/') != std::string::npos || data_file.find("..") != std::string::npos)
    throw Error(mpath + ": 'data_file' must name a file inside the dump folder");
  if (!m.contains("arrays") || !m["arrays"].is_object()) throw Error(mpath + ": 'arrays' must be an object");
  if (!m.contains("geometry") || !m["geometry"].is_object()) throw Error(mpath + ": 'geometry' must be an object");
  string_field(m, "regenerate", "", mpath);
  if (m.contains("producer") && m["producer"].is_object()) string_field(m["producer"], "compute_dtype", "unknown", mpath);
  for (auto it = m["arrays"].begin(); it != m["arrays"].end(); ++it) {
    if (!it->is_object()) throw Error(mpath + ": arrays." + printable(it.key()) + " must be an object");
    string_field(*it, "xxh3", "", mpath + ": arrays." + printable(it.key()));
    string_field(*it, "dtype", "", mpath + ": arrays." + printable(it.key()));
  }
  d.data_ = open_data(data_file);
  return d;
}

std::string ReferenceDump::compute_dtype() const {
  if (manifest_.contains("producer") && manifest_["producer"].is_object()) {
    const json& p = manifest_["producer"];
    if (p.contains("compute_dtype") && p["compute_dtype"].is_string()) return p["compute_dtype"].get<std::string>();
  }
  return "";
}

// The compute dtypes parity has a tolerance for (compare.cpp tolerance_for).
static const std::set<std::string> kComputeDtypes = {"float32", "float64", "bfloat16", "float16"};

bool ReferenceDump::qat() const {
  if (!manifest_.contains("producer") || !manifest_["producer"].is_object()) return false;
  const auto& p = manifest_["producer"];
  return p.contains("qat") && p["qat"].is_boolean() && p["qat"].get<bool>();
}

DumpValidation ReferenceDump::validate(const ModelConfig& config, const std::set<std::string>& stages) const {
  DumpValidation v;
  auto wanted = [&](const std::string& family) { return family == "tokens" || stages.empty() || stages.count(family) > 0; };
  v.regenerate = manifest_.value("regenerate", "");
  if (v.regenerate.empty()) v.regenerate = "tools/oracle/dump_reference.py MODEL_DIR --out " + dir_;

  // 1. Geometry, field by field: the config is the authority.
  compare_geometry(config.geometry_json(), manifest_["geometry"], kOptionalFields, v);
  if (!v.reasons.empty()) {
    v.refused = true;
    v.geometry_disagrees = true;
    return v;  // no array is looked at under a disagreeing geometry
  }
  const std::string dtype = compute_dtype();
  if (dtype.empty())
    v.reasons.push_back("dump manifest lacks producer.compute_dtype: the tolerance depends on it");
  else if (!kComputeDtypes.count(dtype))
    v.reasons.push_back("dump manifest's producer.compute_dtype '" + printable(dtype) +
                        "' is not one parity has a tolerance for (float32, float64, bfloat16, float16)");
  if (wanted("logits_incremental") && incremental_prefix_ < 0)
    v.reasons.push_back("dump has no incremental logits (manifest lacks incremental_prefix): stage logits_incremental "
                        "cannot be compared; narrow the stages with --stages to compare the others");

  // 2. Arrays: manifest entry, file entry and config prediction must all agree; bytes must hash.
  const auto predicted = predicted_dump_shapes(config, tokens_, incremental_prefix_);
  const json& arrays = manifest_["arrays"];
  const std::string data_file = manifest_.value("data_file", "");
  std::map<std::string, std::vector<std::string>> lacking;  // family → arrays it needs that the dump lacks
  for (const auto& [name, shape] : predicted) {
    if (!arrays.contains(name)) {
      v.arrays.push_back({name, "MISSING", "not in the manifest"});
      if (wanted(stage_family(name))) lacking[stage_family(name)].push_back(name);
      continue;
    }
    const DType dtype = name == "tokens" || name.ends_with(".experts") || name.ends_with(".selected") ? DType::kI32 : DType::kF32;
    check_dump_array(name, &arrays[name], data_->find(name), shape, dtype, true, data_file, v);
  }
  for (const auto& [family, names] : lacking) {
    std::string list;
    for (size_t i = 0; i < names.size() && i < 4; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 4) list += ", ...";
    v.reasons.push_back("dump lacks " + std::to_string(names.size()) + " array" + (names.size() > 1 ? "s" : "") +
                        " of stage " + family + " (" + list + ")" +
                        (family == "tokens" ? "" : "; to compare only the stages it has, name them with --stages"));
  }
  // Optional arrays: checked when the manifest lists them (a family --stages leaves out too: the
  // decisions of every stage take part in finding the cut), nothing said when it does not.
  const auto optional = optional_dump_shapes(config, tokens_);
  for (const auto& [name, shape] : optional)
    if (arrays.contains(name)) check_dump_array(name, &arrays[name], data_->find(name), shape, DType::kF32, false, data_file, v);
  for (auto it = arrays.begin(); it != arrays.end(); ++it)
    if (!predicted.count(it.key()) && !optional.count(it.key()))
      v.arrays.push_back({printable(it.key()), "unexpected", "not predicted by the config; not compared"});
  v.refused = !v.reasons.empty();
  return v;
}

bool ReferenceDump::has(const std::string& name) const { return data_->find(name) != nullptr; }
std::vector<float> ReferenceDump::f32(const std::string& name) const { return tensor_to_f32(data_->get(name)); }
std::vector<float> ReferenceDump::optional_f32(const std::string& name) const {
  const json& arrays = manifest_["arrays"];
  return arrays.contains(name) && has(name) ? f32(name) : std::vector<float>{};
}
std::vector<int64_t> ReferenceDump::ints(const std::string& name) const { return tensor_to_i64(data_->get(name)); }
std::vector<int64_t> ReferenceDump::shape(const std::string& name) const { return data_->get(name).shape; }

}  // namespace memra
