// The end-of-sequence tokens a model folder declares, where transformers looks for them:
// generation_config.json's eos_token_id when that file has the field, else config.json's. Either an
// integer or a list of integers (DeepSeek-V4 ships `1`); absent or null means none. Generation
// (prefill --generate, restore --steps, draft) stops after emitting one unless --ignore-eos.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace memra {

// The declared ids (each in [0, vocab_size), duplicates removed, in the order given); empty when
// the folder declares none. Throws Error naming the file and field when a value is not an integer
// id or lies outside the vocabulary, or when generation_config.json is not valid JSON.
std::vector<int32_t> load_eos_token_ids(const std::string& model_dir, int64_t vocab_size);

}  // namespace memra
