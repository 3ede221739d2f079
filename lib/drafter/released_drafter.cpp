// A checkpoint's own DSpark drafter: trunk config.json fields → DrafterConfig, mtp.* tensors under
// their released names → our names, dequantised (released_drafter.h).
#include "drafter/released_drafter.h"

#include <filesystem>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "core/shape_text.h"
#include "engine/memory_plan.h"
#include "format/json_guard.h"
#include "model/model.h"

namespace memra {

namespace {

using nlohmann::json;

// THE released-name table: where a release spells a drafter tensor differently from ours
// (drafter_weights.h), the suffix after `mtp.S.`. Every other drafter tensor is stored under our
// name. Public ports of DeepSeek-V4.1's DSpark read the Markov head as markov_head.embed / .head.
struct ReleasedName {
  const char* ours;
  const char* released;
};
constexpr ReleasedName kReleasedNames[] = {
    {"markov_head.markov_w1.weight", "markov_head.embed.weight"},  // W1 [V, r], gathered by the previous token
    {"markov_head.markov_w2.weight", "markov_head.head.weight"},   // W2 [V, r]
};

// The stage fields that default to the trunk's value; `dspark_<name>` overrides one.
const char* const kStageFields[] = {
    "num_attention_heads", "head_dim",       "qk_rope_head_dim",      "q_lora_rank",  "o_lora_rank",
    "o_groups",            "sliding_window", "n_routed_experts",      "num_experts_per_tok",
    "moe_intermediate_size", "scoring_func", "routed_scaling_factor", "swiglu_limit", "hc_mult",
    "hc_sinkhorn_iters",   "hc_eps",         "rope_theta"};

const char* kHint = "the checkpoint's own DSpark drafter is incomplete or altered; give --drafter DIR for a separate drafter";

// The spellings a drafter tensor of ours may have in a release (ours first).
std::vector<std::string> spellings(const std::string& ours) {
  std::vector<std::string> out{ours};
  const size_t dot = ours.find('.', 4);  // after "mtp.S"
  if (ours.rfind("mtp.", 0) != 0 || dot == std::string::npos) return out;
  const std::string suffix = ours.substr(dot + 1);
  for (const auto& r : kReleasedNames)
    if (suffix == r.ours) out.push_back(ours.substr(0, dot + 1) + r.released);
  return out;
}

bool present(const json& j, const char* field) { return j.contains(field) && !j[field].is_null(); }

}  // namespace

bool is_trunk_folder(const std::string& dir) {
  const std::filesystem::path p = std::filesystem::path(dir) / "config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) return false;
  const json j = read_json_file(p.string(), 16u << 20);
  if (!j.is_object()) return false;
  if (j.contains("model_type") && j["model_type"] == "deepseek_v4") return true;
  return j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
         j["architectures"][0] == "DeepseekV4ForCausalLM";
}

bool declares_dspark_drafter(const json& j) { return j.is_object() && present(j, "dspark_block_size"); }

DrafterConfig released_drafter_config(const json& j, const ModelConfig& tc, bool confidence) {
  auto bad = [](const std::string& field, const std::string& what) {
    throw Error("config.json " + field + " " + what, kHint);
  };
  if (!declares_dspark_drafter(j))
    throw Error("config.json declares no DSpark drafter (no dspark_block_size)",
                "this checkpoint carries no drafter of its own; give --drafter DIR (a drafter folder)");
  const int64_t S = tc.num_nextn_predict_layers;
  if (S < 1) bad("num_nextn_predict_layers", "must be at least 1 for the DSpark stages mtp.0.. that dspark_block_size declares");
  for (const char* f : {"dspark_target_layer_ids", "dspark_noise_token_id"})
    if (!present(j, f)) bad(f, "is missing (the DSpark drafter needs it)");
  const json& ids = j["dspark_target_layer_ids"];
  if (ids.is_array())
    for (const auto& id : ids)
      if (id.is_number_integer() && (id.get<int64_t>() < 0 || id.get<int64_t>() >= tc.num_hidden_layers))
        bad("dspark_target_layer_ids", "names layer " + id.dump() + "; the trunk has layers 0.." +
                                           std::to_string(tc.num_hidden_layers - 1));
  if (j.contains("compress_ratios") && j["compress_ratios"].is_array()) {
    const json& cr = j["compress_ratios"];
    for (size_t i = static_cast<size_t>(tc.num_hidden_layers); i < cr.size(); ++i)
      if (!(cr[i] == 0 || cr[i] == 1))
        bad("compress_ratios[" + std::to_string(i) + "]",
            "= " + cr[i].dump() + ": a DSpark stage attends through a sliding window only (0)");
  }

  // A drafter config.json in the DSpark form, every field taken from the trunk or its dspark_ override;
  // DrafterConfig::parse then checks it as it checks a drafter folder's.
  json d = {{"architectures", {"DSparkV4DraftModel"}},
            {"vocab_size", tc.vocab_size},
            {"hidden_size", tc.hidden_size},
            {"num_hidden_layers", S},
            {"rms_norm_eps", tc.rms_norm_eps},
            {"num_key_value_heads", 1},
            {"harvest", "dspark"},
            {"enable_confidence_head", confidence},
            {"confidence_input", "prenorm"}};
  const json trunk = tc.geometry_json();  // a stage field is the trunk's unless dspark_<field> sets it
  for (const char* f : kStageFields) {
    const std::string over = std::string("dspark_") + f;
    d[f] = present(j, over.c_str()) ? j[over] : trunk.at(f);
  }
  for (const char* f : {"dspark_block_size", "dspark_target_layer_ids", "dspark_noise_token_id", "dspark_markov_rank"})
    if (present(j, f)) d[f] = j[f];
  d["confidence_head_with_markov"] = confidence && present(j, "dspark_markov_rank") && j["dspark_markov_rank"] != 0;
  try {
    return DrafterConfig::parse(d);
  } catch (const Error& e) {
    // "drafter config.json: F ..." → the trunk's config.json (F or its dspark_ override).
    std::string what = e.what();
    const std::string prefix = "drafter config.json: ";
    if (what.rfind(prefix, 0) == 0) what = what.substr(prefix.size());
    throw Error("config.json's DSpark drafter: " + what + " (a stage field is the trunk's unless dspark_<field> sets it)",
                kHint);
  }
}

// DIR/config.json, when it declares a DSpark drafter (checked before any tensor is read).
static json released_config(const std::string& model_dir) {
  json j = read_json_file((std::filesystem::path(model_dir) / "config.json").string(), 16u << 20);
  if (!declares_dspark_drafter(j))
    throw Error(model_dir + "/config.json declares no DSpark drafter (no dspark_block_size)",
                "this checkpoint carries no drafter of its own; give --drafter DIR (a drafter folder)");
  return j;
}

DrafterWeights load_released_drafter(const std::string& model_dir) {
  released_config(model_dir);
  return load_released_drafter(Model::load(model_dir));
}

DrafterWeights load_released_drafter(const Model& model) {
  const std::string& model_dir = model.dir();
  const json j = released_config(model_dir);
  const ModelConfig& tc = model.config();
  std::unordered_map<std::string, const UnusedTensor*> stored;  // canonical name → tensor
  for (const auto& u : model.unused_tensors()) stored.emplace(u.canonical, &u);

  const std::string last = "mtp." + std::to_string(std::max<int64_t>(tc.num_nextn_predict_layers - 1, 0)) + ".";
  const bool confidence = stored.count(last + "confidence_head.proj.weight") != 0;
  const bool with_bias = confidence && stored.count(last + "confidence_head.proj.bias") != 0;
  DrafterConfig cfg = [&] {
    try {
      return released_drafter_config(j, tc, confidence);
    } catch (const Error& e) {  // name the folder: "DIR/config.json ..."
      throw Error(model_dir + "/" + e.what(), e.hint());
    }
  }();
  if (confidence) cfg.confidence_bias = with_bias;
  const std::vector<DrafterTensorSpec> specs = expected_drafter_tensors(cfg, with_bias);

  uint64_t widened = 0;
  for (const auto& spec : specs) {
    uint64_t n = sizeof(float);
    for (int64_t d : spec.shape) n *= static_cast<uint64_t>(d);
    widened += n;
  }
  if (widened > default_memory_limit())
    throw Error("the checkpoint's DSpark drafter widens to " + std::to_string(widened >> 20) +
                    " MiB of f32 weights, more than this machine's memory limit",
                "memra's drafter code reads f32 weights; run the drafter on a machine with more memory");

  std::set<std::string> consumed;
  std::vector<DrafterWeights::Tensor> tensors;
  for (const auto& spec : specs) {
    const UnusedTensor* u = nullptr;
    for (const auto& name : spellings(spec.name)) {
      auto it = stored.find(name);
      if (it == stored.end()) continue;
      if (u) throw Error("tensors " + u->name + " and " + it->second->name + " both name drafter tensor " + spec.name, kHint);
      u = it->second;
    }
    if (!u) {
      const auto names = spellings(spec.name);
      throw Error("drafter tensor " + spec.name + (names.size() > 1 ? " (released as " + names[1] + ")" : "") +
                      " is missing from " + model_dir + " (config.json predicts shape " + shape_text(spec.shape) + ")",
                  kHint);
    }
    consumed.insert(u->canonical);
    if (!u->view.data)
      throw Error("tensor " + u->name + " has dtype " + dtype_name(u->dtype) +
                      ", expected a float weight (F32, BF16, F16, or FP8/FP4 with its .scale)",
                  kHint);
    const bool block = is_block_format(u->view.format);
    const std::vector<int64_t> logical = block ? std::vector<int64_t>{u->view.rows, u->view.cols} : u->shape;
    if (logical != spec.shape)
      throw Error("tensor " + u->name + " has shape " + shape_text(logical) + ", config.json predicts " +
                      shape_text(spec.shape),
                  kHint);
    Hasher h;
    h.update(u->bytes, u->nbytes);
    if (block) {
      h.update(u->view.scale, u->scale_nbytes);
      const std::string w = u->canonical.substr(0, u->canonical.size() - 7);  // without ".weight"
      consumed.insert(w + ".scale");
      consumed.insert(w + ".weight_scale_inv");
    }
    tensors.push_back({spec.name, u->dtype, spec.shape, h.digest(), u->view.decode_all(), u->format_label()});
  }
  for (const auto& u : model.unused_tensors())
    if (!consumed.count(u.canonical))
      throw Error("tensor " + printable(u.name) + " is not part of the DSpark drafter config.json declares (extra tensor)",
                  kHint);
  return DrafterWeights::assemble(std::move(cfg), model_dir, std::move(tensors));
}

}  // namespace memra
