// Byte-level BPE from a Hugging Face tokenizer.json, as DeepSeek-V3/V4 ship it: added (special)
// tokens split out first, no normalizer, a pre_tokenizer Sequence of Split regexes then ByteLevel,
// a BPE model (merges by rank, leftmost first), an optional TemplateProcessing post-processor (the
// BOS), and the ByteLevel decoder. Encoding and decoding follow the `tokenizers` library token for
// token (checked against it by test/tokenizer_test.cpp); docs/tokenizer.md says what is read and
// what is refused.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memra {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;     // skipped by decode(skip_special_tokens = true)
  bool lstrip = false;      // the match absorbs whitespace on its left
  bool rstrip = false;      // ... and on its right
  bool normalized = false;  // matched after normalisation (memra reads no normalizer: same text)
};

class Tokenizer {
 public:
  // PATH: a tokenizer.json file, or a folder holding one. Throws Error naming the file and the
  // part memra does not read (normalizers, other pre-tokenizers or models, byte fallback, dropout…).
  static Tokenizer load(const std::string& path);
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // `text` must be valid UTF-8 (utf8_lossy() makes any bytes so). add_special_tokens applies the
  // post-processor (e.g. the BOS), as tokenizers' encode(text, add_special_tokens=True) does.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // Ids → text; ids the vocabulary lacks are skipped (as tokenizers does; *unknown counts them);
  // bytes that do not form UTF-8 become U+FFFD (maximal subparts).
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = true, size_t* unknown = nullptr) const;
  // The bytes decode() reads as UTF-8, before the lossy step (a token may end inside a character;
  // a streaming printer holds such a tail back: text_stream.h).
  std::string decode_bytes(const std::vector<int32_t>& ids, bool skip_special_tokens = true,
                           size_t* unknown = nullptr) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  int64_t id_limit() const;  // highest id + 1 (compare with the model's vocab_size)
  const std::vector<AddedToken>& added_tokens() const;
  const std::string& path() const;
  // The pre-tokenizer's pieces of a text (after ByteLevel: its byte-level spelling), for tests.
  std::vector<std::string> pre_tokenize(std::string_view text) const;

 private:
  Tokenizer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memra
