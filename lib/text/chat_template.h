// DeepSeek-V4's chat template for one user turn in chat mode (docs/tokenizer.md): BOS, <｜User｜>,
// the text, <｜Assistant｜>, </think>. Used by `memra tokenize --chat` and `--prompt … --chat`.
#pragma once
#include <string>

#include "text/tokenizer.h"

namespace memra {

// Throws Error when the tokenizer lacks one of the template's tokens.
std::string chat_prompt(const Tokenizer& tok, const std::string& text);

}  // namespace memra
