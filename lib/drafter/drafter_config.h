// A drafter's config.json (tools/oracle/drafter_config.py applies the same rules). Two families:
//  - dspark: DeepSeek-V4 native (architectures ["DSparkV4DraftModel"] or model_type
//    deepseek_v4_dspark_draft): S stages mtp.0..S-1, each mHC + sliding-window attention with sink
//    + MoE, main_proj/main_norm on stage 0, hc head + norm on the last.
//  - dflash: z-lab / SpecForge HF export (architectures ["DFlashDraftModel"]): Qwen3-style draft
//    layers, fc + hidden_norm over the taps, optional sliding (and causal) layers.
// Both may carry the Markov head (markov_rank > 0) and the confidence head.
// Fields looked up in several places (two places with different values is an error): block_size
// (top level | dflash_config | dspark_block_size), target_layer_ids (dflash_config | top level |
// dspark_target_layer_ids), the noise token (dflash_config.mask_token_id | mask_token_id |
// noise_token_id | dspark_noise_token_id), markov_rank (top level | dflash_config |
// dspark_markov_rank), harvest (top level | dflash_config). Unknown fields are ignored; features
// memra does not implement (kv_fake_quant, attention_bias, non-default RoPE, logit scales) are
// refused by name. Shape letters: D hidden, V vocab, S stages/layers, n hc_mult, H heads,
// KVH kv heads, hd head_dim, r rope dims / Markov rank, W window, E experts, I expert/MLP width.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drafter/harvest.h"
#include "model/config.h"

namespace memra {

enum class DrafterFamily { kDspark, kDflash };
const char* drafter_family_name(DrafterFamily f);  // "dspark", "dflash"

struct DrafterConfig {
  DrafterFamily family = DrafterFamily::kDspark;
  int64_t vocab_size = 0;           // V (the trunk's)
  int64_t hidden_size = 0;          // D (the trunk's)
  int64_t num_layers = 0;           // S: DSpark stages or DFlash draft layers
  int64_t num_attention_heads = 0;  // H
  int64_t num_key_value_heads = 1;  // KVH (1 for DSpark: shared K=V)
  int64_t head_dim = 0;             // hd
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  int64_t block_size = 0;                // b
  std::vector<int64_t> target_layer_ids;  // as the config spells them
  std::vector<int64_t> tap_layer_inputs;  // trunk layer whose input each tap is (DFlash: id + 1)
  int64_t noise_token_id = 0;
  std::optional<Harvest> harvest;  // absent: the dump manifest must say
  int64_t markov_rank = 0;         // r (0: no Markov head)
  bool confidence = false;
  bool confidence_with_markov = true;
  std::string confidence_input;           // "prenorm" (hc-collapsed, before norm) or "final"
  std::optional<bool> confidence_bias;    // absent: the checkpoint decides (DrafterWeights::load)
  std::optional<int64_t> sliding_window;  // W (DSpark: always; DFlash: when use_sliding_window)
  std::vector<bool> layer_sliding;        // [S]
  std::vector<bool> layer_causal;         // [S] causal within the block (DFlash sliding layers by default)
  // DSpark stages.
  int64_t qk_rope_head_dim = 0, q_lora_rank = 0, o_groups = 0, o_lora_rank = 0;
  int64_t n_routed_experts = 0, num_experts_per_tok = 0, moe_intermediate_size = 0;
  std::string scoring_func = "sqrtsoftplus";
  double routed_scaling_factor = 1.5, swiglu_limit = 10.0;
  int64_t hc_mult = 4, hc_sinkhorn_iters = 20;
  double hc_eps = 1e-6;
  // DFlash layers.
  int64_t intermediate_size = 0;

  int64_t n_taps() const { return static_cast<int64_t>(target_layer_ids.size()); }
  bool has_markov() const { return markov_rank > 0; }
  // Width of the confidence head's input: D (+ r with the Markov embedding).
  int64_t confidence_in() const { return hidden_size + (confidence_with_markov ? markov_rank : 0); }

  // Parses and validates; throws Error naming the field.
  static DrafterConfig parse(const nlohmann::json& json);
  static DrafterConfig load(const std::string& drafter_dir);  // DIR/config.json

  // The geometry a drafter dump's manifest records (without harvest and ctx), keyed as
  // tools/oracle/drafter_config.py geometry() writes it.
  nlohmann::json geometry_json() const;

  // The trunk-shaped config the shared CPU site functions (hc_pre/hc_post/moe) read for a DSpark
  // stage: hidden, hc, norms, MoE (learned routing), attention sizes.
  ModelConfig stage_model_config() const;
};

}  // namespace memra
