// V4-Flash layer geometry (v4_geometry.h).
#include "model/v4_geometry.h"

#include "core/error.h"

namespace memra {

std::string v4_flash_schedule() {
  std::string s = "SS";
  for (int i = 0; i < 20; ++i) s += "CH";
  return s + "C";
}

nlohmann::json v4_flash_config_json(const std::string& codes, int64_t vocab) {
  if (codes.empty()) throw Error("a V4-Flash geometry needs at least one layer", "give layer codes such as CH");
  nlohmann::json layer_types = nlohmann::json::array(), mlp = nlohmann::json::array();
  for (char c : codes) {
    if (c == 'S') layer_types.push_back("sliding_attention");
    else if (c == 'C') layer_types.push_back("compressed_sparse_attention");
    else if (c == 'H') layer_types.push_back("heavily_compressed_attention");
    else throw Error(std::string("layer code '") + c + "' is not S, C or H", "e.g. CH: one CSA and one HCA layer");
    mlp.push_back("moe");
  }
  return {{"architectures", {"DeepseekV4ForCausalLM"}},
          {"model_type", "deepseek_v4"},
          {"vocab_size", vocab},
          {"hidden_size", 4096},
          {"num_hidden_layers", static_cast<int64_t>(codes.size())},
          {"num_attention_heads", 64},
          {"num_key_value_heads", 1},
          {"head_dim", 512},
          {"partial_rotary_factor", 0.125},
          {"q_lora_rank", 1024},
          {"o_groups", 8},
          {"o_lora_rank", 1024},
          {"sliding_window", 128},
          {"layer_types", layer_types},
          {"compress_rates", {{"compressed_sparse_attention", 4}, {"heavily_compressed_attention", 128}}},
          {"mlp_layer_types", mlp},
          {"rope_theta", 10000.0},
          {"compress_rope_theta", 160000.0},
          {"rope_parameters",
           {{"main", {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 0.125}}},
            {"compress",
             {{"rope_type", "yarn"}, {"rope_theta", 160000.0}, {"partial_rotary_factor", 0.125}, {"factor", 16.0},
              {"original_max_position_embeddings", 65536}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
              {"attention_factor", 1.0}}}}},
          {"max_position_embeddings", 1048576},
          {"index_n_heads", 64},
          {"index_head_dim", 128},
          {"index_topk", 512},
          {"n_routed_experts", 256},
          {"n_shared_experts", 1},
          {"num_experts_per_tok", 6},
          {"moe_intermediate_size", 2048},
          {"scoring_func", "sqrtsoftplus"},
          {"norm_topk_prob", true},
          {"routed_scaling_factor", 1.5},
          {"swiglu_limit", 10.0},
          {"hc_mult", 4},
          {"hc_sinkhorn_iters", 20},
          {"hc_eps", 1e-6},
          {"rms_norm_eps", 1e-6},
          {"num_nextn_predict_layers", 0},
          {"hidden_act", "silu"},
          {"tie_word_embeddings", false},
          {"bos_token_id", 0},
          {"eos_token_id", 1},
          {"dtype", "bfloat16"}};
}

ModelConfig v4_flash_config(const std::string& codes, int64_t vocab) {
  return ModelConfig::parse(v4_flash_config_json(codes, vocab));
}

}  // namespace memra
