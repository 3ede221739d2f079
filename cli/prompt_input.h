// Text in and out for the commands that take --tokens (prefill, restore, gate): --prompt TEXT|@FILE
// (and --chat) encoded with the model folder's tokenizer.json instead of a token-id list, and the
// greedy continuation of a text prompt printed as text while it is generated.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "command.h"
#include "text/text_stream.h"
#include "text/tokenizer.h"

namespace memra::cli {

struct PromptInput {
  std::string prompt;  // --prompt: the text, or @FILE for a file's contents
  bool chat = false;   // --chat: wrap it in DeepSeek-V4's one-turn chat template
  bool given() const { return !prompt.empty(); }
};

// Adds --prompt and --chat to `sub`; --prompt excludes `tokens` (the command's --tokens option).
void add_prompt_options(CLI::App* sub, CLI::Option* tokens, PromptInput& in);

enum class PromptUse {
  kStart,         // a sequence from position 0: the tokenizer's post-processor adds its BOS
  kContinuation,  // continues a state (restore): no special tokens are added
};

// The ids to run: --tokens' list when `tokens_path` is set, else --prompt's text encoded with
// MODEL_DIR's tokenizer.json, else empty (or an Error when `required`).
std::vector<int32_t> prompt_tokens(const PromptInput& in, const std::string& tokens_path, const std::string& model_dir,
                                   PromptUse use, bool required, const Context& ctx);

// Streams generated ids as text to `out` (flushed per piece) when the prompt was text and the
// report is not JSON; inactive otherwise (the command prints ids as before).
class GeneratedText {
 public:
  GeneratedText(const PromptInput& in, const std::string& model_dir, bool json, std::ostream& out);
  bool active() const { return stream_ != nullptr; }
  std::function<void(int32_t)> on_token();  // empty when inactive
  void finish();                            // the held-back tail (and a newline on a terminal)
  // decode(ids) with MODEL_DIR's tokenizer (for --json's "text"); null when no text prompt.
  std::unique_ptr<std::string> text_of(const std::vector<int32_t>& ids) const;

 private:
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<TextStream> stream_;
  std::ostream& out_;
  bool newline_;
};

}  // namespace memra::cli
