// DeepSeek-V4 model geometry, parsed from config.json in either form that exists:
//  - transformers form: layer_types + compress_rates, mlp_layer_types, nested rope_parameters{main,compress},
//    partial_rotary_factor;
//  - upstream form: compress_ratios (0/1 = sliding, 4 = CSA, other = HCA; trailing MTP entry dropped),
//    num_hash_layers, qk_rope_head_dim, flat rope_scaling (yarn).
// Shape letters used across lib/: T tokens, D hidden, H heads, d head_dim, r rope dims, n hc_mult,
// E routed experts, k experts per token, I expert width, Hi/di indexer heads/dim, V vocab.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace memra {

enum class LayerKind { kSliding, kCSA, kHCA };
enum class MlpKind { kHash, kLearned };

const char* layer_kind_name(LayerKind kind);  // transformers names: sliding_attention, ...
const char* mlp_kind_name(MlpKind kind);      // hash_moe, moe

// How the checkpoint's weights are quantised, from the upstream config.json as DeepSeek releases it:
// "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "scale_fmt": "ue8m0",
// "activation_scheme": "dynamic", "weight_block_size": [128, 128]} and "expert_dtype": "fp4".
// Not part of the geometry (nor the fingerprint's geometry text): the tensors' own dtypes are.
struct QuantizationConfig {
  bool fp8 = false;                 // quantization_config present: FP8 e4m3 weights with ue8m0 block scales
  int64_t block_rows = 128;         // weight_block_size[0]: rows (N) per scale block
  int64_t block_cols = 128;         // weight_block_size[1]: columns (K) per scale block
  std::string activation_scheme;    // recorded only: memra keeps activations in f32
  std::string expert_dtype;         // "" (as the other weights), "fp8", or "fp4" (routed experts FP4 e2m1, 1x32 scales)
  nlohmann::json to_json() const;   // {"quant_method": "fp8"|null, ..., "expert_dtype": ...}
};

// One resolved RoPE table (docs/architecture.md §3.3).
struct RopeParams {
  std::string type = "default";  // "default" or "yarn"
  double theta = 10000.0;
  double factor = 1.0;                           // yarn only
  double original_max_position_embeddings = 0;  // yarn only
  double beta_fast = 32.0;                       // yarn only
  double beta_slow = 1.0;                        // yarn only
  double attention_factor = 1.0;                 // must be 1.0 (no mscale); anything else is refused
};

struct ModelConfig {
  std::string source_form;  // "transformers" or "upstream"
  int64_t vocab_size = 0;           // V
  int64_t hidden_size = 0;          // D
  int64_t num_hidden_layers = 0;    // L
  int64_t num_attention_heads = 0;  // H
  int64_t num_key_value_heads = 1;  // must be 1 (shared K=V MQA)
  int64_t head_dim = 0;             // d
  int64_t qk_rope_head_dim = 0;     // r: RoPE on the last r dims of each head
  int64_t q_lora_rank = 0;          // q_l
  int64_t o_groups = 0;             // G
  int64_t o_lora_rank = 0;          // R
  int64_t sliding_window = 0;       // W
  std::vector<LayerKind> layer_types;   // [L]
  int64_t csa_rate = 4;                 // compress_rates.compressed_sparse_attention
  int64_t hca_rate = 128;               // compress_rates.heavily_compressed_attention
  std::vector<MlpKind> mlp_layer_types; // [L]
  int64_t n_routed_experts = 0;     // E
  int64_t num_experts_per_tok = 0;  // k
  int64_t n_shared_experts = 1;
  int64_t moe_intermediate_size = 0;  // I
  std::string scoring_func = "sqrtsoftplus";  // sqrtsoftplus | sigmoid | softmax
  bool norm_topk_prob = true;
  double routed_scaling_factor = 1.0;
  double swiglu_limit = 0.0;  // 0 = no clamp
  int64_t hc_mult = 4;        // n
  int64_t hc_sinkhorn_iters = 20;
  double hc_eps = 1e-6;
  int64_t index_n_heads = 0;   // Hi
  int64_t index_head_dim = 0;  // di
  int64_t index_topk = 0;
  double rope_theta = 10000.0;
  double compress_rope_theta = 160000.0;
  double rms_norm_eps = 1e-6;
  RopeParams rope_main;      // sliding layers
  RopeParams rope_compress;  // CSA/HCA layers
  int64_t max_position_embeddings = 0;
  int64_t num_nextn_predict_layers = 0;
  bool tie_word_embeddings = false;
  QuantizationConfig quantization;

  // Compression ratio m of layer l: 0 for sliding, csa_rate for CSA, hca_rate for HCA.
  int64_t compress_ratio(int64_t layer) const;
  const RopeParams& rope_for(int64_t layer) const {
    return layer_types[layer] == LayerKind::kSliding ? rope_main : rope_compress;
  }

  // Parses and validates (every size positive and bounded, lists of length L, known kinds).
  // Throws Error naming the field.
  static ModelConfig parse(const nlohmann::json& json);
  static ModelConfig load(const std::string& model_dir);  // reads MODEL_DIR/config.json

  // Every parsed field under its transformers name, plus the resolved rope parameters under
  // "rope_parameters": {"main": {...}, "compress": {...}}. Stable key order (nlohmann sorts).
  nlohmann::json geometry_json() const;
};

}  // namespace memra
