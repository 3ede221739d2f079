// Streaming decode (text_stream.h). Each push re-decodes the ids so far (decode is a concatenation
// per token, so the bytes only grow) and returns the new complete part. Splitting the bytes where
// no character is open leaves utf8_lossy's maximal-subpart decisions unchanged, so the pieces add
// up to decode() of the whole list.
#include "text/text_stream.h"

#include "text/utf8.h"

namespace memra {

size_t utf8_incomplete_tail(const std::string& bytes) {
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto lead = static_cast<unsigned char>(bytes[n - back]);
    if ((lead & 0xC0) == 0x80) continue;  // a continuation byte: look further back for the lead
    size_t need = 0;
    if (lead >= 0xC2 && lead <= 0xDF) need = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) need = 3;
    else if (lead >= 0xF0 && lead <= 0xF4) need = 4;
    if (need <= back) return 0;  // ASCII, an invalid lead, or a sequence already long enough
    // The bytes after the lead must be continuations, the second within the lead's range (§3.9).
    for (size_t i = 1; i < back; ++i) {
      const auto c = static_cast<unsigned char>(bytes[n - back + i]);
      unsigned char lo = 0x80, hi = 0xBF;
      if (i == 1) {
        if (lead == 0xE0) lo = 0xA0;
        if (lead == 0xED) hi = 0x9F;
        if (lead == 0xF0) lo = 0x90;
        if (lead == 0xF4) hi = 0x8F;
      }
      if (c < lo || c > hi) return 0;
    }
    return back;
  }
  return 0;
}

std::string TextStream::push(int32_t id) {
  ids_.push_back(id);
  const std::string bytes = tok_.decode_bytes(ids_, skip_special_);
  const size_t end = bytes.size() - utf8_incomplete_tail(bytes);
  if (end <= emitted_) return {};
  std::string out = utf8_lossy(std::string_view(bytes).substr(emitted_, end - emitted_));
  emitted_ = end;
  return out;
}

std::string TextStream::finish() {
  const std::string bytes = tok_.decode_bytes(ids_, skip_special_);
  std::string out = utf8_lossy(std::string_view(bytes).substr(emitted_));
  emitted_ = bytes.size();
  return out;
}

}  // namespace memra
