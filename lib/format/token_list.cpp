// Token-list parsing and logits output for the prefill/restore commands.
#include "format/token_list.h"

#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/file_io.h"
#include "format/json_guard.h"
#include "format/npy.h"
#include "format/safetensors.h"

namespace memra {

std::vector<int32_t> parse_token_text(const std::string& text, const std::string& what) {
  std::vector<int32_t> out;
  size_t i = 0, n = text.size();
  while (i < n) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',') {
      ++i;
      continue;
    }
    if (c < '0' || c > '9')
      throw Error(what + ": unexpected character '" + std::string(1, c) + "' at byte " + std::to_string(i),
                  "token lists are decimal ids separated by whitespace or commas");
    int64_t v = 0;
    size_t start = i;
    while (i < n && text[i] >= '0' && text[i] <= '9') {
      v = v * 10 + (text[i] - '0');
      if (v > std::numeric_limits<int32_t>::max())
        throw Error(what + ": token id at byte " + std::to_string(start) + " is too large");
      ++i;
    }
    out.push_back(static_cast<int32_t>(v));
  }
  return out;
}

std::vector<int32_t> read_token_list(const std::string& path) {
  InputBytes in = InputBytes::open(path);
  static const char kNpyMagic[] = "\x93NUMPY";
  if (in.size() >= 6 && std::memcmp(in.data(), kNpyMagic, 6) == 0) {
    NpyArray a = parse_npy(in.data(), in.size(), path);
    std::vector<int64_t> ids = npy_to_ids(a, path);
    std::vector<int32_t> out;
    out.reserve(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] > std::numeric_limits<int32_t>::max())
        throw Error(path + ": token id " + std::to_string(ids[i]) + " at index " + std::to_string(i) + " is out of range");
      out.push_back(static_cast<int32_t>(ids[i]));
    }
    return out;
  }
  if (in.size() > (256u << 20)) throw Error(path + ": token list larger than 256 MiB");
  return parse_token_text(std::string(reinterpret_cast<const char*>(in.data()), in.size()), path);
}

static bool ends_with(const std::string& s, const std::string& ext) {
  return s.size() > ext.size() && s.compare(s.size() - ext.size(), ext.size(), ext) == 0;
}

void check_logits_path(const std::string& path) {
  if (path == "-" || ends_with(path, ".npy") || ends_with(path, ".safetensors")) return;
  throw Error("--logits " + printable(path) + ": the file name must end in .npy or .safetensors (it picks the format)",
              "name it e.g. logits.npy, or use - for .npy bytes on stdout");
}

void write_logits(const std::string& path, const std::vector<float>& logits, int64_t rows, int64_t vocab) {
  check_logits_path(path);
  const std::string ext = ".safetensors";
  if (path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0) {
    SafetensorsWriter w;
    w.add("logits", DType::kF32, {rows, vocab}, logits.data(), logits.size() * sizeof(float));
    w.write(path);
  } else {
    write_npy_f32(path, logits.data(), {rows, vocab});
  }
}

}  // namespace memra
