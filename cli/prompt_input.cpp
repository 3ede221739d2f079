// --prompt/--chat and the streamed text continuation (prompt_input.h).
#include "prompt_input.h"

#include <unistd.h>

#include <iostream>

#include "core/error.h"
#include "core/file_io.h"
#include "format/token_list.h"
#include "text/chat_template.h"
#include "text/utf8.h"

namespace memra::cli {

void add_prompt_options(CLI::App* sub, CLI::Option* tokens, PromptInput& in) {
  auto* prompt = sub->add_option("--prompt", in.prompt,
                                 "Prompt text, or @FILE for a file's contents, encoded with MODEL's tokenizer.json "
                                 "(instead of --tokens); a greedy continuation then prints as text")
                     ->type_name("TEXT|@FILE");
  tokens->excludes(prompt);
  sub->add_flag("--chat", in.chat, "Wrap --prompt in DeepSeek-V4's chat template (BOS, <｜User｜>, <｜Assistant｜></think>)")
      ->needs(prompt);
}

std::vector<int32_t> prompt_tokens(const PromptInput& in, const std::string& tokens_path, const std::string& model_dir,
                                   PromptUse use, bool required, const Context& ctx) {
  if (!tokens_path.empty()) return read_token_list(tokens_path);
  if (!in.given()) {
    if (required) throw Error("no prompt given", "pass --tokens FILE (token ids) or --prompt TEXT|@FILE");
    return {};
  }
  const std::string raw = in.prompt[0] == '@' ? read_text_file(in.prompt.substr(1), 1u << 30) : in.prompt;
  size_t replaced = 0;
  std::string text = utf8_lossy(raw, &replaced);
  if (replaced > 0)
    note(ctx, "--prompt is not valid UTF-8: " + std::to_string(replaced) + " ill-formed sequence(s) read as U+FFFD");
  const Tokenizer tok = Tokenizer::load(model_dir);
  if (in.chat) text = chat_prompt(tok, text);
  std::vector<int32_t> ids = tok.encode(text, use == PromptUse::kStart);
  if (ids.empty()) throw Error("--prompt encodes to no tokens", "give a non-empty prompt");
  return ids;
}

GeneratedText::GeneratedText(const PromptInput& in, const std::string& model_dir, bool json, std::ostream& out)
    : out_(out), newline_(&out == &std::cout ? isatty(1) : isatty(2)) {
  if (!in.given()) return;
  tok_ = std::make_unique<Tokenizer>(Tokenizer::load(model_dir));
  if (!json) stream_ = std::make_unique<TextStream>(*tok_);
}

std::function<void(int32_t)> GeneratedText::on_token() {
  if (!stream_) return {};
  return [this](int32_t id) { out_ << stream_->push(id) << std::flush; };
}

void GeneratedText::finish() {
  // A terminal gets a final newline; a pipe gets the text's exact bytes.
  if (stream_) out_ << stream_->finish() << (newline_ ? "\n" : "") << std::flush;
}

std::unique_ptr<std::string> GeneratedText::text_of(const std::vector<int32_t>& ids) const {
  return tok_ ? std::make_unique<std::string>(tok_->decode(ids)) : nullptr;
}

}  // namespace memra::cli
