// Writes a synthetic checkpoint with V4-Flash's geometry and the released layout (FP8 e4m3 +
// ue8m0 128x128 scales, packed FP4 experts + 1x32 scales, bf16/f32/i64 elsewhere, upstream names,
// the released config.json form, model-0000i-of-0000S.safetensors + index), with pseudo-random
// bytes, cut to L layers and E experts so its size fits a test box. For measuring `memra load`
// (shard opening, parallel read GB/s) at V4-Flash tensor sizes; bench/results/ has the numbers.
//
// Build (not part of the CMake targets; links the library of an existing build folder):
//   g++ -O2 -std=c++20 tools/bench/synthetic_checkpoint.cpp -Ilib -I<build>/generated \
//       <build>/libmemra_core.a -lpthread -o <build>/synthetic_checkpoint
// Run: <build>/synthetic_checkpoint OUT_DIR [layers=2] [experts=64] [shards=40]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/file_io.h"
#include "format/quant.h"
#include "format/safetensors.h"
#include "model/config.h"
#include "model/model.h"

using namespace memra;

namespace {

uint64_t g_state = 0x9E3779B97F4A7C15ull;
void fill(std::string& s) {  // xorshift64*, 8 bytes at a time
  for (size_t i = 0; i < s.size(); i += 8) {
    g_state ^= g_state >> 12;
    g_state ^= g_state << 25;
    g_state ^= g_state >> 27;
    uint64_t v = g_state * 0x2545F4914F6CDD1Dull;
    for (size_t b = 0; b < 8 && i + b < s.size(); ++b) s[i + b] = static_cast<char>(v >> (8 * b));
  }
}

nlohmann::json flash_config(int layers, int experts) {
  std::vector<int> ratios;
  for (int l = 0; l < layers; ++l) ratios.push_back(l < 2 ? 0 : (l % 2 == 0 ? 4 : 128));
  ratios.push_back(0);  // MTP
  return {{"architectures", {"DeepseekV4ForCausalLM"}},
          {"model_type", "deepseek_v4"},
          {"vocab_size", 129280},
          {"hidden_size", 4096},
          {"num_hidden_layers", layers},
          {"num_attention_heads", 64},
          {"num_key_value_heads", 1},
          {"head_dim", 512},
          {"qk_rope_head_dim", 64},
          {"q_lora_rank", 1024},
          {"o_groups", 8},
          {"o_lora_rank", 1024},
          {"sliding_window", 128},
          {"compress_ratios", ratios},
          {"compress_rope_theta", 160000},
          {"rope_theta", 10000},
          {"rope_scaling",
           {{"type", "yarn"},
            {"factor", 16},
            {"original_max_position_embeddings", 65536},
            {"beta_fast", 32},
            {"beta_slow", 1}}},
          {"index_n_heads", 64},
          {"index_head_dim", 128},
          {"index_topk", 512},
          {"n_routed_experts", experts},
          {"n_shared_experts", 1},
          {"num_experts_per_tok", 6},
          {"moe_intermediate_size", 2048},
          {"num_hash_layers", std::min(layers, 3)},
          {"scoring_func", "sqrtsoftplus"},
          {"routed_scaling_factor", 1.5},
          {"swiglu_limit", 10.0},
          {"hc_mult", 4},
          {"num_nextn_predict_layers", 1},
          {"expert_dtype", "fp4"},
          {"quantization_config",
           {{"quant_method", "fp8"},
            {"fmt", "e4m3"},
            {"scale_fmt", "ue8m0"},
            {"activation_scheme", "dynamic"},
            {"weight_block_size", {128, 128}}}}};
}

bool fp8_role(const std::string& n) {
  for (const char* s :
       {".attn.wq_a.", ".attn.wq_b.", ".attn.wkv.", ".attn.wo_a.", ".attn.wo_b.", ".indexer.wq_b.", ".shared_experts."})
    if (n.find(s) != std::string::npos) return true;
  return false;
}
bool f32_role(const std::string& n) {
  return n.find("hc_") != std::string::npos || n.find(".ape") != std::string::npos ||
         n.find("attn_sink") != std::string::npos || n.find("gate.bias") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: synthetic_checkpoint OUT_DIR [layers=2] [experts=64] [shards=40]\n");
    return 2;
  }
  const std::string out = argv[1];
  const int layers = argc > 2 ? std::atoi(argv[2]) : 2, experts = argc > 3 ? std::atoi(argv[3]) : 64;
  const int shards = argc > 4 ? std::atoi(argv[4]) : 40;
  std::filesystem::create_directories(out);
  nlohmann::json cfg_json = flash_config(layers, experts);
  write_file_atomic(out + "/config.json", cfg_json.dump(1));
  const ModelConfig cfg = ModelConfig::parse(cfg_json);

  struct T {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
  };
  std::vector<T> all;
  uint64_t total = 0;
  for (const TensorSpec& s : expected_tensors(cfg)) {
    const bool expert = s.name.find(".ffn.experts.") != std::string::npos;
    if (s.role == TensorRole::kIndex) {
      all.push_back({s.name, DType::kI64, s.shape});
    } else if (expert) {
      all.push_back({s.name, DType::kI8, {s.shape[0], s.shape[1] / 2}});
      all.push_back({s.name.substr(0, s.name.size() - 7) + ".scale", DType::kF8E8M0,
                     block_scale_shape(s.shape[0], s.shape[1], 1, 32)});
    } else if (fp8_role(s.name)) {
      all.push_back({s.name, DType::kF8E4M3, s.shape});
      all.push_back({s.name.substr(0, s.name.size() - 7) + ".scale", DType::kF8E8M0,
                     block_scale_shape(s.shape[0], s.shape[1], 128, 128)});
    } else {
      all.push_back({s.name, f32_role(s.name) ? DType::kF32 : DType::kBF16, s.shape});
    }
  }
  for (const auto& t : all) {
    uint64_t n = dtype_size(t.dtype);
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    total += n;
  }
  // Greedy packing in order (a tensor larger than the target gets a shard of its own), counted first
  // so the file names carry the real shard count.
  const uint64_t per_shard = total / static_cast<uint64_t>(shards) + 1;
  std::vector<int> shard_of(all.size());
  int count = 0;
  uint64_t in_shard = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    uint64_t n = dtype_size(all[i].dtype);
    for (int64_t d : all[i].shape) n *= static_cast<uint64_t>(d);
    if (in_shard > 0 && in_shard + n > per_shard) {
      ++count;
      in_shard = 0;
    }
    shard_of[i] = count;
    in_shard += n;
  }
  const int written = count + 1;
  auto shard_name = [&](int i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", i + 1, written);
    return std::string(buf);
  };
  nlohmann::json map = nlohmann::json::object();
  SafetensorsWriter w;
  for (size_t i = 0; i < all.size(); ++i) {
    const T& t = all[i];
    uint64_t n = dtype_size(t.dtype);
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    std::string bytes(n, '\0');
    if (t.dtype == DType::kI64) {
      for (uint64_t k = 0; k < n / 8; ++k) bytes[8 * k] = static_cast<char>(k % 6);  // distinct expert ids per row
    } else if (t.dtype == DType::kF8E8M0) {
      for (auto& c : bytes) c = 127;
    } else {
      fill(bytes);
    }
    w.add(t.name, t.dtype, t.shape, bytes.data(), bytes.size());
    map[t.name] = shard_name(shard_of[i]);
    if (i + 1 == all.size() || shard_of[i + 1] != shard_of[i]) {
      w.write(out + "/" + shard_name(shard_of[i]));
      w = SafetensorsWriter();
    }
  }
  write_file_atomic(out + "/model.safetensors.index.json",
                    nlohmann::json({{"metadata", {{"total_size", total}}}, {"weight_map", map}}).dump(1));
  std::printf("%s: %d layers, %d experts, %zu tensors, %.3f GB in %d shards\n", out.c_str(), layers, experts,
              all.size(), total / 1e9, written);
  return 0;
}
