// config.json → ModelConfig, for both the transformers form (save_pretrained) and the upstream form
// (DeepSeek's inference config names). A field that changes the logits but is invisible in the
// weights (epsilons, scales, RoPE bases and tables, index_topk, ...) must be present: a default
// would silently change the math. Structural fields (hc_mult, compress_rates, n_shared_experts,
// ...) may take transformers' defaults, since every tensor shape is checked against them. Every
// value is type-checked and bounded, and each error names the field.
#include "model/config.h"

#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <optional>

#include "core/checked.h"
#include "core/error.h"
#include "format/json_guard.h"

namespace memra {

namespace {

using nlohmann::json;

const char* kHint = "fix config.json (see docs/architecture.md §1 for the fields)";

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw Error("config.json: " + field + " " + what, kHint);
}

// Finds a field under any of its names; two names with different values is an error.
const json* find_field(const json& j, std::initializer_list<const char*> names, std::string* used) {
  const json* found = nullptr;
  for (const char* n : names) {
    auto it = j.find(n);
    if (it == j.end() || it->is_null()) continue;
    if (found && *found != *it) bad(std::string(n), std::string("disagrees with ") + *used);
    if (!found) {
      found = &*it;
      *used = n;
    }
  }
  return found;
}

std::optional<int64_t> opt_int(const json& j, std::initializer_list<const char*> names) {
  std::string used;
  const json* v = find_field(j, names, &used);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_unsigned()) bad(used, "is too large");
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
  }
  bad(used, "must be an integer");
}

int64_t get_int(const json& j, std::initializer_list<const char*> names, std::optional<int64_t> def, int64_t lo,
                int64_t hi) {
  auto v = opt_int(j, names);
  const char* name = *names.begin();
  if (!v) {
    if (!def) bad(name, "is missing");
    v = def;
  }
  if (*v < lo || *v > hi)
    bad(name, "= " + std::to_string(*v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return *v;
}

std::optional<double> opt_double(const json& j, std::initializer_list<const char*> names) {
  std::string used;
  const json* v = find_field(j, names, &used);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad(used, "must be a number");
  double d = v->get<double>();
  if (!std::isfinite(d)) bad(used, "must be finite");
  return d;
}

double get_double(const json& j, std::initializer_list<const char*> names, double def, double lo, double hi) {
  double v = opt_double(j, names).value_or(def);
  if (!(v >= lo && v <= hi))
    bad(*names.begin(), "= " + std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

// A field that changes the logits but cannot be seen in the weights' shapes: refused when missing,
// because a default would silently change the math (and transformers' DeepseekV4Config and the
// upstream ModelArgs do not even agree on some of them).
[[noreturn]] void missing_math(const std::string& field, const std::string& transformers_default) {
  bad(field, "is missing: it changes the logits and memra assumes no default (transformers' default is " +
                 transformers_default + "); set it explicitly");
}

double need_double(const json& j, std::initializer_list<const char*> names, double lo, double hi, const char* def) {
  if (!opt_double(j, names)) missing_math(*names.begin(), def);
  return get_double(j, names, 0.0, lo, hi);
}

int64_t need_int(const json& j, std::initializer_list<const char*> names, int64_t lo, int64_t hi, const char* def) {
  if (!opt_int(j, names)) missing_math(*names.begin(), def);
  return get_int(j, names, std::nullopt, lo, hi);
}

std::string get_string(const json& j, std::initializer_list<const char*> names, const std::string& def) {
  std::string used;
  const json* v = find_field(j, names, &used);
  if (!v) return def;
  if (!v->is_string()) bad(used, "must be a string");
  return v->get<std::string>();
}

bool get_bool(const json& j, const char* name, bool def) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_boolean()) bad(name, "must be true or false");
  return it->get<bool>();
}

constexpr int64_t kMaxDim = 1 << 20;         // any single width
constexpr int64_t kMaxVocab = 1 << 24;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxPositions = int64_t{1} << 40;
constexpr uint64_t kMaxTensorElements = uint64_t{1} << 31;

bool parse_layer_kind(const std::string& s, LayerKind* out) {
  if (s == "sliding_attention") *out = LayerKind::kSliding;
  else if (s == "compressed_sparse_attention") *out = LayerKind::kCSA;
  else if (s == "heavily_compressed_attention") *out = LayerKind::kHCA;
  else return false;
  return true;
}

// One rope table from a dict (nested form) or the flat yarn dict; `field` names it in errors.
RopeParams parse_rope(const json& r, const std::string& field, double default_theta, bool attention_factor_default_one) {
  if (!r.is_object()) bad(field, "must be an object");
  RopeParams p;
  std::string used;
  if (!find_field(r, {"rope_type", "type"}, &used)) missing_math(field + ".rope_type", "default");
  std::string type = get_string(r, {"rope_type", "type"}, "default");
  if (type != "default" && type != "yarn")
    bad(field + ".rope_type", "'" + printable(type) + "' is not supported (only default and yarn)");
  p.type = type;
  p.theta = get_double(r, {"rope_theta"}, default_theta, 1e-6, 1e30);
  if (auto own = opt_double(r, {"rope_theta"}); own && std::fabs(*own - default_theta) > 1e-9 * std::fabs(*own))
    bad(field + ".rope_theta", "= " + std::to_string(*own) + " disagrees with the top-level theta " + std::to_string(default_theta));
  if (type == "yarn") {
    auto factor = opt_double(r, {"factor"});
    if (!factor) bad(field + ".factor", "is missing (required for yarn)");
    p.factor = *factor;
    if (!(p.factor >= 1.0 && p.factor <= 1e6)) bad(field + ".factor", "must be in [1, 1e6]");
    auto orig = opt_double(r, {"original_max_position_embeddings"});
    if (!orig) bad(field + ".original_max_position_embeddings", "is missing (required for yarn)");
    p.original_max_position_embeddings = *orig;
    if (!(*orig >= 1 && *orig <= 1e12)) bad(field + ".original_max_position_embeddings", "must be positive");
    // transformers reads `beta or default` (0 also means the default), and save_pretrained leaves
    // them out; the upstream ModelArgs default is the same 32 / 1, so missing is not ambiguous.
    double bf = opt_double(r, {"beta_fast"}).value_or(0.0), bs = opt_double(r, {"beta_slow"}).value_or(0.0);
    p.beta_fast = bf != 0.0 ? bf : 32.0;
    p.beta_slow = bs != 0.0 ? bs : 1.0;
    if (!(p.beta_fast > 0 && p.beta_slow > 0)) bad(field + ".beta_fast/beta_slow", "must be positive");
    for (const char* k : {"mscale", "mscale_all_dim"}) {
      auto m = opt_double(r, {k});
      if (m && *m != 0.0)
        bad(field + "." + k, "is set: yarn mscale (attention scaling) is not part of DeepSeek-V4; remove it");
    }
    auto af = opt_double(r, {"attention_factor"});
    if (!af && !attention_factor_default_one)
      bad(field + ".attention_factor",
          "is missing: transformers would then scale cos/sin by the yarn mscale, which DeepSeek-V4 does not do; set it to 1.0");
    p.attention_factor = af.value_or(1.0);
    if (p.attention_factor != 1.0)
      bad(field + ".attention_factor", "= " + std::to_string(p.attention_factor) +
                                           " is refused: DeepSeek-V4 applies no yarn attention scaling (must be 1.0)");
  } else {
    auto af = opt_double(r, {"attention_factor"});
    if (af && *af != 1.0) bad(field + ".attention_factor", "must be 1.0 for default rope");
  }
  return p;
}

void check_product(std::initializer_list<int64_t> dims, const std::string& what) {
  uint64_t p = 1;
  for (int64_t d : dims) {
    if (d < 0 || !mul_fits(p, static_cast<uint64_t>(d), &p) || p > kMaxTensorElements)
      throw Error("config.json: tensor " + what + " would have more than 2^31 elements", kHint);
  }
}

json rope_json(const RopeParams& p) {
  json j = {{"rope_type", p.type}, {"rope_theta", p.theta}};
  if (p.type == "yarn") {
    j["factor"] = p.factor;
    // An integer in JSON when whole, as Python writes it.
    double o = p.original_max_position_embeddings;
    if (o == std::floor(o) && o < 9e15) j["original_max_position_embeddings"] = static_cast<int64_t>(o);
    else j["original_max_position_embeddings"] = o;
    j["beta_fast"] = p.beta_fast;
    j["beta_slow"] = p.beta_slow;
    j["attention_factor"] = p.attention_factor;
  }
  return j;
}

// quantization_config (upstream form) and expert_dtype; every unsupported choice is refused by name.
QuantizationConfig parse_quantization(const json& j) {
  QuantizationConfig q;
  q.expert_dtype = get_string(j, {"expert_dtype"}, "");
  if (!q.expert_dtype.empty() && q.expert_dtype != "fp4" && q.expert_dtype != "fp8")
    bad("expert_dtype", "'" + printable(q.expert_dtype) + "' is not supported (fp4 or fp8, or absent)");
  auto it = j.find("quantization_config");
  if (it == j.end() || it->is_null()) return q;
  const json& qc = *it;
  if (!qc.is_object()) bad("quantization_config", "must be an object");
  const std::string method = get_string(qc, {"quant_method"}, "");
  if (method != "fp8")
    bad("quantization_config.quant_method", "'" + printable(method) +
                                                "' is not supported (memra reads fp8 block quantisation as DeepSeek releases it)");
  const std::string fmt = get_string(qc, {"fmt"}, "e4m3");
  if (fmt != "e4m3") bad("quantization_config.fmt", "'" + printable(fmt) + "' is not supported (only e4m3)");
  const std::string scale_fmt = get_string(qc, {"scale_fmt"}, "");
  if (scale_fmt != "ue8m0")
    bad("quantization_config.scale_fmt", (scale_fmt.empty() ? std::string("is missing") : "'" + printable(scale_fmt) + "' is not supported") +
                                             " (memra reads ue8m0 power-of-two scales, as DeepSeek-V4 releases them)");
  q.activation_scheme = get_string(qc, {"activation_scheme"}, "");
  if (qc.contains("weight_block_size") && !qc["weight_block_size"].is_null()) {
    const json& b = qc["weight_block_size"];
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer() ||
        b[0].get<int64_t>() < 1 || b[1].get<int64_t>() < 1 || b[0].get<int64_t>() > kMaxDim || b[1].get<int64_t>() > kMaxDim)
      bad("quantization_config.weight_block_size", "must be two positive integers [rows, cols]");
    q.block_rows = b[0].get<int64_t>();
    q.block_cols = b[1].get<int64_t>();
  }
  q.fp8 = true;
  return q;
}

}  // namespace

json QuantizationConfig::to_json() const {
  json j = {{"quant_method", fp8 ? json("fp8") : json(nullptr)},
            {"expert_dtype", expert_dtype.empty() ? json(nullptr) : json(expert_dtype)}};
  if (fp8) {
    j["fmt"] = "e4m3";
    j["scale_fmt"] = "ue8m0";
    j["weight_block_size"] = {block_rows, block_cols};
    j["activation_scheme"] = activation_scheme;
  }
  return j;
}

const char* layer_kind_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::kSliding: return "sliding_attention";
    case LayerKind::kCSA: return "compressed_sparse_attention";
    case LayerKind::kHCA: return "heavily_compressed_attention";
  }
  return "?";
}

const char* mlp_kind_name(MlpKind kind) { return kind == MlpKind::kHash ? "hash_moe" : "moe"; }

int64_t ModelConfig::compress_ratio(int64_t layer) const {
  switch (layer_types.at(static_cast<size_t>(layer))) {
    case LayerKind::kSliding: return 0;
    case LayerKind::kCSA: return csa_rate;
    case LayerKind::kHCA: return hca_rate;
  }
  return 0;
}

ModelConfig ModelConfig::parse(const json& j) {
  if (!j.is_object()) throw Error("config.json: top level is not a JSON object", kHint);
  ModelConfig c;
  const bool has_layer_types = j.contains("layer_types") && !j["layer_types"].is_null();
  const bool has_ratios = j.contains("compress_ratios") && !j["compress_ratios"].is_null();
  if (!has_layer_types && !has_ratios)
    throw Error("config.json: neither layer_types (transformers form) nor compress_ratios (upstream form) is present",
                kHint);
  c.source_form = has_layer_types ? "transformers" : "upstream";

  if (j.contains("model_type") && j["model_type"].is_string() && j["model_type"] != "deepseek_v4")
    bad("model_type", "is '" + printable(j["model_type"].get<std::string>()) + "', expected deepseek_v4");

  c.vocab_size = get_int(j, {"vocab_size"}, std::nullopt, 1, kMaxVocab);
  c.hidden_size = get_int(j, {"hidden_size", "dim"}, std::nullopt, 1, kMaxDim);
  c.num_hidden_layers = get_int(j, {"num_hidden_layers", "n_layers"}, std::nullopt, 1, kMaxLayers);
  c.num_attention_heads = get_int(j, {"num_attention_heads", "n_heads"}, std::nullopt, 1, kMaxDim);
  c.num_key_value_heads = get_int(j, {"num_key_value_heads"}, 1, 1, kMaxDim);
  if (c.num_key_value_heads != 1) bad("num_key_value_heads", "must be 1 (DeepSeek-V4 shares one K=V head)");
  c.head_dim = get_int(j, {"head_dim"}, std::nullopt, 1, kMaxDim);
  c.q_lora_rank = get_int(j, {"q_lora_rank"}, std::nullopt, 1, kMaxDim);
  c.o_groups = get_int(j, {"o_groups"}, std::nullopt, 1, kMaxDim);
  c.o_lora_rank = get_int(j, {"o_lora_rank"}, std::nullopt, 1, kMaxDim);
  c.sliding_window = get_int(j, {"sliding_window", "window_size"}, std::nullopt, 1, int64_t{1} << 24);
  c.n_routed_experts = get_int(j, {"n_routed_experts"}, std::nullopt, 1, 1 << 16);
  c.num_experts_per_tok = get_int(j, {"num_experts_per_tok", "n_activated_experts"}, std::nullopt, 1, 1 << 16);
  if (c.num_experts_per_tok > c.n_routed_experts)
    bad("num_experts_per_tok", "= " + std::to_string(c.num_experts_per_tok) + " exceeds n_routed_experts = " +
                                   std::to_string(c.n_routed_experts));
  // Exactly one shared expert: the model has one (DeepSeek's code asserts it) and transformers builds
  // one whatever the field says, so any other value would run something no oracle checks.
  c.n_shared_experts = get_int(j, {"n_shared_experts"}, 1, 0, 1 << 16);
  if (c.n_shared_experts != 1)
    bad("n_shared_experts", "= " + std::to_string(c.n_shared_experts) +
                                " is refused: DeepSeek-V4 has exactly one shared expert (must be 1)");
  c.moe_intermediate_size = get_int(j, {"moe_intermediate_size", "moe_inter_dim"}, std::nullopt, 1, kMaxDim);
  {
    std::string used;
    if (!find_field(j, {"scoring_func", "score_func"}, &used)) missing_math("scoring_func", "sqrtsoftplus");
  }
  c.scoring_func = get_string(j, {"scoring_func", "score_func"}, "sqrtsoftplus");
  // softmax scoring is refused: transformers 5.17 cannot run it for DeepSeek-V4 (no oracle), and
  // DeepSeek's code would not renormalise its top-k weights the way transformers does.
  if (c.scoring_func == "softmax")
    bad("scoring_func", "'softmax' is refused: no oracle can check it (transformers 5.17 has no softmax scoring for "
                        "DeepSeek-V4); use sqrtsoftplus or sigmoid");
  if (c.scoring_func != "sqrtsoftplus" && c.scoring_func != "sigmoid")
    bad("scoring_func", "'" + printable(c.scoring_func) + "' is not one of sqrtsoftplus, sigmoid");
  if (!j.contains("norm_topk_prob") || j["norm_topk_prob"].is_null()) missing_math("norm_topk_prob", "true");
  c.norm_topk_prob = get_bool(j, "norm_topk_prob", true);
  c.routed_scaling_factor = need_double(j, {"routed_scaling_factor", "route_scale"}, 1e-6, 1e6, "1.5");
  c.swiglu_limit = need_double(j, {"swiglu_limit"}, 0.0, 1e30, "10.0");
  c.hc_mult = get_int(j, {"hc_mult"}, 4, 1, 64);  // structural: the hc weights' shapes check it
  c.hc_sinkhorn_iters = need_int(j, {"hc_sinkhorn_iters"}, 1, 100000, "20");
  c.hc_eps = need_double(j, {"hc_eps"}, 0.0, 1.0, "1e-6");
  c.rms_norm_eps = need_double(j, {"rms_norm_eps", "norm_eps"}, 0.0, 1.0, "1e-6");
  // RoPE bases: top level, or inside nested rope_parameters (checked below).
  c.rope_theta = get_double(j, {"rope_theta"}, 10000.0, 1e-6, 1e30);
  c.compress_rope_theta = get_double(j, {"compress_rope_theta"}, 160000.0, 1e-6, 1e30);
  c.max_position_embeddings = get_int(j, {"max_position_embeddings", "max_seq_len"}, 1048576, 1, kMaxPositions);
  c.num_nextn_predict_layers = get_int(j, {"num_nextn_predict_layers", "n_mtp_layers"}, 0, 0, 64);
  c.tie_word_embeddings = get_bool(j, "tie_word_embeddings", false);
  c.quantization = parse_quantization(j);

  const int64_t L = c.num_hidden_layers;
  const size_t Ls = static_cast<size_t>(L);

  // Attention schedule.
  if (has_layer_types) {
    const json& lt = j["layer_types"];
    if (!lt.is_array()) bad("layer_types", "must be a list of strings");
    if (lt.size() != Ls)
      bad("layer_types", "has " + std::to_string(lt.size()) + " entries, num_hidden_layers is " + std::to_string(L));
    for (size_t i = 0; i < lt.size(); ++i) {
      LayerKind k;
      if (!lt[i].is_string() || !parse_layer_kind(lt[i].get<std::string>(), &k))
        bad("layer_types[" + std::to_string(i) + "]",
            "is not one of sliding_attention, compressed_sparse_attention, heavily_compressed_attention");
      c.layer_types.push_back(k);
    }
    c.csa_rate = 4;
    c.hca_rate = 128;
    if (j.contains("compress_rates") && !j["compress_rates"].is_null()) {
      const json& cr = j["compress_rates"];
      if (!cr.is_object()) bad("compress_rates", "must be an object");
      for (auto it = cr.begin(); it != cr.end(); ++it)
        if (it.key() != "compressed_sparse_attention" && it.key() != "heavily_compressed_attention")
          bad("compress_rates." + printable(it.key()), "is not a known layer type");
      c.csa_rate = get_int(cr, {"compressed_sparse_attention"}, 4, 1, kMaxDim);
      c.hca_rate = get_int(cr, {"heavily_compressed_attention"}, 128, 1, kMaxDim);
    }
    // transformers folds these legacy scalars into compress_rates.
    if (opt_int(j, {"compress_rate_csa"})) c.csa_rate = get_int(j, {"compress_rate_csa"}, 4, 1, kMaxDim);
    if (opt_int(j, {"compress_rate_hca"})) c.hca_rate = get_int(j, {"compress_rate_hca"}, 128, 1, kMaxDim);
  } else {
    const json& cr = j["compress_ratios"];
    if (!cr.is_array()) bad("compress_ratios", "must be a list of integers");
    // Trailing entries: the MTP block, or one per DSpark stage (num_nextn_predict_layers of them).
    const size_t trailing = static_cast<size_t>(std::max<int64_t>(1, c.num_nextn_predict_layers));
    if (cr.size() < Ls || cr.size() > Ls + trailing)
      bad("compress_ratios", "has " + std::to_string(cr.size()) + " entries, expected num_hidden_layers (" +
                                 std::to_string(L) + ") plus at most " + std::to_string(trailing) +
                                 " for the MTP block or DSpark stages (num_nextn_predict_layers)");
    std::optional<int64_t> hca;
    for (size_t i = 0; i < Ls; ++i) {
      if (!cr[i].is_number_integer() || cr[i].get<int64_t>() < 0 || cr[i].get<int64_t>() > kMaxDim)
        bad("compress_ratios[" + std::to_string(i) + "]", "must be a non-negative integer");
      int64_t m = cr[i].get<int64_t>();
      if (m == 0 || m == 1) {
        c.layer_types.push_back(LayerKind::kSliding);
      } else if (m == 4) {
        c.layer_types.push_back(LayerKind::kCSA);
      } else {
        if (hca && *hca != m)
          bad("compress_ratios[" + std::to_string(i) + "]",
              "= " + std::to_string(m) + " differs from the earlier HCA ratio " + std::to_string(*hca));
        hca = m;
        c.layer_types.push_back(LayerKind::kHCA);
      }
    }
    c.csa_rate = 4;
    c.hca_rate = hca.value_or(128);
  }

  // MoE schedule.
  if (j.contains("mlp_layer_types") && !j["mlp_layer_types"].is_null()) {
    const json& mt = j["mlp_layer_types"];
    if (!mt.is_array()) bad("mlp_layer_types", "must be a list of strings");
    if (mt.size() != Ls)
      bad("mlp_layer_types", "has " + std::to_string(mt.size()) + " entries, num_hidden_layers is " + std::to_string(L));
    for (size_t i = 0; i < mt.size(); ++i) {
      std::string s = mt[i].is_string() ? mt[i].get<std::string>() : "";
      if (s == "hash_moe") c.mlp_layer_types.push_back(MlpKind::kHash);
      else if (s == "moe") c.mlp_layer_types.push_back(MlpKind::kLearned);
      else bad("mlp_layer_types[" + std::to_string(i) + "]", "is not one of hash_moe, moe");
    }
  } else {
    int64_t n_hash = get_int(j, {"num_hash_layers", "n_hash_layers"}, 3, 0, kMaxLayers);
    if (n_hash > L) bad("num_hash_layers", "= " + std::to_string(n_hash) + " exceeds num_hidden_layers = " + std::to_string(L));
    for (int64_t i = 0; i < L; ++i) c.mlp_layer_types.push_back(i < n_hash ? MlpKind::kHash : MlpKind::kLearned);
  }

  // RoPE width r: partial_rotary_factor·head_dim (exact), or qk_rope_head_dim, or transformers' default d/8.
  auto prf = opt_double(j, {"partial_rotary_factor"});
  auto qk = opt_int(j, {"qk_rope_head_dim", "rope_head_dim"});
  if (prf) {
    double r = *prf * static_cast<double>(c.head_dim);
    double rr = std::round(r);
    if (!(*prf > 0 && *prf <= 1) || std::fabs(r - rr) > 1e-6)
      bad("partial_rotary_factor", "= " + std::to_string(*prf) + " times head_dim " + std::to_string(c.head_dim) +
                                       " is not a whole number of dims in (0, head_dim]");
    c.qk_rope_head_dim = static_cast<int64_t>(rr);
    if (qk && *qk != c.qk_rope_head_dim)
      bad("qk_rope_head_dim", "= " + std::to_string(*qk) + " disagrees with partial_rotary_factor·head_dim = " +
                                  std::to_string(c.qk_rope_head_dim));
  } else if (qk) {
    c.qk_rope_head_dim = *qk;
  } else {
    missing_math("qk_rope_head_dim (or partial_rotary_factor)", "head_dim/8");
  }
  if (c.qk_rope_head_dim <= 0 || c.qk_rope_head_dim > c.head_dim || c.qk_rope_head_dim % 2 != 0)
    bad("qk_rope_head_dim", "= " + std::to_string(c.qk_rope_head_dim) + " must be even and in (0, head_dim = " +
                                std::to_string(c.head_dim) + "]");

  // RoPE tables: nested rope_parameters{main, compress}, else the flat yarn dict for compressed layers.
  const json* rp = j.contains("rope_parameters") && j["rope_parameters"].is_object() ? &j["rope_parameters"] : nullptr;
  bool any_compressed = false;
  for (LayerKind k : c.layer_types) any_compressed = any_compressed || k != LayerKind::kSliding;
  const bool has_top_theta = opt_double(j, {"rope_theta"}).has_value();
  const bool has_top_compress_theta = opt_double(j, {"compress_rope_theta"}).has_value();
  if (rp && rp->contains("main") && rp->contains("compress")) {
    // A base stated only inside the nested table is the base (and what geometry_json reports).
    if (!has_top_theta) {
      if (!(*rp)["main"].is_object() || !opt_double((*rp)["main"], {"rope_theta"})) missing_math("rope_theta", "10000");
      c.rope_theta = opt_double((*rp)["main"], {"rope_theta"}).value();
    }
    if (!has_top_compress_theta) {
      if (!(*rp)["compress"].is_object() || !opt_double((*rp)["compress"], {"rope_theta"}))
        missing_math("compress_rope_theta", "160000");
      c.compress_rope_theta = opt_double((*rp)["compress"], {"rope_theta"}).value();
    }
    c.rope_main = parse_rope((*rp)["main"], "rope_parameters.main", c.rope_theta, false);
    c.rope_compress = parse_rope((*rp)["compress"], "rope_parameters.compress", c.compress_rope_theta, false);
    for (const char* part : {"main", "compress"}) {
      auto sub = opt_double((*rp)[part], {"partial_rotary_factor"});
      if (sub && std::fabs(*sub * c.head_dim - c.qk_rope_head_dim) > 1e-6)
        bad(std::string("rope_parameters.") + part + ".partial_rotary_factor", "disagrees with qk_rope_head_dim");
    }
  } else {
    if (j.contains("rope_parameters") && !j["rope_parameters"].is_null() && !rp) bad("rope_parameters", "must be an object");
    if (!has_top_theta) missing_math("rope_theta", "10000");
    if (any_compressed && !has_top_compress_theta) missing_math("compress_rope_theta", "160000");
    const json* flat = rp;
    std::string field = "rope_parameters";
    if (!flat && j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
      flat = &j["rope_scaling"];
      field = "rope_scaling";
      if (!flat->is_object()) bad("rope_scaling", "must be an object");
    }
    // Whether the compressed layers use YaRN changes every logit: it must be stated, as a table or
    // as an explicit `"rope_scaling": null` (no scaling).
    if (!flat && any_compressed && !j.contains("rope_scaling") && !j.contains("rope_parameters"))
      missing_math("rope_parameters (or rope_scaling)", "no YaRN; write \"rope_scaling\": null for that");
    c.rope_main = RopeParams{};
    c.rope_main.theta = c.rope_theta;
    if (flat) {
      json compress = *flat;
      compress.erase("main");
      compress.erase("compress");
      compress["rope_theta"] = c.compress_rope_theta;  // the compressed layers' base, as transformers does
      c.rope_compress = parse_rope(compress, field, c.compress_rope_theta, true);
    } else {
      c.rope_compress = RopeParams{};
      c.rope_compress.theta = c.compress_rope_theta;
    }
  }

  // Cross-field checks.
  if ((c.head_dim * c.num_attention_heads) % c.o_groups != 0)
    bad("o_groups", "= " + std::to_string(c.o_groups) + " does not divide num_attention_heads·head_dim = " +
                        std::to_string(c.head_dim * c.num_attention_heads));
  bool any_csa = false;
  for (LayerKind k : c.layer_types) any_csa = any_csa || k == LayerKind::kCSA;
  c.index_n_heads = get_int(j, {"index_n_heads"}, any_csa ? std::optional<int64_t>(64) : std::optional<int64_t>(0), 0, kMaxDim);
  c.index_head_dim = get_int(j, {"index_head_dim"}, any_csa ? std::optional<int64_t>(128) : std::optional<int64_t>(0), 0, kMaxDim);
  if (any_csa && !opt_int(j, {"index_topk"})) missing_math("index_topk", "512");
  c.index_topk = get_int(j, {"index_topk"}, std::optional<int64_t>(0), 0, int64_t{1} << 24);
  if (any_csa) {
    if (c.index_n_heads < 1) bad("index_n_heads", "must be at least 1 when a layer is compressed_sparse_attention");
    if (c.index_head_dim < 1) bad("index_head_dim", "must be at least 1 when a layer is compressed_sparse_attention");
    if (c.index_topk < 1) bad("index_topk", "must be at least 1 when a layer is compressed_sparse_attention");
    if (c.index_head_dim < c.qk_rope_head_dim)
      bad("index_head_dim", "= " + std::to_string(c.index_head_dim) + " is smaller than qk_rope_head_dim = " +
                                std::to_string(c.qk_rope_head_dim));
  }
  bool any_hash = false;
  for (MlpKind k : c.mlp_layer_types) any_hash = any_hash || k == MlpKind::kHash;

  // The tensor table stays small enough to build: about 3 tensors per expert per layer.
  if (static_cast<uint64_t>(c.num_hidden_layers) * static_cast<uint64_t>(c.n_routed_experts + 16) > (uint64_t{1} << 22))
    bad("n_routed_experts", "x num_hidden_layers = " + std::to_string(c.n_routed_experts) + " x " +
                                std::to_string(c.num_hidden_layers) + " is more experts than any checkpoint holds (limit 2^22)");

  // Every weight's element count fits in 2^31 (checked without overflow).
  const int64_t D = c.hidden_size, n = c.hc_mult, H = c.num_attention_heads, d = c.head_dim;
  check_product({c.vocab_size, D}, "embed.weight");
  check_product({n, n, D}, "hc_head_fn");
  check_product({2 + n, n, n, D}, "hc_attn_fn");
  check_product({H, d, c.q_lora_rank}, "attn.wq_b.weight");
  check_product({c.q_lora_rank, D}, "attn.wq_a.weight");
  check_product({d, D}, "attn.wkv.weight");
  check_product({c.o_groups, c.o_lora_rank, H, d}, "attn.wo_a.weight");  // ≥ G·R·(H·d/G)
  check_product({D, c.o_groups, c.o_lora_rank}, "attn.wo_b.weight");
  check_product({2, d, D}, "attn.compressor.wkv.weight");
  check_product({std::max(c.csa_rate, c.hca_rate), 2, d}, "attn.compressor.ape");
  check_product({c.index_n_heads, c.index_head_dim, c.q_lora_rank}, "attn.indexer.wq_b.weight");
  check_product({2, c.index_head_dim, D}, "attn.indexer.compressor.wkv.weight");
  check_product({c.n_routed_experts, D}, "ffn.gate.weight");
  if (any_hash) check_product({c.vocab_size, c.num_experts_per_tok}, "ffn.gate.tid2eid");
  check_product({c.moe_intermediate_size, D}, "ffn.experts.0.w1.weight");
  return c;
}

ModelConfig ModelConfig::load(const std::string& model_dir) {
  std::filesystem::path p = std::filesystem::path(model_dir) / "config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec))
    throw Error("no config.json in " + model_dir, "MODEL_DIR must be a checkpoint folder with config.json");
  json j = read_json_file(p.string(), 16u << 20);
  return parse(j);
}

json ModelConfig::geometry_json() const {
  json lt = json::array(), mt = json::array();
  for (LayerKind k : layer_types) lt.push_back(layer_kind_name(k));
  for (MlpKind k : mlp_layer_types) mt.push_back(mlp_kind_name(k));
  json g = {
      {"vocab_size", vocab_size},
      {"hidden_size", hidden_size},
      {"num_hidden_layers", num_hidden_layers},
      {"num_attention_heads", num_attention_heads},
      {"num_key_value_heads", num_key_value_heads},
      {"head_dim", head_dim},
      {"qk_rope_head_dim", qk_rope_head_dim},
      {"q_lora_rank", q_lora_rank},
      {"o_groups", o_groups},
      {"o_lora_rank", o_lora_rank},
      {"sliding_window", sliding_window},
      {"layer_types", lt},
      {"compress_rates", {{"compressed_sparse_attention", csa_rate}, {"heavily_compressed_attention", hca_rate}}},
      {"mlp_layer_types", mt},
      {"n_routed_experts", n_routed_experts},
      {"num_experts_per_tok", num_experts_per_tok},
      {"n_shared_experts", n_shared_experts},
      {"moe_intermediate_size", moe_intermediate_size},
      {"scoring_func", scoring_func},
      {"norm_topk_prob", norm_topk_prob},
      {"routed_scaling_factor", routed_scaling_factor},
      {"swiglu_limit", swiglu_limit},
      {"hc_mult", hc_mult},
      {"hc_sinkhorn_iters", hc_sinkhorn_iters},
      {"hc_eps", hc_eps},
      {"index_n_heads", index_n_heads},
      {"index_head_dim", index_head_dim},
      {"index_topk", index_topk},
      {"rope_theta", rope_theta},
      {"compress_rope_theta", compress_rope_theta},
      {"rms_norm_eps", rms_norm_eps},
      {"rope_parameters", {{"main", rope_json(rope_main)}, {"compress", rope_json(rope_compress)}}},
  };
  return g;
}

}  // namespace memra
