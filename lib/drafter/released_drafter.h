// A released DeepSeek-V4 checkpoint's own DSpark drafter: the drafter lives inside the model
// folder, as `mtp.*` tensors beside the trunk's (stored like the trunk's: FP8 e4m3 + ue8m0 block
// scales, packed FP4 routed experts, BF16, F32) and as fields of the trunk's config.json:
//
//   num_nextn_predict_layers S   stages mtp.0 .. mtp.S-1 (also n_mtp_layers)
//   dspark_block_size            b (its presence is what declares the drafter)
//   dspark_target_layer_ids      taps: the inputs of these trunk layers
//   dspark_noise_token_id        the block's filler token
//   dspark_markov_rank           r of the Markov head (absent: none)
//   dspark_<stage field>         a stage's own value where it differs from the trunk's: any of
//                                num_attention_heads, head_dim, qk_rope_head_dim, q_lora_rank,
//                                o_lora_rank, o_groups, sliding_window, n_routed_experts,
//                                num_experts_per_tok, moe_intermediate_size, scoring_func,
//                                routed_scaling_factor, swiglu_limit, hc_mult, hc_sinkhorn_iters,
//                                hc_eps, rope_theta (otherwise the trunk's; releases set
//                                dspark_n_routed_experts and dspark_num_experts_per_tok)
//
// Conventions the release fixes (not fields): the dspark (shifted) harvest, the confidence head
// (present when mtp.S-1.confidence_head.proj.weight is, its bias when that is) reads the
// hc-collapsed hidden before the norm concatenated with the Markov embedding, and trailing
// compress_ratios entries (one per stage) must be 0: the stages attend through a sliding window.
// Tensor names are drafter_weights.h's table except where kReleasedNames (released_drafter.cpp)
// maps a released spelling onto ours. Weights are dequantised to f32 with format/quant.h.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "drafter/drafter_config.h"
#include "drafter/drafter_weights.h"

namespace memra {

class Model;

// True when DIR/config.json describes a DeepSeek-V4 trunk (model_type deepseek_v4 or architectures
// [DeepseekV4ForCausalLM]) rather than a drafter. False when it is absent or another kind.
bool is_trunk_folder(const std::string& dir);

// True when a trunk config.json declares a DSpark drafter (dspark_block_size is set).
bool declares_dspark_drafter(const nlohmann::json& trunk_config);

// The drafter config a trunk config.json declares. `confidence`: the checkpoint holds the
// confidence head. Throws Error naming the missing or bad field.
DrafterConfig released_drafter_config(const nlohmann::json& trunk_config, const ModelConfig& trunk, bool confidence);

// The checkpoint's own drafter from MODEL_DIR: config from config.json, tensors from its
// safetensors (one file or shards) under their released names, dequantised. Throws Error when the
// folder declares no drafter, a field is missing or bad, or a drafter tensor is missing, extra,
// mis-shaped or not a float weight (naming it).
DrafterWeights load_released_drafter(const std::string& model_dir);
// The same from a trunk already loaded (its mtp.* tensors are its unused tensors): no second load
// of a checkpoint that may span many shards.
DrafterWeights load_released_drafter(const Model& trunk);

}  // namespace memra
