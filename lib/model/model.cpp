// Model loading: the expected-tensor table, stored-name → canonical-name mapping, single or sharded
// safetensors (headers only: tensors stay in the mapped files), per-tensor checks (name, dtype,
// shape, quantisation scale, tid2eid range), lazy parallel hashing and the fingerprint.
//
// Fingerprint (XXH3-128, streaming; u64 = 8 bytes little-endian):
//   u64 len(geometry) ‖ geometry_json().dump() ‖ u64 tensor count ‖ for each tensor in expected order:
//   u64 len(name) ‖ canonical name ‖ u64 len(label) ‖ format label ‖ u64 ndim ‖ u64 dims… ‖ u64 hash.high ‖ u64
//   hash.low
// where the label is the dtype name for plain tensors (so their fingerprints are unchanged) and
// WeightTensor::format_label() for block formats, whose hash covers the weight bytes then the scale bytes.
#include "model/model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/shape_text.h"
#include "format/json_guard.h"
#include "model/tensor_names.h"

namespace memra {

namespace {

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

// A scale tensor's canonical name → the canonical name of the weight it scales ("" when not a scale).
std::string scaled_weight(const std::string& canon) {
  for (std::string_view suffix : {std::string_view(".weight_scale_inv"), std::string_view(".scale")})
    if (ends_with(canon, suffix) && canon.size() > suffix.size())
      return canon.substr(0, canon.size() - suffix.size()) + ".weight";
  return "";
}

#ifdef MADV_POPULATE_READ
constexpr int kMadvPopulateRead = MADV_POPULATE_READ;
#else
constexpr int kMadvPopulateRead = 22;  // Linux 5.14; older kernels return EINVAL, which is harmless
#endif

bool is_plain_float(DType d) { return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16 || d == DType::kF64; }
bool is_scale_dtype(DType d) { return d == DType::kF8E8M0 || d == DType::kU8; }
bool is_packed_fp4_dtype(DType d) { return d == DType::kI8 || d == DType::kU8; }

WeightFormat plain_format(DType d) {
  switch (d) {
    case DType::kF64:
      return WeightFormat::kF64;
    case DType::kBF16:
      return WeightFormat::kBF16;
    case DType::kF16:
      return WeightFormat::kF16;
    default:
      return WeightFormat::kF32;
  }
}

// A routed expert's weight: `…ffn.experts.<e>.w{1,2,3}.weight` (shared experts excluded).
bool is_routed_expert(const std::string& canon) {
  auto pos = canon.find(".ffn.experts.");
  return pos != std::string::npos && ends_with(canon, ".weight");
}

// The kind of a recognised-but-unused tensor (mtp.*): DSpark drafter parts by their module names.
std::string unused_kind(const std::string& canon) {
  for (const char* k : {"main_proj", "main_norm", "markov", "confidence", "conf_proj", "accept_rate"})
    if (canon.find(k) != std::string::npos) return "dspark";
  return "mtp";
}

// A shard name from the index: a plain file name inside the model folder.
bool safe_file_name(const std::string& f) {
  return !f.empty() && f.size() < 256 && f.find('/') == std::string::npos && f.find('\\') == std::string::npos &&
         f != "." && f != ".." && f.find('\0') == std::string::npos;
}

// [rows, cols] of a tensor viewed as a matrix: 1-D [n] → [1, n], N-D → [∏ shape[:-1], shape[-1]].
std::pair<int64_t, int64_t> as_matrix(const std::vector<int64_t>& shape) {
  if (shape.empty()) return {1, 1};
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return {rows, shape.back()};
}

}  // namespace

namespace {

std::string format_label_of(const WeightView& view, DType dtype) {
  switch (view.format) {
    case WeightFormat::kFp8Block:
      return "F8_E4M3*E8M0[" + std::to_string(view.block_rows) + "x" + std::to_string(view.block_cols) + "]";
    case WeightFormat::kFp4Block:
      return "F4_E2M1x2*E8M0[1x" + std::to_string(view.block_cols) + "]";
    default:
      return dtype_name(dtype);
  }
}

}  // namespace

std::string WeightTensor::format_label() const { return format_label_of(view, dtype); }
std::string UnusedTensor::format_label() const { return format_label_of(view, dtype); }

std::vector<TensorSpec> expected_tensors(const ModelConfig& c) {
  const int64_t V = c.vocab_size, D = c.hidden_size, n = c.hc_mult, H = c.num_attention_heads, d = c.head_dim;
  const int64_t ql = c.q_lora_rank, G = c.o_groups, R = c.o_lora_rank, E = c.n_routed_experts,
                I = c.moe_intermediate_size;
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

std::vector<std::string> model_input_files(const std::string& model_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  const fs::path dir(model_dir);
  std::error_code ec;
  for (const char* name : {"config.json", "model.safetensors", "model.safetensors.index.json", "tokenizer.json",
                           "tokenizer_config.json", "generation_config.json"})
    if (fs::exists(dir / name, ec)) out.push_back((dir / name).string());
  try {
    const fs::path index = dir / "model.safetensors.index.json";
    if (fs::exists(index, ec)) {
      nlohmann::json j = read_json_file(index.string(), 64u << 20);
      if (j.is_object() && j.contains("weight_map") && j["weight_map"].is_object()) {
        std::set<std::string> shards;
        for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it)
          if (it.value().is_string() && safe_file_name(it.value().get<std::string>())) shards.insert(it.value().get<std::string>());
        for (const auto& f : shards) out.push_back((dir / f).string());
      }
    }
  } catch (const Error&) {
    // A broken index fails the load itself, with its own message.
  }
  return out;
}

struct Model::Lazy {
  std::mutex hash_mutex;
  bool hashed = false;
  std::vector<Hash128> hashes;         // tensors_ order
  std::vector<Hash128> unused_hashes;  // unused_ order
  Hash128 fingerprint;
  std::mutex f32_mutex;
  std::unordered_map<size_t, std::vector<float>> f32;  // decoded copies, by tensor index
};

Model::Model() : lazy_(std::make_unique<Lazy>()) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load(const std::string& model_dir, const LoadProgress& progress) {
  namespace fs = std::filesystem;
  Model model;
  model.dir_ = model_dir;
  model.config_ = ModelConfig::load(model_dir);
  const ModelConfig& cfg = model.config_;
  const QuantizationConfig& quant = cfg.quantization;

  // Open the checkpoint files: a sharded index, or one model.safetensors. Only headers are read.
  auto& files = model.files_;
  auto& file_names = model.file_names_;
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
      if (!it.value().is_string())
        throw Error(ip + ": weight_map entry " + printable(it.key()) + " is not a file name");
      std::string f = it.value().get<std::string>();
      if (!safe_file_name(f))
        throw Error(ip + ": weight_map entry " + printable(it.key()) + " names '" + printable(f) +
                    "', which is not a plain file name in the model folder");
      by_file[f].insert(it.key());
    }
    if (by_file.empty()) throw Error(ip + ": weight_map is empty");
    std::vector<std::string> missing;
    for (const auto& [f, names] : by_file)  // every shard exists before any is read
      if (!fs::is_regular_file(dir / f, ec)) missing.push_back(f);
    if (!missing.empty())
      throw Error(
          ip + ": weight_map names " + printable(missing[0]) + ", which does not exist in " + model_dir +
              (missing.size() > 1 ? " (" + std::to_string(missing.size() - 1) + " more shards are missing)" : ""),
          "copy every shard the index lists into the model folder");
    size_t opened = 0;
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
          throw Error(ip + ": maps tensor " + printable(name) + " to " + printable(f) + ", which does not hold it",
                      "the shard was altered or replaced, or the index is stale");
      files.push_back(std::move(st));
      file_names.push_back(f);
      if (progress.on_shard) progress.on_shard(++opened, by_file.size());
    }
  } else {
    fs::path single = dir / "model.safetensors";
    if (!fs::is_regular_file(single, ec))
      throw Error("no model.safetensors or model.safetensors.index.json in " + model_dir,
                  "MODEL_DIR must hold the checkpoint's safetensors files");
    files.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(single.string())));
    file_names.push_back("model.safetensors");
    if (progress.on_shard) progress.on_shard(1, 1);
  }

  // Map every stored tensor to its canonical name; set scales and the mtp.* block aside.
  struct Found {
    const TensorView* view;
    size_t file;
  };
  std::unordered_map<std::string, Found> found, scales;  // scales: keyed by the weight they scale
  std::vector<Found> unused;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    for (const auto& t : files[fi]->tensors()) {
      std::string canon = canonical_name(t.name);
      if (starts_with(canon, "mtp.")) {
        unused.push_back({&t, fi});  // the MTP block / DSpark drafter: not part of the main model
        continue;
      }
      std::string scaled = scaled_weight(canon);
      auto& table = scaled.empty() ? found : scales;
      auto [it, inserted] = table.emplace(scaled.empty() ? canon : scaled, Found{&t, fi});
      if (!inserted)
        throw Error("tensors " + printable(it->second.view->name) + " and " + printable(t.name) + " both name " +
                    (scaled.empty() ? "canonical tensor " + printable(canon) : "the scale of " + printable(scaled)));
    }
  }

  const std::vector<TensorSpec> specs = expected_tensors(cfg);
  const std::string hint = "the checkpoint does not match its config.json";
  std::set<std::string> expected_names;
  for (const auto& s : specs) expected_names.insert(s.name);
  for (const auto& [canon, f] : found)
    if (!expected_names.count(canon))
      throw Error("tensor " + printable(f.view->name) + " is not predicted by config.json (extra tensor)", hint);

  // Attaches the scale of a block-format weight after checking its dtype and shape.
  auto attach_scale = [&](WeightTensor& w, const std::string& weight_name, const std::vector<int64_t>& want) {
    auto it = scales.find(weight_name);
    if (it == scales.end())
      throw Error("tensor " + w.stored_name + " is " + dtype_name(w.dtype) + " (" + weight_format_name(w.view.format) +
                      ") but has no scale tensor (" + weight_name.substr(0, weight_name.size() - 7) + ".scale)",
                  hint);
    const TensorView& s = *it->second.view;
    if (!is_scale_dtype(s.dtype))
      throw Error("scale tensor " + printable(s.name) + " has dtype " + dtype_name(s.dtype) +
                      ", expected F8_E8M0 (or U8 holding ue8m0 bytes)",
                  hint);
    if (s.shape != want)
      throw Error("scale tensor " + printable(s.name) + " has shape " + shape_text(s.shape) + ", the " +
                      std::to_string(w.view.block_rows) + "x" + std::to_string(w.view.block_cols) + " blocks of " +
                      printable(w.stored_name) + " " + shape_text(w.shape) + " need " + shape_text(want),
                  hint);
    w.scale_name = s.name;
    w.scale_file = file_names[it->second.file];
    w.scale_dtype = s.dtype;
    w.scale_shape = s.shape;
    w.scale_nbytes = s.nbytes;
    w.view.scale = s.data;
    w.view.scale_cols = want[1];
    scales.erase(it);
  };

  model.tensors_.reserve(specs.size());
  for (const auto& spec : specs) {
    auto it = found.find(spec.name);
    if (it == found.end())
      throw Error("tensor " + spec.name + " is missing (config predicts shape " + shape_text(spec.shape) + ")", hint);
    const TensorView& v = *it->second.view;
    WeightTensor w;
    w.name = spec.name;
    w.stored_name = v.name;
    w.file = file_names[it->second.file];
    w.dtype = v.dtype;
    w.shape = spec.shape;
    w.stored_shape = v.shape;
    w.role = spec.role;
    w.bytes = v.data;
    w.nbytes = v.nbytes;
    const bool expert = is_routed_expert(spec.name);
    const bool want_fp4 = expert && quant.expert_dtype == "fp4";
    if (spec.role == TensorRole::kIndex) {
      if (v.shape != spec.shape)
        throw Error(
            "tensor " + spec.name + " has shape " + shape_text(v.shape) + ", config predicts " + shape_text(spec.shape),
            hint);
      if (v.dtype != DType::kI64 && v.dtype != DType::kI32)
        throw Error("tensor " + spec.name + " has dtype " + dtype_name(v.dtype) + ", expected I64 or I32", hint);
      w.ids = tensor_to_i64(v);
      const int64_t E = cfg.n_routed_experts, k = spec.shape.size() == 2 ? spec.shape[1] : 1;
      for (size_t i = 0; i < w.ids.size(); ++i) {
        if (w.ids[i] < 0 || w.ids[i] >= E)
          throw Error("tensor " + spec.name + " has expert id " + std::to_string(w.ids[i]) + " at [" +
                          std::to_string(static_cast<int64_t>(i) / k) + ", " +
                          std::to_string(static_cast<int64_t>(i) % k) + "], outside [0, " + std::to_string(E) + ")",
                      hint);
      }
      // A row that names an expert twice routes differently in transformers (the expert counts
      // twice) and upstream (once): no single answer exists, so the table is refused.
      for (size_t row = 0; row + k <= w.ids.size(); row += static_cast<size_t>(k))
        for (int64_t a = 0; a < k; ++a)
          for (int64_t b = a + 1; b < k; ++b)
            if (w.ids[row + a] == w.ids[row + b])
              throw Error("tensor " + spec.name + " row " + std::to_string(row / k) + " names expert " +
                              std::to_string(w.ids[row + a]) + " twice (at " + std::to_string(a) + " and " +
                              std::to_string(b) + "); transformers and the upstream code route such a row differently",
                          "regenerate tid2eid with distinct experts per row");
    } else if (want_fp4) {
      // Packed FP4: [N, K/2] bytes, scale [N, ceil(K/32)].
      if (!is_packed_fp4_dtype(v.dtype))
        throw Error(
            "tensor " + spec.name + " has dtype " + dtype_name(v.dtype) +
                ", but config.json sets expert_dtype fp4: routed experts must be packed FP4 (I8 or U8 [N, K/2])",
            hint);
      const int64_t N = spec.shape[0], K = spec.shape[1];
      if (K % 2 != 0)
        throw Error("tensor " + spec.name + " has " + std::to_string(K) + " columns, packed FP4 needs an even count",
                    hint);
      if (v.shape != std::vector<int64_t>{N, K / 2})
        throw Error("tensor " + spec.name + " has shape " + shape_text(v.shape) + ", packed FP4 of config shape " +
                        shape_text(spec.shape) + " is stored " + shape_text({N, K / 2}),
                    hint);
      w.view = WeightView{WeightFormat::kFp4Block, N, K, v.data, nullptr, 1, kFp4BlockCols, 0};
      attach_scale(w, spec.name, block_scale_shape(N, K, 1, kFp4BlockCols));
    } else if (v.dtype == DType::kF8E4M3) {
      if (!quant.fp8)
        throw Error("tensor " + spec.name + " is F8_E4M3 but config.json has no quantization_config",
                    "an FP8 checkpoint's config.json carries quantization_config {quant_method: fp8, ...}");
      if (spec.shape.size() != 2)
        throw Error("tensor " + spec.name + " is F8_E4M3 but is not a matrix (shape " + shape_text(spec.shape) + ")",
                    hint);
      if (v.shape != spec.shape)
        throw Error(
            "tensor " + spec.name + " has shape " + shape_text(v.shape) + ", config predicts " + shape_text(spec.shape),
            hint);
      const int64_t N = spec.shape[0], K = spec.shape[1];
      w.view = WeightView{WeightFormat::kFp8Block, N, K, v.data, nullptr, quant.block_rows, quant.block_cols, 0};
      attach_scale(w, spec.name, block_scale_shape(N, K, quant.block_rows, quant.block_cols));
    } else {
      if (!is_plain_float(v.dtype))
        throw Error("tensor " + spec.name + " has dtype " + dtype_name(v.dtype) + ", expected F32, BF16, F16" +
                        (spec.shape.size() == 2 ? " or F8_E4M3 (with a .scale)" : ""),
                    hint);
      if (v.shape != spec.shape)
        throw Error(
            "tensor " + spec.name + " has shape " + shape_text(v.shape) + ", config predicts " + shape_text(spec.shape),
            hint);
      if (scales.count(spec.name))
        throw Error("scale tensor " + printable(scales.at(spec.name).view->name) + " belongs to " + spec.name +
                        ", which is stored " + dtype_name(v.dtype) + " (not quantised)",
                    hint);
      auto [rows, cols] = as_matrix(v.shape);
      w.view = WeightView{plain_format(v.dtype), rows, cols, v.data, nullptr, 1, 1, 0};
    }
    model.index_.emplace(w.name, model.tensors_.size());
    model.tensors_.push_back(std::move(w));
  }

  // The MTP block / DSpark tensors: recognised and listed; their quantised weights are still paired
  // with scales of the right shape, so a corrupted one is refused like a main-model tensor, and
  // every float weight gets its decoding view (a checkpoint's own drafter reads them).
  std::unordered_map<std::string, WeightView> unused_views;  // by canonical name
  std::unordered_map<std::string, size_t> unused_scale_bytes;
  for (const Found& f : unused) {
    const TensorView& v = *f.view;
    const std::string canon = canonical_name(v.name);
    const std::string scaled = scaled_weight(canon);
    if (!scaled.empty()) continue;  // checked with its weight below
    if (v.dtype == DType::kF8E4M3 ||
        (is_packed_fp4_dtype(v.dtype) && is_routed_expert(canon) && quant.expert_dtype == "fp4")) {
      const TensorView* scale = nullptr;
      for (const Found& g : unused)
        if (scaled_weight(canonical_name(g.view->name)) == canon) scale = g.view;
      if (v.shape.size() != 2)
        throw Error("tensor " + printable(v.name) + " is " + dtype_name(v.dtype) + " but is not a matrix", hint);
      const bool fp4 = v.dtype != DType::kF8E4M3;
      const int64_t N = v.shape[0], K = fp4 ? 2 * v.shape[1] : v.shape[1];
      const auto want =
          fp4 ? block_scale_shape(N, K, 1, kFp4BlockCols) : block_scale_shape(N, K, quant.block_rows, quant.block_cols);
      if (!scale) throw Error("tensor " + printable(v.name) + " is quantised but has no scale tensor", hint);
      if (!is_scale_dtype(scale->dtype) || scale->shape != want)
        throw Error("scale tensor " + printable(scale->name) + " is " + dtype_name(scale->dtype) + " " +
                        shape_text(scale->shape) + ", expected F8_E8M0 " + shape_text(want),
                    hint);
      unused_views[canon] = fp4 ? WeightView{WeightFormat::kFp4Block, N, K, v.data, scale->data, 1, kFp4BlockCols, want[1]}
                                : WeightView{WeightFormat::kFp8Block, N, K, v.data, scale->data, quant.block_rows,
                                             quant.block_cols, want[1]};
      unused_scale_bytes[canon] = scale->nbytes;
    } else if (is_plain_float(v.dtype)) {
      auto [rows, cols] = as_matrix(v.shape);
      unused_views[canon] = WeightView{plain_format(v.dtype), rows, cols, v.data, nullptr, 1, 1, 0};
    }
  }
  for (const Found& f : unused) {
    const std::string canon = canonical_name(f.view->name);
    const std::string scaled = scaled_weight(canon);
    if (!scaled.empty()) {
      bool paired = false;
      for (const Found& g : unused) paired = paired || canonical_name(g.view->name) == scaled;
      if (!paired) throw Error("scale tensor " + printable(f.view->name) + " has no weight " + scaled, hint);
    }
    UnusedTensor u{f.view->name, canon, file_names[f.file], f.view->dtype, f.view->shape, unused_kind(canon),
                   f.view->data, f.view->nbytes};
    if (auto it = unused_views.find(canon); it != unused_views.end()) u.view = it->second;
    if (auto it = unused_scale_bytes.find(canon); it != unused_scale_bytes.end()) u.scale_nbytes = it->second;
    model.unused_.push_back(std::move(u));
  }
  if (!scales.empty()) {
    const auto& [weight, f] = *scales.begin();
    throw Error("scale tensor " + printable(f.view->name) + " has no quantised weight " + weight +
                    (found.count(weight) ? "" : " (extra tensor)"),
                hint);
  }
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
  model.lazy_->fingerprint = h.digest();
  model.lazy_->hashed = true;  // no tensors to hash
  return model;
}

const WeightTensor& Model::tensor(const std::string& canonical) const {
  auto it = index_.find(canonical);
  if (it == index_.end()) throw Error("model has no tensor " + canonical);
  return tensors_[it->second];
}

const float* Model::f32(const std::string& canonical) const {
  auto it = index_.find(canonical);
  if (it == index_.end()) throw Error("model has no tensor " + canonical);
  const WeightTensor& w = tensors_[it->second];
  if (w.role != TensorRole::kFloat) throw Error("tensor " + canonical + " holds integer ids, not floats");
  if (w.view.format == WeightFormat::kF32 && reinterpret_cast<uintptr_t>(w.bytes) % alignof(float) == 0)
    return reinterpret_cast<const float*>(w.bytes);  // the mapped bytes themselves (little-endian host)
  std::lock_guard<std::mutex> lock(lazy_->f32_mutex);
  auto [cached, inserted] = lazy_->f32.try_emplace(it->second);
  if (inserted) cached->second = w.view.decode_all();
  return cached->second.data();
}

size_t Model::f32_cached_bytes() const {
  std::lock_guard<std::mutex> lock(lazy_->f32_mutex);
  size_t n = 0;
  for (const auto& [index, copy] : lazy_->f32) n += copy.size() * sizeof(float);
  return n;
}

uint64_t Model::stored_bytes() const {
  uint64_t n = 0;
  for (const auto& w : tensors_) n += w.nbytes + w.scale_nbytes;
  for (const auto& u : unused_) n += u.nbytes;
  return n;
}

const Hash128& Model::unused_hash(size_t index) const {
  hash_all();
  return lazy_->unused_hashes.at(index);
}

HashStats Model::hash_all(const HashOptions& options) const {
  std::lock_guard<std::mutex> lock(lazy_->hash_mutex);
  HashStats stats;
  if (lazy_->hashed) return stats;
  const auto t0 = std::chrono::steady_clock::now();
  const size_t n = tensors_.size(), nu = unused_.size();
  // Work items: the main tensors (weight bytes, then the scale's), then the unused mtp.* tensors.
  struct Item {
    const uint8_t* bytes;
    size_t nbytes;
    const uint8_t* scale;
    size_t scale_nbytes;
    const std::string* file;
  };
  std::vector<Item> items;
  items.reserve(n + nu);
  for (const auto& w : tensors_) items.push_back({w.bytes, w.nbytes, w.view.scale, w.scale_nbytes, &w.file});
  for (const auto& u : unused_) items.push_back({u.bytes, u.nbytes, nullptr, 0, &u.file});
  // One queue per shard, items in file order. A thread takes a whole shard and streams through
  // it; once every shard is taken, idle threads help with the shards still in progress. So tens
  // of shards are read side by side, each sequentially.
  struct Shard {
    std::vector<size_t> items;
    std::atomic<size_t> next{0};
  };
  std::vector<Shard> shards(file_names_.size());
  std::unordered_map<std::string, size_t> shard_of;
  for (size_t f = 0; f < file_names_.size(); ++f) shard_of[file_names_[f]] = f;
  for (size_t i = 0; i < items.size(); ++i) shards[shard_of.at(*items[i].file)].items.push_back(i);
  for (auto& sh : shards)
    std::sort(sh.items.begin(), sh.items.end(), [&](size_t a, size_t b) { return items[a].bytes < items[b].bytes; });
  const uint64_t total = stored_bytes();
  int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(items.size(), 1)));
  std::vector<Hash128> hashes(items.size());
  std::atomic<size_t> next_shard{0};
  std::atomic<uint64_t> done{0};
  std::atomic<int> running{threads};
  std::mutex m;
  std::condition_variable cv;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  constexpr size_t kChunk = 8u << 20;
  // Streams one byte range into the hasher: the next chunk is read ahead (WILLNEED) while this one
  // is mapped in one call (POPULATE_READ, Linux 5.14+; ignored where unknown) instead of one page
  // fault per 4 KiB.
  auto feed = [&](Hasher& h, const uint8_t* p, size_t len) {
    auto advise = [&](const uint8_t* q, size_t n, int advice) {
      uintptr_t a = reinterpret_cast<uintptr_t>(q) & ~(page - 1);
      ::madvise(reinterpret_cast<void*>(a), n + (reinterpret_cast<uintptr_t>(q) - a), advice);
    };
    for (size_t off = 0; off < len; off += kChunk) {
      const size_t c = std::min(kChunk, len - off);
      if (off + c < len) advise(p + off + c, std::min(kChunk, len - off - c), MADV_WILLNEED);
      advise(p + off, c, kMadvPopulateRead);
      h.update(p + off, c);
      done.fetch_add(c, std::memory_order_relaxed);
    }
  };
  auto drain = [&](Shard& sh) {
    for (size_t k; (k = sh.next.fetch_add(1)) < sh.items.size();) {
      const Item& it = items[sh.items[k]];
      Hasher h;
      feed(h, it.bytes, it.nbytes);
      if (it.scale) feed(h, it.scale, it.scale_nbytes);
      hashes[sh.items[k]] = h.digest();
    }
  };
  auto worker = [&] {
    for (size_t f; (f = next_shard.fetch_add(1)) < shards.size();) drain(shards[f]);
    for (auto& sh : shards) drain(sh);  // help with what is left
    if (running.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> g(m);
      cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  {
    std::unique_lock<std::mutex> g(m);
    while (running.load() > 0) {
      cv.wait_for(g, std::chrono::milliseconds(100));
      if (options.on_bytes) options.on_bytes(done.load(), total);
    }
  }
  for (auto& t : pool) t.join();
  if (options.on_bytes) options.on_bytes(total, total);

  Hasher h;
  const std::string geometry = config_.geometry_json().dump();
  h.update_u64(geometry.size());
  h.update(geometry);
  h.update_u64(n);
  for (size_t i = 0; i < n; ++i) {
    const WeightTensor& w = tensors_[i];
    const std::string label = w.format_label();
    h.update_u64(w.name.size());
    h.update(w.name);
    h.update_u64(label.size());
    h.update(label);
    h.update_u64(w.shape.size());
    for (int64_t dim : w.shape) h.update_u64(static_cast<uint64_t>(dim));
    h.update_u64(hashes[i].high);
    h.update_u64(hashes[i].low);
  }
  lazy_->unused_hashes.assign(hashes.begin() + static_cast<std::ptrdiff_t>(n), hashes.end());
  hashes.resize(n);
  lazy_->hashes = std::move(hashes);
  lazy_->fingerprint = h.digest();
  lazy_->hashed = true;
  stats.bytes = total;
  stats.threads = threads;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return stats;
}

const Hash128& Model::hash(size_t index) const {
  hash_all();
  return lazy_->hashes.at(index);
}

const Hash128& Model::hash(const std::string& canonical) const {
  auto it = index_.find(canonical);
  if (it == index_.end()) throw Error("model has no tensor " + canonical);
  return hash(it->second);
}

const Hash128& Model::fingerprint() const {
  hash_all();
  return lazy_->fingerprint;
}

std::string Model::weight_precision() const {
  std::set<WeightFormat> kinds;
  for (const auto& w : tensors_)
    if (w.role == TensorRole::kFloat) kinds.insert(w.view.format);
  if (kinds.size() != 1) return kinds.empty() ? "none" : "mixed";
  switch (*kinds.begin()) {
    case WeightFormat::kFp8Block:
      return "fp8";
    case WeightFormat::kFp4Block:
      return "fp4";
    default:
      return weight_format_name(*kinds.begin());
  }
}

}  // namespace memra
