// UTF-8 helpers for the tokenizer: lossy decoding of byte strings (what Rust's from_utf8_lossy and
// Python's bytes.decode("utf-8", "replace") do), code point iteration, and the Unicode White_Space
// property (what Rust's char::is_whitespace and Oniguruma's \s use).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace memra {

// Replaces every maximal ill-formed subsequence by U+FFFD (Unicode §3.9 "substitution of maximal
// subparts", the WHATWG decoder); valid UTF-8 comes back unchanged. *replaced (when given) counts
// the U+FFFD inserted.
std::string utf8_lossy(std::string_view bytes, size_t* replaced = nullptr);

// The code point starting at s[i] (s must be valid UTF-8); advances i past it.
char32_t utf8_next(std::string_view s, size_t& i);
void utf8_append(std::string& out, char32_t cp);

bool is_unicode_whitespace(char32_t cp);  // White_Space: \t..\r, space, U+0085, U+00A0, U+1680, ...

}  // namespace memra
