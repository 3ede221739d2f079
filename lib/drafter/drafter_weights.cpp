// Drafter loading: the expected-tensor table, one safetensors file, per-tensor checks and hashing.
// Fingerprint (XXH3-128, streaming; u64 = 8 bytes little-endian), as the trunk's:
//   u64 len(geometry) ‖ geometry_json().dump() ‖ u64 tensor count ‖ for each tensor in table order:
//   u64 len(name) ‖ name ‖ u64 len(dtype) ‖ dtype name ‖ u64 ndim ‖ u64 dims… ‖ u64 hash.high ‖ u64 hash.low
#include "drafter/drafter_weights.h"

#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/shape_text.h"
#include "drafter/released_drafter.h"
#include "format/json_guard.h"
#include "model/model.h"

namespace memra {

std::string drafter_head_prefix(const DrafterConfig& c) {
  return c.family == DrafterFamily::kDspark ? "mtp." + std::to_string(c.num_layers - 1) + "." : "";
}

std::vector<DrafterTensorSpec> expected_drafter_tensors(const DrafterConfig& c, bool with_bias) {
  const int64_t D = c.hidden_size, V = c.vocab_size, H = c.num_attention_heads, hd = c.head_dim;
  std::vector<DrafterTensorSpec> t;
  auto add = [&t](std::string name, std::vector<int64_t> shape) { t.push_back({std::move(name), std::move(shape)}); };
  if (c.family == DrafterFamily::kDspark) {
    const int64_t n = c.hc_mult, mix = (2 + n) * n, ql = c.q_lora_rank, G = c.o_groups, R = c.o_lora_rank;
    const int64_t E = c.n_routed_experts, I = c.moe_intermediate_size;
    add("mtp.0.main_proj.weight", {D, c.n_taps() * D});
    add("mtp.0.main_norm.weight", {D});
    for (int64_t s = 0; s < c.num_layers; ++s) {
      const std::string p = "mtp." + std::to_string(s) + ".";
      for (const char* site : {"attn", "ffn"}) {
        add(p + "hc_" + site + "_fn", {mix, n * D});
        add(p + "hc_" + site + "_base", {mix});
        add(p + "hc_" + site + "_scale", {3});
      }
      add(p + "attn_norm.weight", {D});
      add(p + "ffn_norm.weight", {D});
      add(p + "attn.wq_a.weight", {ql, D});
      add(p + "attn.q_norm.weight", {ql});
      add(p + "attn.wq_b.weight", {H * hd, ql});
      add(p + "attn.wkv.weight", {hd, D});
      add(p + "attn.kv_norm.weight", {hd});
      add(p + "attn.wo_a.weight", {G * R, H * hd / G});
      add(p + "attn.wo_b.weight", {D, G * R});
      add(p + "attn.attn_sink", {H});
      add(p + "ffn.gate.weight", {E, D});
      add(p + "ffn.gate.bias", {E});
      for (int64_t e = 0; e < E; ++e) {
        const std::string q = p + "ffn.experts." + std::to_string(e) + ".";
        add(q + "w1.weight", {I, D});
        add(q + "w2.weight", {D, I});
        add(q + "w3.weight", {I, D});
      }
      add(p + "ffn.shared_experts.w1.weight", {I, D});
      add(p + "ffn.shared_experts.w2.weight", {D, I});
      add(p + "ffn.shared_experts.w3.weight", {I, D});
    }
    const std::string last = drafter_head_prefix(c);
    add(last + "norm.weight", {D});
    add(last + "hc_head_fn", {n, n * D});
    add(last + "hc_head_base", {n});
    add(last + "hc_head_scale", {1});
  } else {
    const int64_t KVH = c.num_key_value_heads, I = c.intermediate_size;
    add("fc.weight", {D, c.n_taps() * D});
    add("hidden_norm.weight", {D});
    for (int64_t l = 0; l < c.num_layers; ++l) {
      const std::string p = "layers." + std::to_string(l) + ".";
      add(p + "input_layernorm.weight", {D});
      add(p + "post_attention_layernorm.weight", {D});
      add(p + "self_attn.q_proj.weight", {H * hd, D});
      add(p + "self_attn.k_proj.weight", {KVH * hd, D});
      add(p + "self_attn.v_proj.weight", {KVH * hd, D});
      add(p + "self_attn.o_proj.weight", {D, H * hd});
      add(p + "self_attn.q_norm.weight", {hd});
      add(p + "self_attn.k_norm.weight", {hd});
      add(p + "mlp.gate_proj.weight", {I, D});
      add(p + "mlp.up_proj.weight", {I, D});
      add(p + "mlp.down_proj.weight", {D, I});
    }
    add("norm.weight", {D});
  }
  const std::string hp = drafter_head_prefix(c);
  if (c.has_markov()) {
    add(hp + "markov_head.markov_w1.weight", {V, c.markov_rank});
    add(hp + "markov_head.markov_w2.weight", {V, c.markov_rank});
  }
  if (c.confidence) {
    add(hp + "confidence_head.proj.weight", {1, c.confidence_in()});
    if (with_bias) add(hp + "confidence_head.proj.bias", {1});
  }
  return t;
}

DrafterWeights DrafterWeights::load(const std::string& drafter_dir, const Model* trunk) {
  namespace fs = std::filesystem;
  if (is_trunk_folder(drafter_dir)) {
    std::error_code ec;
    if (trunk && fs::equivalent(fs::path(trunk->dir()), fs::path(drafter_dir), ec)) return load_released_drafter(*trunk);
    return load_released_drafter(drafter_dir);
  }
  DrafterConfig cfg = DrafterConfig::load(drafter_dir);
  const fs::path file = fs::path(drafter_dir) / "model.safetensors";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw Error("no model.safetensors in " + drafter_dir, "a drafter folder holds config.json and model.safetensors");
  SafetensorsFile st = SafetensorsFile::open(file.string());
  const std::string hint = "the drafter checkpoint does not match its config.json";

  const std::string bias_name = drafter_head_prefix(cfg) + "confidence_head.proj.bias";
  const bool has_bias = st.find(bias_name) != nullptr;
  if (cfg.confidence) {
    if (cfg.confidence_bias && *cfg.confidence_bias != has_bias)
      throw Error("drafter config.json says confidence_head_bias is " + std::string(*cfg.confidence_bias ? "true" : "false") +
                      " but the checkpoint " + (has_bias ? "has " : "lacks ") + bias_name,
                  hint);
    cfg.confidence_bias = has_bias;
  }
  const std::vector<DrafterTensorSpec> specs = expected_drafter_tensors(cfg, cfg.confidence && has_bias);
  std::set<std::string> names;
  for (const auto& s : specs) names.insert(s.name);
  for (const auto& t : st.tensors())
    if (!names.count(t.name))
      throw Error("tensor " + printable(t.name) + " is not predicted by the drafter's config.json (extra tensor)", hint);
  std::vector<Tensor> tensors;
  for (const auto& spec : specs) {
    const TensorView* v = st.find(spec.name);
    if (!v) throw Error("tensor " + spec.name + " is missing (config predicts shape " + shape_text(spec.shape) + ")", hint);
    if (v->shape != spec.shape)
      throw Error("tensor " + spec.name + " has shape " + shape_text(v->shape) + ", config predicts " + shape_text(spec.shape),
                  hint);
    if (v->dtype != DType::kF32 && v->dtype != DType::kBF16 && v->dtype != DType::kF16)
      throw Error("tensor " + spec.name + " has dtype " + dtype_name(v->dtype) + ", expected F32, BF16 or F16", hint);
    tensors.push_back({spec.name, v->dtype, v->shape, xxh3_128(v->data, v->nbytes), tensor_to_f32(*v), dtype_name(v->dtype)});
  }
  return assemble(std::move(cfg), drafter_dir, std::move(tensors));
}

DrafterWeights DrafterWeights::assemble(DrafterConfig config, std::string dir, std::vector<Tensor> tensors) {
  DrafterWeights w;
  w.config_ = std::move(config);
  w.dir_ = std::move(dir);
  w.tensors_ = std::move(tensors);
  for (size_t i = 0; i < w.tensors_.size(); ++i) w.index_.emplace(w.tensors_[i].name, i);
  Hasher h;
  const std::string geometry = w.config_.geometry_json().dump();
  h.update_u64(geometry.size());
  h.update(geometry);
  h.update_u64(w.tensors_.size());
  for (const auto& t : w.tensors_) {
    h.update_u64(t.name.size());
    h.update(t.name);
    h.update_u64(t.format.size());
    h.update(t.format);
    h.update_u64(t.shape.size());
    for (int64_t d : t.shape) h.update_u64(static_cast<uint64_t>(d));
    h.update_u64(t.hash.high);
    h.update_u64(t.hash.low);
  }
  w.fingerprint_ = h.digest();
  return w;
}

const float* DrafterWeights::f32(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw Error("drafter has no tensor " + name);
  return tensors_[it->second].values.data();
}

}  // namespace memra
