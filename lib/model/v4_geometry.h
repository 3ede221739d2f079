// DeepSeek-V4-Flash's layer geometry as a config (architecture note §1; issue 13's benchmark
// geometry): hidden 4096, 64 heads × 512 (rope 64), q_lora 1024, o_groups 8 × o_lora 1024, window
// 128, CSA 4 / HCA 128 with a 64 × 128 indexer choosing 512 entries, 256 experts top-6 + 1 shared
// of width 2048, hc_mult 4. The layer kinds come as codes (S sliding, C CSA, H HCA); every layer
// routes by learned scores (the released model's first 3 hash-routed layers are left out: their
// cost is the same). `memra bench` builds models of this geometry with synthetic weights, the GPU
// bandwidth test uses the full 43-layer schedule for a state of V4-Flash's layout.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/config.h"

namespace memra {

// V4-Flash's 43 main layers: S S C H C H … C (layers 0, 1 sliding; even 2..42 CSA; odd 3..41 HCA).
std::string v4_flash_schedule();

// The config (transformers' DeepseekV4Config form, what ModelConfig::parse reads) for `layer_codes`
// and `vocab_size`. Throws Error on an empty schedule or a code other than S, C, H.
nlohmann::json v4_flash_config_json(const std::string& layer_codes, int64_t vocab_size);
ModelConfig v4_flash_config(const std::string& layer_codes, int64_t vocab_size);

}  // namespace memra
