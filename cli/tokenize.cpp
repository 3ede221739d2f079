// memra tokenize: text → token ids and ids → text with a model folder's tokenizer.json (byte-level
// BPE as DeepSeek ships it; lib/text/tokenizer.h). Ids come out in the token-list format --tokens
// reads, so `memra tokenize M "text" > t.txt && memra prefill M --tokens t.txt` works.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "format/json_guard.h"
#include "format/token_list.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace memra::cli {

namespace {

struct TokenizeOptions {
  std::string path;
  std::string input;
  bool decode = false;
  bool json = false;
  bool no_special = false;
  bool keep_special = false;
  bool chat = false;
};

// INPUT: literal text, @FILE (its bytes) or - (stdin).
std::string read_input(const std::string& input) {
  if (input == "-") return read_text_file("-", 1u << 30);
  if (!input.empty() && input[0] == '@') return read_text_file(input.substr(1), 1u << 30);
  return input;
}

int run_tokenize(const TokenizeOptions& opt, const Context& ctx) {
  Tokenizer tok = Tokenizer::load(opt.path);
  const std::string raw = read_input(opt.input);
  if (opt.decode) {
    const bool named = opt.input == "-" || (!opt.input.empty() && opt.input[0] == '@');
    const std::vector<int32_t> ids = parse_token_text(raw, named ? opt.input : std::string("INPUT"));
    size_t unknown = 0;
    const std::string text = tok.decode(ids, !opt.keep_special, &unknown);
    if (unknown > 0)
      note(ctx,
           std::to_string(unknown) + " id(s) outside the tokenizer's vocabulary were skipped (as tokenizers does)");
    if (opt.json) {
      std::cout << nlohmann::json({{"text", text}, {"ids", ids.size()}, {"unknown_ids", unknown}}).dump(2) << "\n";
    } else {
      std::cout << text;
      if (isatty(1)) std::cout << "\n";
    }
    return kExitOk;
  }
  size_t replaced = 0;
  std::string text = utf8_lossy(raw, &replaced);
  if (replaced > 0)
    note(ctx, "the input is not valid UTF-8: " + std::to_string(replaced) + " ill-formed sequence(s) read as U+FFFD");
  if (opt.chat) text = chat_prompt(tok, text);
  const std::vector<int32_t> ids = tok.encode(text, !opt.no_special);
  if (opt.json) {
    nlohmann::json tokens = nlohmann::json::array();
    for (int32_t id : ids) tokens.push_back(printable(tok.id_to_token(id).value_or("")));
    std::cout << nlohmann::json({{"ids", ids}, {"tokens", tokens}, {"count", ids.size()}}).dump(2) << "\n";
  } else {
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
    std::cout << line << "\n";
  }
  return kExitOk;
}

}  // namespace

void setup_tokenize(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<TokenizeOptions>();
  auto* sub = app.add_subcommand("tokenize", "Text to token ids (or ids to text) with a model's tokenizer.json");
  sub->footer(
      "PATH is a model folder holding tokenizer.json, or the file itself (byte-level BPE as DeepSeek\n"
      "ships it: Split regexes with Unicode classes, ByteLevel, BPE, optional BOS template).\n"
      "INPUT is the text itself, @FILE for a file's contents, or - for stdin. Text that is not valid\n"
      "UTF-8 is read with U+FFFD for each ill-formed sequence (a note says so).\n"
      "Encoding prints the ids on one line, separated by spaces (the format --tokens reads); --json\n"
      "prints {ids, tokens, count}. The post-processor's special tokens (a BOS template) are added\n"
      "unless --no-special. --chat wraps the text in DeepSeek-V4's chat template for one user turn:\n"
      "<｜begin▁of▁sentence｜><｜User｜>TEXT<｜Assistant｜></think>.\n"
      "--decode reads ids (decimal, separated by whitespace or commas) and prints the text; special\n"
      "tokens are dropped unless --keep-special, ids outside the vocabulary are skipped (a note counts\n"
      "them), and bytes that do not form UTF-8 come out as U+FFFD, as the tokenizers library does.\n"
      "Exit codes: 0 done; 2 usage error, unreadable or unsupported tokenizer.json, bad ids.");
  sub->add_option("PATH", opt->path, "Model folder with tokenizer.json, or a tokenizer.json")->required();
  sub->add_option("INPUT", opt->input, "Text, @FILE, or - for stdin (ids with --decode)")->required();
  auto* decode = sub->add_flag("--decode", opt->decode, "INPUT is token ids; print the text");
  sub->add_flag("--json", opt->json, "Print one JSON document");
  sub->add_flag("--no-special", opt->no_special, "Encode without the post-processor's special tokens (no BOS template)")
      ->excludes(decode);
  sub->add_flag("--keep-special", opt->keep_special, "Decode special tokens too")->needs(decode);
  sub->add_flag("--chat", opt->chat,
                "Wrap the text in DeepSeek-V4's chat template (BOS, <｜User｜>, <｜Assistant｜></think>)")
      ->excludes(decode);
  sub->callback([opt, &ctx] { ctx.run = [opt, &ctx] { return run_tokenize(*opt, ctx); }; });
}

}  // namespace memra::cli
