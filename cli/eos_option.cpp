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

}  // namespace memra::cli
