// --ignore-eos for the commands that generate (prefill --generate, restore --steps, draft): by
// default generation stops after the model folder's end-of-sequence token (model/generation_config.h);
// --ignore-eos generates the full count, as benchmarks and gates need.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace memra::cli {

void add_ignore_eos_option(CLI::App* sub, bool& ignore_eos);

// The ids that stop generation: none with --ignore-eos, else the folder's declared EOS ids.
std::vector<int32_t> eos_stop_tokens(bool ignore_eos, const std::string& model_dir, int64_t vocab_size);

// The JSON reports' finish_reason: "eos" when the last generated token is a stop id, else "length".
std::string finish_reason(const std::vector<int32_t>& generated, const std::vector<int32_t>& stop);

// The note when generation ended early at an EOS: "generation stopped at end-of-sequence token T
// after N of M UNIT (--ignore-eos generates them all)"; empty when all `requested` were generated.
std::string eos_stop_note(const std::vector<int32_t>& generated, int64_t requested, const char* unit);

}  // namespace memra::cli
