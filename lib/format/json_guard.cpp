// Guarded JSON parsing: size cap, UTF-8 check, depth cap and duplicate keys before/while nlohmann parses.
#include "format/json_guard.h"

#include <cstdio>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"

namespace memra {

bool valid_utf8(std::string_view text, size_t* bad_offset) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      if (bad_offset) *bad_offset = i;
      return false;
    }
    if (n - i < len) {
      if (bad_offset) *bad_offset = i;
      return false;
    }
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) {
        if (bad_offset) *bad_offset = i;
        return false;
      }
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      if (bad_offset) *bad_offset = i;
      return false;
    }
    i += len;
  }
  return true;
}

nlohmann::json parse_json_guarded(std::string_view text, const std::string& what, bool reject_duplicate_keys,
                                  size_t max_bytes, int max_depth) {
  if (text.size() > max_bytes)
    throw Error(what + " is " + std::to_string(text.size()) + " bytes of JSON, more than the " +
                std::to_string(max_bytes) + " allowed");
  size_t bad = 0;
  if (!valid_utf8(text, &bad)) throw Error(what + " is not valid UTF-8 (byte offset " + std::to_string(bad) + ")");
  // Nesting depth outside strings; nlohmann would otherwise build arbitrarily deep trees.
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > max_depth) throw Error(what + " nests JSON deeper than " + std::to_string(max_depth) + " levels");
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::string duplicate;
  nlohmann::json::parser_callback_t cb = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) keys.emplace_back();
    else if (event == E::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == E::key && reject_duplicate_keys && !keys.empty() && duplicate.empty()) {
      std::string k = parsed.get<std::string>();
      if (!keys.back().insert(k).second) duplicate = k;
    }
    return true;
  };
  nlohmann::json out;
  try {
    out = nlohmann::json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true);
  } catch (const nlohmann::json::exception& e) {
    std::string msg = e.what();
    for (char& ch : msg)
      if (ch == '\n' || ch == '\r') ch = ' ';
    throw Error(what + " is not valid JSON: " + msg);
  }
  if (!duplicate.empty()) throw Error(what + " has a duplicate key \"" + printable(duplicate) + "\"");
  return out;
}

std::string printable(std::string_view text, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < text.size() && out.size() < max_bytes) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = 1;
    if (c >= 0x80) {  // keep a valid UTF-8 sequence whole, escape anything else byte by byte
      size_t bad = 0;
      len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
      if (len == 0 || i + len > text.size() || !valid_utf8(text.substr(i, len), &bad)) len = 0;
    }
    if (c < 0x20 || c == 0x7f || len == 0) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  if (i < text.size()) out += "...";
  return out;
}

nlohmann::json read_json_file(const std::string& path, size_t max_bytes) {
  std::string text = read_text_file(path, max_bytes);
  return parse_json_guarded(text, path, true, max_bytes);
}

}  // namespace memra
