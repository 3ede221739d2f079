// The tokenizer: lossy UTF-8 and the \s rewrite by hand; the committed fixture tokenizers
// (models/tiny, models/tiny-bf16: trained by tools/oracle/train_tokenizer.py with DeepSeek-V3's
// pre-tokenizer) load with the bundled model's vocabulary; and encode/decode agree token for token
// with the `tokenizers` library (tools/oracle/tokenizer_cases.py, run in the oracle venv by the test)
// over a few hundred strings — fixed and random: Unicode scripts, marks, emoji, whitespace runs,
// digits, code, special tokens, invalid UTF-8 — for both fixtures and a GPT-2-style tokenizer.
#include "text/tokenizer.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "format/json_guard.h"
#include "loader_test_util.h"
#include "oracle_python.h"
#include "text/regex.h"
#include "text/utf8.h"

using namespace memra;
using loader_test::require_error;
using loader_test::TempDir;
using loader_test::write_bytes;

namespace {

const std::string kModels = MEMRA_FIXTURES;

std::string b64decode(const std::string& in) {
  static const std::string chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -8;
  for (char c : in) {
    size_t p = chars.find(c);
    if (p == std::string::npos) break;  // '=' padding
    val = (val << 6) + static_cast<int>(p);
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((val >> bits) & 0xFF));
      bits -= 8;
    }
  }
  return out;
}

void check_against_oracle(const std::string& python, const std::string& tokenizer_json) {
  bool ok = true;
  std::string script = "import runpy, sys; sys.argv = [\"tokenizer_cases.py\", \"" + tokenizer_json +
                       "\"]; runpy.run_path(\"" + std::string(MEMRA_SOURCE_DIR) +
                       "/tools/oracle/tokenizer_cases.py\", run_name=\"__main__\")";
  const std::string out = oracle_test::run_python(python, script, &ok);
  INFO("tokenizer_cases.py output: " << out.substr(0, 2000));
  REQUIRE(ok);
  const nlohmann::json doc = nlohmann::json::parse(out);
  const Tokenizer tok = Tokenizer::load(tokenizer_json);
  size_t n = 0, with_invalid = 0, with_special = 0;
  for (const auto& c : doc["cases"]) {
    const std::string raw = b64decode(c["bytes"].get<std::string>());
    size_t replaced = 0;
    const std::string text = utf8_lossy(raw, &replaced);
    with_invalid += replaced > 0;
    INFO(tokenizer_json << ": input " << nlohmann::json(text).dump());
    CHECK(tok.pre_tokenize(text) == c["pieces"].get<std::vector<std::string>>());  // the regex engine, piece by piece
    const std::vector<int32_t> ids = tok.encode(text);
    CHECK(ids == c["ids"].get<std::vector<int32_t>>());
    CHECK(tok.encode(text, false) == c["ids_plain"].get<std::vector<int32_t>>());
    CHECK(tok.decode(c["ids"].get<std::vector<int32_t>>()) == c["text"].get<std::string>());
    CHECK(tok.decode(c["ids"].get<std::vector<int32_t>>(), false) == c["text_all"].get<std::string>());
    with_special += c["text"] != c["text_all"];
    ++n;
  }
  size_t unknown_total = 0;
  for (const auto& d : doc["decodes"]) {
    const auto ids = d["ids"].get<std::vector<int32_t>>();
    INFO(tokenizer_json << ": decode " << d["ids"].dump());
    size_t unknown = 0;
    CHECK(tok.decode(ids, true, &unknown) == d["text"].get<std::string>());
    CHECK(tok.decode(ids, false) == d["text_all"].get<std::string>());
    unknown_total += unknown;
  }
  // The comparison covered what it claims to.
  CHECK(n >= 300);
  CHECK(with_invalid >= 20);
  CHECK(with_special >= 3);
  CHECK(unknown_total > 0);
  CHECK(doc["decodes"].size() >= 200);
}

}  // namespace

TEST_CASE("tokenizer: lossy UTF-8 replaces maximal ill-formed subparts", "[cpu][tokenizer]") {
  const std::string fffd = "\xEF\xBF\xBD";
  size_t n = 0;
  CHECK(utf8_lossy("plain \xC3\xA9 \xF0\x9F\x98\x80", &n) == "plain \xC3\xA9 \xF0\x9F\x98\x80");
  CHECK(n == 0);
  CHECK(utf8_lossy("\xFF", &n) == fffd);
  CHECK(utf8_lossy("a\xC0\xAF"
                   "b",
                   &n) == "a" + fffd + fffd + "b");  // C0 never starts a sequence
  CHECK(n == 2);
  CHECK(utf8_lossy("\xE6\x97", &n) == fffd);  // truncated: one U+FFFD for the valid prefix
  CHECK(n == 1);
  CHECK(utf8_lossy("\xE6\x97x") == fffd + "x");
  CHECK(utf8_lossy("\xED\xA0\x80") == fffd + fffd + fffd);             // a surrogate: ED A0 is not a valid prefix
  CHECK(utf8_lossy("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);  // above U+10FFFF
  CHECK(utf8_lossy("\xE0\x80\x80") == fffd + fffd + fffd);             // overlong
  CHECK(utf8_lossy("\xF0\x9F\x98") == fffd);
  CHECK(utf8_lossy("\x80\x80") == fffd + fffd);
}

TEST_CASE("tokenizer: the whitespace class gets U+0085 as in Oniguruma, classes and escapes are kept", "[cpu][tokenizer]") {
  CHECK(oniguruma_compatible("\\s+(?!\\S)") == "[\\s\\x{85}]+(?![^\\s\\x{85}])");
  const std::string L = oniguruma_compatible("\\p{L}");  // \p{L} plus the letters assigned after Unicode 14
  CHECK(L.rfind("[\\p{L}\\x{1C89}-\\x{1C8A}\\x{A7CB}-\\x{A7CD}", 0) == 0);
  CHECK(L.back() == ']');
  CHECK(oniguruma_compatible("[^\\s\\p{Lu}]") == "[^\\s\\x{85}\\p{Lu}]");  // two-letter classes are left alone
  CHECK(oniguruma_compatible("[^\\p{S}]").rfind("[^\\p{S}\\x{", 0) == 0);
  CHECK(oniguruma_compatible("[\\]\\s]x") == "[\\]\\s\\x{85}]x");
  CHECK(oniguruma_compatible("[]\\s]") == "[]\\s\\x{85}]");  // a leading ']' is literal
  CHECK(oniguruma_compatible("\\\\s") == "\\\\s");           // an escaped backslash, then 's'
  Regex r = Regex::compile("\\s+", "test");
  auto m = r.find_all(
      "a\xC2\x85"
      "b\xE2\x80\x83"
      "c");  // U+0085, U+2003
  REQUIRE(m.size() == 2);
  CHECK(m[0] == std::make_pair<size_t, size_t>(1, 3));
  CHECK(m[1] == std::make_pair<size_t, size_t>(4, 7));
  // 🛜 U+1F6DC (Unicode 15) is a symbol for tokenizers, unassigned in PCRE2 10.42's tables.
  auto sym = Regex::compile("[\\p{P}\\p{S}]+", "test")
                 .find_all(
                     "a\xF0\x9F\x9B\x9C\xF0\x9F\x98\x80"
                     "b");
  REQUIRE(sym.size() == 1);
  CHECK(sym[0] == std::make_pair<size_t, size_t>(1, 9));
  require_error([] { Regex::compile("(unclosed", "pattern of test"); }, {"pattern of test", "(unclosed", "offset"});
}

TEST_CASE("tokenizer: the fixture tokenizers match the bundled models' vocabularies", "[cpu][tokenizer]") {
  for (const char* m : {"tiny", "tiny-bf16"}) {
    INFO(m);
    const Tokenizer tok = Tokenizer::load(kModels + "/" + m);
    const nlohmann::json cfg = read_json_file(kModels + "/" + m + "/config.json");
    CHECK(tok.id_limit() == cfg["vocab_size"].get<int64_t>());
    CHECK(tok.token_to_id("<｜begin▁of▁sentence｜>") == cfg["bos_token_id"].get<int32_t>());
    CHECK(tok.token_to_id("<｜end▁of▁sentence｜>") == cfg["eos_token_id"].get<int32_t>());
    for (const char* t : {"<｜User｜>", "<｜Assistant｜>", "<think>", "</think>"})
      CHECK(tok.token_to_id(t).has_value());
    // The pre-tokenizer is DeepSeek-V3's: digits in threes, CJK runs apart, then words.
    CHECK(tok.pre_tokenize("abc12345日本x") == std::vector<std::string>{"abc", "123", "45", "æĹ¥æľ¬", "x"});
    const auto ids = tok.encode("Hello, world! 123");
    CHECK(tok.decode(ids) == "Hello, world! 123");
  }
  // tiny: no post-processor (the V4 chat template writes the BOS); tiny-bf16: a BOS template (V3).
  CHECK(Tokenizer::load(kModels + "/tiny").encode("hi").front() != 0);
  CHECK(Tokenizer::load(kModels + "/tiny-bf16").encode("hi").front() == 0);
  CHECK(Tokenizer::load(kModels + "/tiny-bf16").encode("hi", false).front() != 0);
}

TEST_CASE("tokenizer: unsupported or damaged tokenizer.json files are refused by name", "[cpu][tokenizer]") {
  const nlohmann::json base = read_json_file(kModels + "/tiny/tokenizer.json");
  TempDir dir;
  const std::string f = dir.file("tokenizer.json");
  auto refused = [&](const std::function<void(nlohmann::json&)>& mutate, std::initializer_list<std::string> needles) {
    nlohmann::json j = base;
    mutate(j);
    write_bytes(f, j.dump());
    require_error([&] { Tokenizer::load(f); }, needles);
  };
  refused([](nlohmann::json& j) { j["normalizer"] = {{"type", "NFC"}}; }, {"normalizer", "NFC"});
  refused([](nlohmann::json& j) { j["model"]["type"] = "WordPiece"; }, {"model is not BPE"});
  refused([](nlohmann::json& j) { j["model"]["byte_fallback"] = true; }, {"byte_fallback"});
  refused([](nlohmann::json& j) { j["model"]["dropout"] = 0.1; }, {"dropout"});
  refused([](nlohmann::json& j) { j["pre_tokenizer"]["pretokenizers"][0]["type"] = "Digits"; },
          {"pretokenizers[0]", "Digits"});
  refused([](nlohmann::json& j) { j["pre_tokenizer"]["pretokenizers"][1]["behavior"] = "MergedWithNext"; },
          {"MergedWithNext"});
  refused([](nlohmann::json& j) { j["pre_tokenizer"]["pretokenizers"][2]["pattern"]["Regex"] = "[a-"; },
          {"pretokenizers[2]", "[a-"});
  refused([](nlohmann::json& j) { j["decoder"] = {{"type", "WordPiece"}}; }, {"decoder", "WordPiece"});
  refused([](nlohmann::json& j) { j["model"]["merges"][0] = "a b c"; }, {"merges[0]"});
  refused(
      [](nlohmann::json& j) {
        j["model"]["merges"][0] = nlohmann::json::array({"zz", "qq"});
      },
      {"merges[0]", "lacks"});
  refused([](nlohmann::json& j) { j["added_tokens"][3]["single_word"] = true; }, {"added_tokens[3]", "single_word"});
  refused([](nlohmann::json& j) { j["post_processor"] = {{"type", "RobertaProcessing"}}; }, {"RobertaProcessing"});
  refused([](nlohmann::json& j) { j["truncation"] = {{"max_length", 8}}; }, {"truncation"});
  require_error([&] { Tokenizer::load(dir.file("nothing")); }, {"nothing"});
  require_error([&] { Tokenizer::load(kModels); }, {"no tokenizer.json"});
}

TEST_CASE("tokenizer: encode and decode equal the tokenizers library over a few hundred strings",
          "[cpu][tokenizer][oracle]") {
  const std::string py = oracle_test::venv_python();
  if (py.empty()) {
    WARN(
        "SKIPPED: no oracle venv (run tools/oracle/setup-venv.sh or set MEMRA_VENV); the tokenizers library is the "
        "reference");
    return;
  }
  bool ok = true;
  oracle_test::run_python(py, "import tokenizers", &ok);
  if (!ok) {
    WARN(
        "SKIPPED: the oracle venv has no tokenizers package (pinned in tools/oracle/requirements.txt; rerun "
        "setup-venv.sh)");
    return;
  }
  check_against_oracle(py, kModels + "/tiny/tokenizer.json");
  check_against_oracle(py, kModels + "/tiny-bf16/tokenizer.json");
  TempDir dir;
  const std::string gpt2 = dir.file("gpt2.json");
  oracle_test::run_python(py,
                          "import runpy, sys; sys.argv = [\"x\", \"--train-gpt2\", \"" + gpt2 +
                              "\"]; runpy.run_path(\"" + std::string(MEMRA_SOURCE_DIR) +
                              "/tools/oracle/tokenizer_cases.py\", run_name=\"__main__\")",
                          &ok);
  REQUIRE(ok);
  check_against_oracle(py, gpt2);
}
