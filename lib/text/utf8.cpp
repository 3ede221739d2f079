// UTF-8 lossy decoding (maximal-subpart substitution), code point iteration, White_Space.
#include "text/utf8.h"

namespace memra {

namespace {

// Well-formed sequences (Unicode Table 3-7): the allowed range of the second byte depends on the first.
struct Lead {
  int more;          // continuation bytes that follow
  uint8_t lo2, hi2;  // range of the second byte
};

Lead lead_of(uint8_t b) {
  if (b >= 0xC2 && b <= 0xDF) return {1, 0x80, 0xBF};
  if (b == 0xE0) return {2, 0xA0, 0xBF};
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return {2, 0x80, 0xBF};
  if (b == 0xED) return {2, 0x80, 0x9F};  // no surrogates
  if (b == 0xF0) return {3, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {3, 0x80, 0xBF};
  if (b == 0xF4) return {3, 0x80, 0x8F};  // nothing above U+10FFFF
  return {-1, 0, 0};                      // 0x80..0xC1, 0xF5..0xFF: never valid
}

}  // namespace

std::string utf8_lossy(std::string_view s, size_t* replaced) {
  std::string out;
  out.reserve(s.size());
  size_t count = 0, i = 0;
  const size_t n = s.size();
  while (i < n) {
    const uint8_t b = static_cast<uint8_t>(s[i]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    const Lead l = lead_of(b);
    if (l.more < 0) {
      out += "\xEF\xBF\xBD";
      ++count;
      ++i;
      continue;
    }
    int k = 1;  // bytes of the sequence that are valid so far
    for (; k <= l.more; ++k) {
      if (i + k >= n) break;
      const uint8_t c = static_cast<uint8_t>(s[i + k]);
      const uint8_t lo = k == 1 ? l.lo2 : 0x80, hi = k == 1 ? l.hi2 : 0xBF;
      if (c < lo || c > hi) break;
    }
    if (k == l.more + 1) {
      out.append(s.substr(i, k));
    } else {
      out += "\xEF\xBF\xBD";  // one U+FFFD for the maximal valid prefix
      ++count;
    }
    i += k;
  }
  if (replaced) *replaced = count;
  return out;
}

char32_t utf8_next(std::string_view s, size_t& i) {
  const uint8_t b = static_cast<uint8_t>(s[i]);
  if (b < 0x80) {
    ++i;
    return b;
  }
  int more = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : 1;
  char32_t cp = b & (0x3F >> more);
  for (int k = 1; k <= more && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  i += static_cast<size_t>(more) + 1;
  return cp;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_unicode_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace memra
