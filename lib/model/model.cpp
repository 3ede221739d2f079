// Model loading: the expected-tensor table, stored-name → canonical-name mapping, single or sharded
// safetensors, per-tensor checks (name, dtype role, shape, tid2eid range), hashing and the fingerprint.
//
// Fingerprint (XXH3-128, streaming; u64 = 8 bytes little-endian):
//   u64 len(geometry) ‖ geometry_json().dump() ‖ u64 tensor count ‖ for each tensor in expected order:
//   u64 len(name) ‖ canonical name ‖ u64 len(dtype) ‖ dtype name ‖ u64 ndim ‖ u64 dims… ‖ u64 hash.high ‖ u64 hash.low
#include "model/model.h"

#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "core/error.h"
#include "format/json_guard.h"
#include "model/tensor_names.h"

namespace memra {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Stored spelling → canonical name (upstream, no `model.` prefix).
std::string canonical_name(std::string_view stored) {
  std::string n(stored);
  if (starts_with(n, "model.")) n = n.substr(6);
  if (n == "embed_tokens.weight") return "embed.weight";
  if (n == "lm_head.weight") return "head.weight";
  if (n == "hc_head.hc_fn") return "hc_head_fn";
  if (n == "hc_head.hc_base") return "hc_head_base";
  if (n == "hc_head.hc_scale") return "hc_head_scale";
  // transformers 5.17 saves the main attention's kv_norm as `layers.N.attn.norm.weight`.
  if (starts_with(n, "layers.") && ends_with(n, ".attn.norm.weight")) {
    std::string mid = n.substr(7, n.size() - 7 - 17);
    if (!mid.empty() && mid.find_first_not_of("0123456789") == std::string::npos)
      return "layers." + mid + ".attn.kv_norm.weight";
  }
  return n;
}

bool is_float_dtype(DType d) { return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16 || d == DType::kF64; }

// A shard name from the index: a plain file name inside the model folder.
bool safe_file_name(const std::string& f) {
  return !f.empty() && f.size() < 256 && f.find('/') == std::string::npos && f.find('\\') == std::string::npos &&
         f != "." && f != ".." && f.find('\0') == std::string::npos;
}

}  // namespace

std::vector<TensorSpec> expected_tensors(const ModelConfig& c) {
  const int64_t V = c.vocab_size, D = c.hidden_size, n = c.hc_mult, H = c.num_attention_heads, d = c.head_dim;
  const int64_t ql = c.q_lora_rank, G = c.o_groups, R = c.o_lora_rank, E = c.n_routed_experts, I = c.moe_intermediate_size;
  const int64_t Hi = c.index_n_heads, di = c.index_head_dim;
  const int64_t mix = (2 + n) * n;
  std::vector<TensorSpec> t;
  int64_t l = -1;  // the layer the per-layer ids below refer to
  auto add = [&](TensorId id, std::vector<int64_t> shape, TensorRole role = TensorRole::kFloat) {
    t.push_back({tensor_name(id, l), std::move(shape), role});
  };
  using enum TensorId;
  add(kEmbed, {V, D});
  for (l = 0; l < c.num_hidden_layers; ++l) {
    const LayerKind kind = c.layer_types[static_cast<size_t>(l)];
    add(kHcAttnFn, {mix, n * D});
    add(kHcAttnBase, {mix});
    add(kHcAttnScale, {3});
    add(kAttnNorm, {D});
    add(kWqA, {ql, D});
    add(kQNorm, {ql});
    add(kWqB, {H * d, ql});
    add(kWkv, {d, D});
    add(kKvNorm, {d});
    add(kAttnSink, {H});
    add(kWoA, {G * R, H * d / G});
    add(kWoB, {D, G * R});
    if (kind != LayerKind::kSliding) {
      const int64_t cc = kind == LayerKind::kCSA ? 2 : 1;
      const int64_t m = c.compress_ratio(l);
      add(kCmpWkv, {cc * d, D});
      add(kCmpWgate, {cc * d, D});
      add(kCmpApe, {m, cc * d});
      add(kCmpNorm, {d});
    }
    if (kind == LayerKind::kCSA) {
      add(kIdxWqB, {Hi * di, ql});
      add(kIdxWeights, {Hi, D});
      add(kIdxCmpWkv, {2 * di, D});
      add(kIdxCmpWgate, {2 * di, D});
      add(kIdxCmpApe, {c.csa_rate, 2 * di});
      add(kIdxCmpNorm, {di});
    }
    add(kHcFfnFn, {mix, n * D});
    add(kHcFfnBase, {mix});
    add(kHcFfnScale, {3});
    add(kFfnNorm, {D});
    add(kGate, {E, D});
    if (c.mlp_layer_types[static_cast<size_t>(l)] == MlpKind::kHash)
      add(kTid2eid, {V, c.num_experts_per_tok}, TensorRole::kIndex);
    else
      add(kGateBias, {E});
    for (int64_t e = 0; e < E; ++e) {
      t.push_back({tensor_name(kExpertW1, l, e), {I, D}, TensorRole::kFloat});
      t.push_back({tensor_name(kExpertW2, l, e), {D, I}, TensorRole::kFloat});
      t.push_back({tensor_name(kExpertW3, l, e), {I, D}, TensorRole::kFloat});
    }
    if (c.n_shared_experts > 0) {
      add(kSharedW1, {I, D});
      add(kSharedW2, {D, I});
      add(kSharedW3, {I, D});
    }
  }
  l = -1;
  add(kFinalNorm, {D});
  add(kHcHeadFn, {n, n * D});
  add(kHcHeadBase, {n});
  add(kHcHeadScale, {1});
  add(kHead, {V, D});
  return t;
}

Model Model::load(const std::string& model_dir, const LoadProgress& progress) {
  namespace fs = std::filesystem;
  Model model;
  model.dir_ = model_dir;
  model.config_ = ModelConfig::load(model_dir);
  const ModelConfig& cfg = model.config_;

  // Open the checkpoint files: a sharded index, or one model.safetensors.
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::vector<std::string> file_names;
  const fs::path dir(model_dir);
  const fs::path index_path = dir / "model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(index_path, ec)) {
    const std::string ip = index_path.string();
    nlohmann::json index = read_json_file(ip, 64u << 20);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      throw Error(ip + ": has no weight_map object", "the index must be {\"weight_map\": {tensor: file}}");
    std::map<std::string, std::set<std::string>> by_file;  // file → names mapped to it
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it.value().is_string()) throw Error(ip + ": weight_map entry " + printable(it.key()) + " is not a file name");
      std::string f = it.value().get<std::string>();
      if (!safe_file_name(f))
        throw Error(ip + ": weight_map entry " + printable(it.key()) + " names '" + printable(f) +
                    "', which is not a plain file name in the model folder");
      by_file[f].insert(it.key());
    }
    if (by_file.empty()) throw Error(ip + ": weight_map is empty");
    for (const auto& [f, names] : by_file)  // every shard exists before any is read
      if (!fs::is_regular_file(dir / f, ec))
        throw Error(ip + ": weight_map names " + printable(f) + ", which does not exist in " + model_dir,
                    "copy every shard the index lists into the model folder");
    for (const auto& [f, names] : by_file) {
      fs::path fp = dir / f;
      auto st = std::make_unique<SafetensorsFile>(SafetensorsFile::open(fp.string()));
      std::set<std::string> present;
      for (const auto& t : st->tensors()) {
        present.insert(t.name);
        if (!names.count(t.name))
          throw Error(fp.string() + ": holds tensor " + printable(t.name) + ", which the index does not map to it");
      }
      for (const auto& name : names)
        if (!present.count(name))
          throw Error(ip + ": maps tensor " + printable(name) + " to " + printable(f) + ", which does not hold it");
      files.push_back(std::move(st));
      file_names.push_back(f);
    }
  } else {
    fs::path single = dir / "model.safetensors";
    if (!fs::is_regular_file(single, ec))
      throw Error("no model.safetensors or model.safetensors.index.json in " + model_dir,
                  "MODEL_DIR must hold the checkpoint's safetensors files");
    files.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(single.string())));
    file_names.push_back("model.safetensors");
  }

  // Map every stored tensor to its canonical name.
  struct Found {
    const TensorView* view;
    size_t file;
  };
  std::unordered_map<std::string, Found> found;
  std::vector<std::string> ignored;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    for (const auto& t : files[fi]->tensors()) {
      std::string canon = canonical_name(t.name);
      if (cfg.num_nextn_predict_layers > 0 && starts_with(canon, "mtp.")) {
        ignored.push_back(t.name);  // MTP blocks are not part of the main model
        continue;
      }
      auto [it, inserted] = found.emplace(canon, Found{&t, fi});
      if (!inserted)
        throw Error("tensors " + printable(it->second.view->name) + " and " + printable(t.name) +
                    " both name canonical tensor " + printable(canon));
    }
  }

  const std::vector<TensorSpec> specs = expected_tensors(cfg);
  const std::string hint = "the checkpoint does not match its config.json";
  std::set<std::string> expected_names;
  for (const auto& s : specs) expected_names.insert(s.name);
  for (const auto& [canon, f] : found)
    if (!expected_names.count(canon))
      throw Error("tensor " + printable(f.view->name) + " is not predicted by config.json (extra tensor)", hint);

  model.tensors_.reserve(specs.size());
  size_t done = 0;
  for (const auto& spec : specs) {
    auto it = found.find(spec.name);
    if (it == found.end())
      throw Error("tensor " + spec.name + " is missing (config predicts shape " + shape_text(spec.shape) + ")", hint);
    const TensorView& v = *it->second.view;
    if (v.shape != spec.shape)
      throw Error("tensor " + spec.name + " has shape " + shape_text(v.shape) + ", config predicts " + shape_text(spec.shape), hint);
    WeightTensor w;
    w.name = spec.name;
    w.stored_name = v.name;
    w.file = file_names[it->second.file];
    w.dtype = v.dtype;
    w.shape = v.shape;
    if (spec.role == TensorRole::kIndex) {
      if (v.dtype != DType::kI64 && v.dtype != DType::kI32)
        throw Error("tensor " + spec.name + " has dtype " + dtype_name(v.dtype) + ", expected I64 or I32", hint);
      w.ids = tensor_to_i64(v);
      const int64_t E = cfg.n_routed_experts, k = spec.shape.size() == 2 ? spec.shape[1] : 1;
      for (size_t i = 0; i < w.ids.size(); ++i) {
        if (w.ids[i] < 0 || w.ids[i] >= E)
          throw Error("tensor " + spec.name + " has expert id " + std::to_string(w.ids[i]) + " at [" +
                          std::to_string(static_cast<int64_t>(i) / k) + ", " + std::to_string(static_cast<int64_t>(i) % k) +
                          "], outside [0, " + std::to_string(E) + ")",
                      hint);
      }
    } else {
      if (!is_float_dtype(v.dtype))
        throw Error("tensor " + spec.name + " has dtype " + dtype_name(v.dtype) + ", expected F32, BF16 or F16", hint);
      w.f32 = tensor_to_f32(v);
    }
    w.hash = xxh3_128(v.data, v.nbytes);
    model.index_.emplace(w.name, model.tensors_.size());
    model.tensors_.push_back(std::move(w));
    ++done;
    if (progress.on_tensor) progress.on_tensor(done, specs.size());
  }

  Hasher h;
  const std::string geometry = cfg.geometry_json().dump();
  h.update_u64(geometry.size());
  h.update(geometry);
  h.update_u64(model.tensors_.size());
  for (const auto& w : model.tensors_) {
    const std::string dt = dtype_name(w.dtype);
    h.update_u64(w.name.size());
    h.update(w.name);
    h.update_u64(dt.size());
    h.update(dt);
    h.update_u64(w.shape.size());
    for (int64_t dim : w.shape) h.update_u64(static_cast<uint64_t>(dim));
    h.update_u64(w.hash.high);
    h.update_u64(w.hash.low);
  }
  model.fingerprint_ = h.digest();
  return model;
}

Model Model::synthetic(const ModelConfig& config, uint64_t seed) {
  Model model;
  model.config_ = config;
  model.dir_ = "(synthetic, seed " + std::to_string(seed) + ")";
  Hasher h;
  const std::string geometry = config.geometry_json().dump();
  h.update_u64(geometry.size());
  h.update(geometry);
  h.update("synthetic");
  h.update_u64(seed);
  model.fingerprint_ = h.digest();
  return model;
}

const WeightTensor& Model::tensor(const std::string& canonical) const {
  auto it = index_.find(canonical);
  if (it == index_.end()) throw Error("model has no tensor " + canonical);
  return tensors_[it->second];
}

std::string Model::weight_precision() const {
  std::set<DType> kinds;
  for (const auto& w : tensors_)
    if (is_float_dtype(w.dtype)) kinds.insert(w.dtype);
  if (kinds.size() != 1) return kinds.empty() ? "none" : "mixed";
  switch (*kinds.begin()) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
    case DType::kF64: return "f64";
    default: return "mixed";
  }
}

}  // namespace memra
