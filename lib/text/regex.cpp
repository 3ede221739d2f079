// PCRE2 wrapper for the tokenizer's Split patterns (JIT when available).
#include "text/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdio>
#include <string_view>

#include "core/error.h"
#include "format/json_guard.h"

namespace memra {

namespace {

struct UnicodePatchRange {
  char cls;
  char32_t lo, hi;
};
#include "text/unicode_patch.inc"

// The extra ranges of a one-letter class, spelled for inside a character class: \x{..}-\x{..}…
std::string patch_ranges(char cls) {
  std::string out;
  char buf[48];
  for (const auto& r : kUnicodePatch) {
    if (r.cls != cls) continue;
    std::snprintf(buf, sizeof buf, "\\x{%X}-\\x{%X}", static_cast<unsigned>(r.lo), static_cast<unsigned>(r.hi));
    out += buf;
  }
  return out;
}

}  // namespace

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

std::string oniguruma_compatible(const std::string& p) {
  std::string out;
  bool in_class = false;
  size_t class_start = 0;  // offset in `out` just after '[' or '[^'
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 's') {
        out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (e == 'S' && !in_class) {
        out += "[^\\s\\x{85}]";
      } else if (e == 'p' && i + 4 < p.size() && p[i + 2] == '{' && p[i + 4] == '}' &&
                 std::string_view("LMNPS").find(p[i + 3]) != std::string_view::npos) {
        const std::string cls = p.substr(i, 5) + patch_ranges(p[i + 3]);  // \p{X} + newer code points
        out += in_class ? cls : "[" + cls + "]";
        i += 4;
        continue;
      } else {
        out.append(p, i, 2);
      }
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      class_start = out.size();
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:]
      size_t end = p.find(":]", i + 2);
      if (end != std::string::npos) {
        out.append(p, i, end + 2 - i);
        i = end + 1;
        continue;
      }
    }
    if (in_class && c == ']' && out.size() > class_start) in_class = false;  // a leading ']' is literal
    out.push_back(c);
  }
  return out;
}

Regex Regex::compile(const std::string& pattern, const std::string& what, bool literal) {
  Regex r;
  r.pattern_ = literal ? pattern : oniguruma_compatible(pattern);
  int err = 0;
  PCRE2_SIZE at = 0;
  uint32_t options = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0);
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(r.pattern_.data()), r.pattern_.size(), options, &err, &at, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(what + ": pattern " + printable(pattern) + " does not compile at offset " + std::to_string(at) + ": " +
                    reinterpret_cast<const char*>(msg),
                "the tokenizer.json is damaged or uses regex syntax memra's engine (PCRE2) does not read");
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: the interpreter gives the same matches
  auto holder = std::make_shared<Code>();
  holder->code = code;
  r.code_ = std::move(holder);
  return r;
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  if (!md) throw std::bad_alloc();
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), start,
                               PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(std::string("regex match failed: ") + reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t b = ov[0], e = ov[1];
    if (e > b) {
      out.emplace_back(b, e);
      start = e;
    } else {  // empty match: step over one code point
      if (b >= text.size()) break;
      size_t next = b + 1;
      while (next < text.size() && (static_cast<uint8_t>(text[next]) & 0xC0) == 0x80) ++next;
      start = next;
    }
  }
  pcre2_match_data_free(md);
  return out;
}

}  // namespace memra
