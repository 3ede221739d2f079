// Guarded JSON parsing for text read from files (safetensors headers, config.json, index files,
// manifests). nlohmann::json is only fed bounded, valid UTF-8 with a bounded nesting depth, and
// duplicate object keys (which nlohmann would silently collapse) are an error.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace memra {

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
// On false, *bad_offset (when given) is the offset of the first bad byte.
bool valid_utf8(std::string_view text, size_t* bad_offset = nullptr);

// Parses `text` as JSON; throws Error("<what> is ...") when it is larger than max_bytes, not UTF-8,
// nested deeper than max_depth, not valid JSON, or (when asked) has a duplicate key in any object.
nlohmann::json parse_json_guarded(std::string_view text, const std::string& what, bool reject_duplicate_keys = true,
                                  size_t max_bytes = 100u << 20, int max_depth = 64);

// Text taken from a file or a command line, made safe for a one-line message: control bytes (ESC,
// NUL, newlines, DEL) and bytes that are not valid UTF-8 become \xNN, and what is past max_bytes
// of output is cut with "...". Every memra error message goes through it (cli/main.cpp).
std::string printable(std::string_view text, size_t max_bytes = 200);

// Reads a JSON file (at most max_bytes) through parse_json_guarded.
nlohmann::json read_json_file(const std::string& path, size_t max_bytes = 64u << 20);

}  // namespace memra
