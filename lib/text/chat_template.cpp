// DeepSeek-V4's one-turn chat template (chat_template.h).
#include "text/chat_template.h"

#include "core/error.h"

namespace memra {

std::string chat_prompt(const Tokenizer& tok, const std::string& text) {
  const char* parts[] = {"<｜begin▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "</think>"};
  for (const char* p : parts)
    if (!tok.token_to_id(p))
      throw Error(std::string("--chat: the tokenizer has no ") + p + " token",
                  "use a DeepSeek-V4 tokenizer.json, or drop --chat");
  return std::string(parts[0]) + parts[1] + text + parts[2] + parts[3];
}

}  // namespace memra
