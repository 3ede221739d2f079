// Drafter config.json → DrafterConfig: type-checked, bounded, aliases reconciled, unsupported
// features refused by name (the rules of tools/oracle/drafter_config.py).
#include "drafter/drafter_config.h"

#include <cmath>
#include <filesystem>
#include <initializer_list>

#include "core/error.h"
#include "format/json_guard.h"

namespace memra {

namespace {

using nlohmann::json;

const char* kHint = "fix the drafter's config.json (tools/oracle/README.md lists the fields)";
constexpr int64_t kMaxDim = 1 << 20;
constexpr int64_t kMaxVocab = 1 << 24;
constexpr uint64_t kMaxTensorElements = uint64_t{1} << 31;

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw Error("drafter config.json: " + field + " " + what, kHint);
}

// The value at a dotted path (nullptr when absent or null).
const json* at_path(const json& j, const std::string& path) {
  const json* node = &j;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object()) return nullptr;
    auto it = node->find(part);
    if (it == node->end() || it->is_null()) return nullptr;
    node = &*it;
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

// The first of `paths` that is present; another present path with a different value is an error.
const json* lookup(const json& j, std::initializer_list<const char*> paths, std::string* used) {
  const json* found = nullptr;
  for (const char* p : paths) {
    const json* v = at_path(j, p);
    if (!v) continue;
    if (found && *found != *v) bad(p, "= " + v->dump() + " disagrees with " + *used + " = " + found->dump());
    if (!found) {
      found = v;
      *used = p;
    }
  }
  return found;
}

int64_t get_int(const json& j, std::initializer_list<const char*> paths, std::optional<int64_t> def, int64_t lo,
                int64_t hi) {
  std::string used = *paths.begin();
  const json* v = lookup(j, paths, &used);
  int64_t x;
  if (!v) {
    if (!def) bad(*paths.begin(), "is missing");
    x = *def;
  } else if (v->is_number_integer()) {
    x = v->get<int64_t>();
  } else {
    bad(used, v->is_number_unsigned() ? "is too large" : "must be an integer");
  }
  if (x < lo || x > hi)
    bad(used, "= " + std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

double get_double(const json& j, std::initializer_list<const char*> paths, double def, double lo, double hi) {
  std::string used = *paths.begin();
  const json* v = lookup(j, paths, &used);
  double x = def;
  if (v) {
    if (!v->is_number()) bad(used, "must be a number");
    x = v->get<double>();
  }
  if (!std::isfinite(x) || !(x >= lo && x <= hi))
    bad(used, "= " + std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

bool get_bool(const json& j, const char* name, bool def) {
  const json* v = at_path(j, name);
  if (!v) return def;
  if (!v->is_boolean()) bad(name, "must be true or false");
  return v->get<bool>();
}

std::string get_string(const json& j, const char* name, const std::string& def) {
  const json* v = at_path(j, name);
  if (!v) return def;
  if (!v->is_string()) bad(name, "must be a string");
  return v->get<std::string>();
}

void check_product(std::initializer_list<int64_t> dims, const std::string& what) {
  uint64_t p = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(p, static_cast<uint64_t>(d), &p) || p > kMaxTensorElements)
      throw Error("drafter config.json: tensor " + what + " would have more than 2^31 elements", kHint);
}

DrafterFamily family_of(const json& j) {
  const json* arch = at_path(j, "architectures");
  if (arch && arch->is_array() && !arch->empty() && (*arch)[0].is_string()) {
    const std::string a = (*arch)[0].get<std::string>();
    if (a == "DSparkV4DraftModel") return DrafterFamily::kDspark;
    if (a == "DFlashDraftModel") return DrafterFamily::kDflash;
  }
  if (get_string(j, "model_type", "") == "deepseek_v4_dspark_draft") return DrafterFamily::kDspark;
  throw Error("drafter config.json: architectures/model_type name no drafter memra knows",
              "expected architectures [\"DSparkV4DraftModel\"] or [\"DFlashDraftModel\"]");
}

void parse_dspark(const json& j, DrafterConfig& c) {
  c.num_key_value_heads = get_int(j, {"num_key_value_heads"}, 1, 1, kMaxDim);
  if (c.num_key_value_heads != 1) bad("num_key_value_heads", "must be 1 (DeepSeek-V4 shares one K=V head)");
  c.head_dim = get_int(j, {"head_dim"}, std::nullopt, 1, kMaxDim);
  c.qk_rope_head_dim = get_int(j, {"qk_rope_head_dim"}, std::nullopt, 2, c.head_dim);
  if (c.qk_rope_head_dim % 2) bad("qk_rope_head_dim", "must be even");
  c.q_lora_rank = get_int(j, {"q_lora_rank"}, std::nullopt, 1, kMaxDim);
  c.o_lora_rank = get_int(j, {"o_lora_rank"}, std::nullopt, 1, kMaxDim);
  c.o_groups = get_int(j, {"o_groups"}, std::nullopt, 1, kMaxDim);
  if ((c.num_attention_heads * c.head_dim) % c.o_groups) bad("o_groups", "must divide num_attention_heads·head_dim");
  c.sliding_window = get_int(j, {"sliding_window"}, std::nullopt, 1, int64_t{1} << 24);
  c.n_routed_experts = get_int(j, {"n_routed_experts"}, std::nullopt, 1, 1 << 16);
  c.num_experts_per_tok = get_int(j, {"num_experts_per_tok"}, std::nullopt, 1, c.n_routed_experts);
  c.moe_intermediate_size = get_int(j, {"moe_intermediate_size"}, std::nullopt, 1, kMaxDim);
  get_int(j, {"n_shared_experts"}, 1, 1, 1);
  c.scoring_func = get_string(j, "scoring_func", "sqrtsoftplus");
  if (c.scoring_func != "sqrtsoftplus" && c.scoring_func != "sigmoid" && c.scoring_func != "softmax")
    bad("scoring_func", "'" + printable(c.scoring_func) + "' is not one of sqrtsoftplus, sigmoid, softmax");
  c.routed_scaling_factor = get_double(j, {"routed_scaling_factor"}, 1.5, 1e-6, 1e6);
  c.swiglu_limit = get_double(j, {"swiglu_limit"}, 10.0, 0.0, 1e30);
  c.hc_mult = get_int(j, {"hc_mult"}, 4, 1, 64);
  c.hc_sinkhorn_iters = get_int(j, {"hc_sinkhorn_iters"}, 20, 1, 100000);
  c.hc_eps = get_double(j, {"hc_eps"}, 1e-6, 0.0, 1.0);
  c.rope_theta = get_double(j, {"rope_theta"}, 10000.0, 1e-6, 1e30);
  std::string used;
  const json* q = lookup(j, {"dflash_config.kv_fake_quant", "kv_fake_quant"}, &used);
  if (q && !q->is_boolean()) bad(used, "must be true or false");
  if (q && q->get<bool>()) bad(used, "is set: fp8 K/V fake quantization is not part of memra's drafters");
  c.layer_sliding.assign(c.num_layers, true);
  c.layer_causal.assign(c.num_layers, false);
  const int64_t D = c.hidden_size, n = c.hc_mult;
  check_product({2 + n, n, n, D}, "hc_attn_fn");
  check_product({c.num_attention_heads, c.head_dim, c.q_lora_rank}, "attn.wq_b.weight");
  check_product({c.o_groups, c.o_lora_rank, c.num_attention_heads, c.head_dim}, "attn.wo_a.weight");
  check_product({c.n_routed_experts, c.moe_intermediate_size, D}, "ffn.experts");
  check_product({c.n_taps(), D, D}, "main_proj.weight");
}

void parse_dflash(const json& j, DrafterConfig& c) {
  const int64_t H = c.num_attention_heads;
  c.num_key_value_heads = get_int(j, {"num_key_value_heads"}, H, 1, H);
  if (H % c.num_key_value_heads) bad("num_key_value_heads", "must divide num_attention_heads");
  c.head_dim = get_int(j, {"head_dim"}, c.hidden_size / H, 1, kMaxDim);
  if (c.head_dim % 2) bad("head_dim", "must be even (rotate-half RoPE)");
  c.intermediate_size = get_int(j, {"intermediate_size"}, std::nullopt, 1, kMaxDim);
  if (get_string(j, "hidden_act", "silu") != "silu") bad("hidden_act", "must be silu");
  if (get_bool(j, "attention_bias", false)) bad("attention_bias", "is set: biased projections are not supported");
  const json* rp = at_path(j, "rope_parameters");
  if (rp && !rp->is_object()) bad("rope_parameters", "must be an object");
  if (rp) {
    std::string type = get_string(*rp, "rope_type", get_string(*rp, "type", "default"));
    if (type != "default") bad("rope_parameters.rope_type", "'" + printable(type) + "' is not supported (only default)");
    if (get_double(*rp, {"partial_rotary_factor"}, 1.0, 0.0, 1.0) != 1.0)
      bad("rope_parameters.partial_rotary_factor", "must be 1 (full-width RoPE)");
  }
  c.rope_theta = rp && at_path(*rp, "rope_theta") ? get_double(*rp, {"rope_theta"}, 0, 1e-6, 1e30)
                                                   : get_double(j, {"rope_theta"}, 10000.0, 1e-6, 1e30);
  for (const char* k : {"input_embedding_scale", "output_multiplier"}) {
    std::string used;
    const json* v = lookup(j, {(std::string("dflash_config.") + k).c_str(), k}, &used);
    if (v && (!v->is_number() || v->get<double>() != 1.0)) bad(used, "!= 1 is not supported");
  }
  {
    std::string used;
    const json* v = lookup(j, {"dflash_config.final_logit_softcapping", "final_logit_softcapping"}, &used);
    if (v && !(v->is_number() && v->get<double>() == 0.0)) bad(used, "is set: logit softcapping is not supported");
  }
  const int64_t L = c.num_layers;
  if (get_bool(j, "use_sliding_window", false))
    c.sliding_window = get_int(j, {"sliding_window"}, std::nullopt, 1, int64_t{1} << 24);
  const json* lt = at_path(j, "layer_types");
  if (lt) {
    if (!lt->is_array() || static_cast<int64_t>(lt->size()) != L)
      bad("layer_types", "must list one of full_attention / sliding_attention per layer (" + std::to_string(L) + ")");
    for (size_t i = 0; i < lt->size(); ++i) {
      const std::string t = (*lt)[i].is_string() ? (*lt)[i].get<std::string>() : "";
      if (t != "full_attention" && t != "sliding_attention")
        bad("layer_types[" + std::to_string(i) + "]", "is not full_attention or sliding_attention");
      c.layer_sliding.push_back(t == "sliding_attention");
    }
  } else {
    const int64_t mwl = get_int(j, {"max_window_layers"}, 28, 0, 1 << 20);
    for (int64_t i = 0; i < L; ++i) c.layer_sliding.push_back(c.sliding_window.has_value() && i >= mwl);
  }
  const json* causal = at_path(j, "is_causal");
  if (causal && !causal->is_boolean()) bad("is_causal", "must be true or false");
  for (int64_t i = 0; i < L; ++i) c.layer_causal.push_back(causal ? causal->get<bool>() : c.layer_sliding[i]);
  const int64_t D = c.hidden_size;
  check_product({H, c.head_dim, D}, "q_proj.weight");
  check_product({c.intermediate_size, D}, "mlp.gate_proj.weight");
  check_product({c.n_taps(), D, D}, "fc.weight");
}

}  // namespace

const char* drafter_family_name(DrafterFamily f) { return f == DrafterFamily::kDspark ? "dspark" : "dflash"; }

DrafterConfig DrafterConfig::parse(const json& j) {
  if (!j.is_object()) throw Error("drafter config.json: top level is not a JSON object", kHint);
  DrafterConfig c;
  c.family = family_of(j);
  const bool dspark = c.family == DrafterFamily::kDspark;
  c.vocab_size = get_int(j, {"vocab_size"}, std::nullopt, 1, kMaxVocab);
  c.hidden_size = get_int(j, {"hidden_size"}, std::nullopt, 1, kMaxDim);
  c.num_layers = get_int(j, {"num_hidden_layers"}, std::nullopt, 1, 4096);
  c.num_attention_heads = get_int(j, {"num_attention_heads"}, std::nullopt, 1, kMaxDim);
  c.rms_norm_eps = get_double(j, {"rms_norm_eps"}, 1e-6, 0.0, 1.0);
  c.block_size = get_int(j, {"block_size", "dflash_config.block_size", "dspark_block_size"}, std::nullopt, 1, 4096);

  std::string used = "target_layer_ids";
  const json* ids = lookup(j, {"dflash_config.target_layer_ids", "target_layer_ids", "dspark_target_layer_ids"}, &used);
  if (ids) {
    if (!ids->is_array() || ids->empty() || ids->size() > 4096) bad(used, "must be a non-empty list of layer indices");
    for (const auto& v : *ids) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1 << 20)
        bad(used, "must hold non-negative layer indices");
      c.target_layer_ids.push_back(v.get<int64_t>());
    }
  } else if (!dspark && at_path(j, "num_target_layers")) {
    // The dflash package's default spread over [1, T-3].
    const int64_t T = get_int(j, {"num_target_layers"}, std::nullopt, 1, 1 << 20), L = c.num_layers;
    if (L == 1) {
      c.target_layer_ids.push_back(T / 2);
    } else {
      for (int64_t i = 0; i < L; ++i)
        c.target_layer_ids.push_back(
            static_cast<int64_t>(std::nearbyint(1.0 + static_cast<double>(i) * (T - 4) / static_cast<double>(L - 1))));
    }
    for (int64_t id : c.target_layer_ids)
      if (id < 0) bad("num_target_layers", "is too small for the dflash package's default tap spread");
  } else {
    bad("target_layer_ids", "is missing");
  }
  for (int64_t id : c.target_layer_ids) c.tap_layer_inputs.push_back(dspark ? id : id + 1);

  c.noise_token_id = get_int(j, {"dflash_config.mask_token_id", "mask_token_id", "noise_token_id", "dspark_noise_token_id"},
                             std::nullopt, 0, c.vocab_size - 1);
  used = "harvest";
  if (const json* h = lookup(j, {"harvest", "dflash_config.harvest"}, &used)) {
    std::optional<Harvest> parsed = h->is_string() ? parse_harvest(h->get<std::string>()) : std::nullopt;
    if (!parsed) bad(used, "must be \"dflash\" (mask-fill) or \"dspark\" (shifted)");
    c.harvest = parsed;
  }
  c.markov_rank = get_int(j, {"markov_rank", "dflash_config.markov_rank", "dspark_markov_rank"}, 0, 0, kMaxDim);
  std::string mtype = get_string(j, "markov_head_type", "vanilla");
  if (mtype != "vanilla") bad("markov_head_type", "'" + printable(mtype) + "' is not supported (only vanilla)");
  c.confidence = get_bool(j, "enable_confidence_head", false);
  c.confidence_with_markov = c.confidence && get_bool(j, "confidence_head_with_markov", true);
  if (c.confidence_with_markov && c.markov_rank == 0)
    bad("confidence_head_with_markov", "needs a Markov head (markov_rank > 0)");
  c.confidence_input = get_string(j, "confidence_input", dspark ? "prenorm" : "final");
  if (c.confidence_input != "prenorm" && c.confidence_input != "final")
    bad("confidence_input", "must be prenorm or final");
  if (const json* b = at_path(j, "confidence_head_bias")) {
    if (!b->is_boolean()) bad("confidence_head_bias", "must be true or false");
    c.confidence_bias = b->get<bool>();
  }
  if (dspark) parse_dspark(j, c);
  else parse_dflash(j, c);
  if (c.has_markov()) check_product({c.vocab_size, c.markov_rank}, "markov_head.markov_w1.weight");
  check_product({c.vocab_size, c.hidden_size}, "embeddings");
  return c;
}

DrafterConfig DrafterConfig::load(const std::string& drafter_dir) {
  std::filesystem::path p = std::filesystem::path(drafter_dir) / "config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec))
    throw Error("no config.json in " + drafter_dir, "DRAFTER_DIR must be a drafter folder (config.json + model.safetensors)");
  return parse(read_json_file(p.string(), 16u << 20));
}

json DrafterConfig::geometry_json() const {
  json g = {
      {"family", drafter_family_name(family)},
      {"vocab_size", vocab_size},
      {"hidden_size", hidden_size},
      {"num_layers", num_layers},
      {"block_size", block_size},
      {"target_layer_ids", target_layer_ids},
      {"n_taps", n_taps()},
      {"num_attention_heads", num_attention_heads},
      {"num_key_value_heads", num_key_value_heads},
      {"head_dim", head_dim},
      {"rope_theta", rope_theta},
      {"rms_norm_eps", rms_norm_eps},
      {"noise_token_id", noise_token_id},
      {"sliding_window", sliding_window ? json(*sliding_window) : json(nullptr)},
      {"layer_sliding", layer_sliding},
      {"layer_causal", layer_causal},
      {"markov_vocab", has_markov() ? vocab_size : 0},
      {"markov_rank", markov_rank},
      {"confidence",
       {{"enabled", confidence},
        {"with_markov", confidence && confidence_with_markov},
        {"input", confidence ? confidence_input : "none"},
        {"bias", confidence && confidence_bias.value_or(false)}}},
  };
  if (family == DrafterFamily::kDspark) {
    g["qk_rope_head_dim"] = qk_rope_head_dim;
    g["q_lora_rank"] = q_lora_rank;
    g["o_groups"] = o_groups;
    g["o_lora_rank"] = o_lora_rank;
    g["hc_mult"] = hc_mult;
    g["hc_sinkhorn_iters"] = hc_sinkhorn_iters;
    g["hc_eps"] = hc_eps;
    g["n_routed_experts"] = n_routed_experts;
    g["num_experts_per_tok"] = num_experts_per_tok;
    g["moe_intermediate_size"] = moe_intermediate_size;
    g["scoring_func"] = scoring_func;
    g["routed_scaling_factor"] = routed_scaling_factor;
    g["swiglu_limit"] = swiglu_limit;
  } else {
    g["intermediate_size"] = intermediate_size;
  }
  return g;
}

ModelConfig DrafterConfig::stage_model_config() const {
  ModelConfig m;
  m.source_form = "drafter";
  m.vocab_size = vocab_size;
  m.hidden_size = hidden_size;
  m.num_hidden_layers = num_layers;
  m.num_attention_heads = num_attention_heads;
  m.head_dim = head_dim;
  m.qk_rope_head_dim = qk_rope_head_dim;
  m.q_lora_rank = q_lora_rank;
  m.o_groups = o_groups;
  m.o_lora_rank = o_lora_rank;
  m.sliding_window = sliding_window.value_or(0);
  m.layer_types.assign(num_layers, LayerKind::kSliding);
  m.mlp_layer_types.assign(num_layers, MlpKind::kLearned);
  m.n_routed_experts = n_routed_experts;
  m.num_experts_per_tok = num_experts_per_tok;
  m.n_shared_experts = 1;
  m.moe_intermediate_size = moe_intermediate_size;
  m.scoring_func = scoring_func;
  m.routed_scaling_factor = routed_scaling_factor;
  m.swiglu_limit = swiglu_limit;
  m.hc_mult = hc_mult;
  m.hc_sinkhorn_iters = hc_sinkhorn_iters;
  m.hc_eps = hc_eps;
  m.rms_norm_eps = rms_norm_eps;
  m.rope_theta = rope_theta;
  m.rope_main.theta = rope_theta;
  return m;
}

}  // namespace memra
