// Generated ids → text as they come, for printing while a model generates: each push() returns the
// text the new id completes. A token may end inside a multi-byte character (byte-level BPE splits
// characters), so an incomplete UTF-8 tail is held back until the bytes that finish it arrive, and
// finish() returns what is left (U+FFFD for a tail that never completed). The concatenation of
// every push() and finish() equals Tokenizer::decode() of all the ids (test/text_stream_test.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace memra {

class TextStream {
 public:
  explicit TextStream(const Tokenizer& tokenizer, bool skip_special_tokens = true)
      : tok_(tokenizer), skip_special_(skip_special_tokens) {}
  std::string push(int32_t id);
  std::string finish();
  const std::vector<int32_t>& ids() const { return ids_; }

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  size_t emitted_ = 0;  // bytes of decode_bytes(ids_) already returned
};

// Length of the longest suffix of `bytes` that is an incomplete but still completable UTF-8
// sequence (0..3): the part a streaming printer must hold back.
size_t utf8_incomplete_tail(const std::string& bytes);

}  // namespace memra
