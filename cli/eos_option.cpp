// --ignore-eos and the stop ids of generation (eos_option.h).
#include "eos_option.h"

#include <algorithm>

#include "model/generation_config.h"

namespace memra::cli {

void add_ignore_eos_option(CLI::App* sub, bool& ignore_eos) {
  sub->add_flag("--ignore-eos", ignore_eos,
                "Generate the full count: do not stop at the model's end-of-sequence token "
                "(generation_config.json / config.json eos_token_id)");
}

std::vector<int32_t> eos_stop_tokens(bool ignore_eos, const std::string& model_dir, int64_t vocab_size) {
  if (ignore_eos) return {};
  return load_eos_token_ids(model_dir, vocab_size);
}

std::string finish_reason(const std::vector<int32_t>& generated, const std::vector<int32_t>& stop) {
  const bool eos = !generated.empty() && std::find(stop.begin(), stop.end(), generated.back()) != stop.end();
  return eos ? "eos" : "length";
}

std::string eos_stop_note(const std::vector<int32_t>& generated, int64_t requested, const char* unit) {
  if (generated.empty() || static_cast<int64_t>(generated.size()) >= requested) return "";
  return "generation stopped at end-of-sequence token " + std::to_string(generated.back()) + " after " +
         std::to_string(generated.size()) + " of " + std::to_string(requested) + " " + unit +
         " (--ignore-eos generates them all)";
}

}  // namespace memra::cli
