// Reference-dump reading and manifest-first validation.
#include "parity/dump.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "core/error.h"
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

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

}  // namespace

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

ReferenceDump ReferenceDump::open(const std::string& dir) {
  ReferenceDump d;
  d.dir_ = dir;
  const std::string mpath = (std::filesystem::path(dir) / "manifest.json").string();
  if (!std::filesystem::is_directory(dir)) throw Error("dump folder " + dir + " does not exist", "give the folder that holds manifest.json");
  if (!std::filesystem::exists(mpath))
    throw Error(dir + " has no manifest.json", "regenerate the dump with tools/oracle/dump_reference.py");
  d.manifest_ = read_json_file(mpath, 16u << 20);
  const json& m = d.manifest_;
  if (!m.is_object()) throw Error(mpath + " is not a JSON object");
  if (m.value("format", "") != "memra.dump")
    throw Error(mpath + ": format is not memra.dump", "regenerate the dump with tools/oracle/dump_reference.py");
  const std::string version = m.value("format_version", "");
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
  const std::string data_file = m.value("data_file", "");
  if (data_file.empty() || data_file.find('/') != std::string::npos || data_file.find("..") != std::string::npos)
    throw Error(mpath + ": 'data_file' must name a file inside the dump folder");
  d.data_ = std::make_shared<SafetensorsFile>(SafetensorsFile::open((std::filesystem::path(dir) / data_file).string()));
  if (!m.contains("arrays") || !m["arrays"].is_object()) throw Error(mpath + ": 'arrays' must be an object");
  if (!m.contains("geometry") || !m["geometry"].is_object()) throw Error(mpath + ": 'geometry' must be an object");
  return d;
}

std::string ReferenceDump::compute_dtype() const {
  if (manifest_.contains("producer") && manifest_["producer"].is_object())
    return manifest_["producer"].value("compute_dtype", "unknown");
  return "unknown";
}

DumpValidation ReferenceDump::validate(const ModelConfig& config) const {
  DumpValidation v;
  v.regenerate = manifest_.value("regenerate", "");
  if (v.regenerate.empty()) v.regenerate = "tools/oracle/dump_reference.py MODEL_DIR --out " + dir_;

  // 1. Geometry, field by field: the config is the authority.
  compare_geometry(config.geometry_json(), manifest_["geometry"], kOptionalFields, v);
  if (!v.reasons.empty()) {
    v.refused = true;
    return v;  // no array is looked at under a disagreeing geometry
  }

  // 2. Arrays: manifest entry, file entry and config prediction must all agree; bytes must hash.
  const auto predicted = predicted_dump_shapes(config, tokens_, incremental_prefix_);
  const json& arrays = manifest_["arrays"];
  const std::string data_file = manifest_.value("data_file", "");
  for (const auto& [name, shape] : predicted) {
    const DType dtype = name == "tokens" || name.ends_with(".experts") || name.ends_with(".selected") ? DType::kI32 : DType::kF32;
    check_dump_array(name, arrays.contains(name) ? &arrays[name] : nullptr, data_->find(name), shape, dtype,
                     name == "tokens" || name == "logits", data_file, v);
  }
  for (auto it = arrays.begin(); it != arrays.end(); ++it)
    if (!predicted.count(it.key())) v.arrays.push_back({printable(it.key()), "unexpected", "not predicted by the config; not compared"});
  v.refused = !v.reasons.empty();
  return v;
}

bool ReferenceDump::has(const std::string& name) const { return data_->find(name) != nullptr; }
std::vector<float> ReferenceDump::f32(const std::string& name) const { return tensor_to_f32(data_->get(name)); }
std::vector<int64_t> ReferenceDump::ints(const std::string& name) const { return tensor_to_i64(data_->get(name)); }
std::vector<int64_t> ReferenceDump::shape(const std::string& name) const { return data_->get(name).shape; }

}  // namespace memra
