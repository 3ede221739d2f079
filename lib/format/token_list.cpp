// Token-list parsing (text streamed in pieces, or .npy with its header checked before its data)
// and logits output for the prefill/restore commands.
#include "format/token_list.h"

#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/file_io.h"
#include "format/json_guard.h"
#include "format/npy.h"
#include "format/safetensors.h"

namespace memra {

namespace {

const char* kTextHint = "token lists are decimal ids separated by whitespace or commas";

[[noreturn]] void too_many(const std::string& what, const TokenListLimits& limits) {
  throw Error(what + " has more than " + std::to_string(limits.max_tokens) + " tokens" +
                  (limits.why.empty() ? std::string() : ", " + limits.why),
              limits.hint.empty() ? "give fewer tokens" : limits.hint);
}

// Decimal ids separated by whitespace or commas, fed in pieces of any size.
class TextParser {
 public:
  TextParser(std::string what, const TokenListLimits& limits) : what_(std::move(what)), limits_(limits) {}

  void feed(const char* p, size_t n) {
    for (size_t i = 0; i < n; ++i, ++offset_) {
      const char c = p[i];
      if (c >= '0' && c <= '9') {
        if (!in_number_) {
          in_number_ = true;
          value_ = 0;
          start_ = offset_;
        }
        value_ = value_ * 10 + (c - '0');
        if (value_ > std::numeric_limits<int32_t>::max())
          throw Error(what_ + ": token id at byte " + std::to_string(start_) + " is too large (more than 2^31 - 1)", kTextHint);
        continue;
      }
      end_number();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',') continue;
      throw Error(what_ + ": unexpected byte '" + printable(std::string_view(&p[i], 1)) + "' at byte " +
                      std::to_string(offset_),
                  kTextHint);
    }
  }

  std::vector<int32_t> finish() {
    end_number();
    return std::move(out_);
  }

 private:
  void end_number() {
    if (!in_number_) return;
    in_number_ = false;
    if (static_cast<int64_t>(out_.size()) >= limits_.max_tokens) too_many(what_, limits_);
    out_.push_back(static_cast<int32_t>(value_));
    if (limits_.on_progress && (out_.size() & ((1u << 20) - 1)) == 0) limits_.on_progress(static_cast<int64_t>(out_.size()));
  }

  std::string what_;
  const TokenListLimits& limits_;
  std::vector<int32_t> out_;
  bool in_number_ = false;
  int64_t value_ = 0;
  uint64_t start_ = 0, offset_ = 0;
};

std::vector<int32_t> ids_to_tokens(const std::vector<int64_t>& ids, const std::string& what) {
  std::vector<int32_t> out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] > std::numeric_limits<int32_t>::max())
      throw Error(what + ": token id " + std::to_string(ids[i]) + " at index " + std::to_string(i) + " is out of range");
    out.push_back(static_cast<int32_t>(ids[i]));
  }
  return out;
}

// A .npy list whose first bytes (`head`, at least the preamble) are already read from `in`.
std::vector<int32_t> read_npy_stream(StdinReader& in, std::vector<uint8_t> head, const std::string& what,
                                     const TokenListLimits& limits) {
  // The header is at most 1 MiB + 12: read until it parses or that much is in.
  NpyHeader h;
  for (;;) {
    try {
      h = parse_npy_header(head.data(), head.size(), what);
      break;
    } catch (const Error&) {
      if (head.size() > (1u << 20) + 12 || in.read(head, 4096) == 0) throw;
    }
  }
  if (h.shape.size() != 1)
    throw Error(what + " has " + std::to_string(h.shape.size()) + " dimensions, expected a 1-D token list");
  if (static_cast<int64_t>(h.numel) > limits.max_tokens) too_many(what, limits);
  if (h.data_bytes + h.data_offset > head.size()) in.read(head, static_cast<size_t>(h.data_bytes + h.data_offset - head.size()));
  if (head.size() == h.data_bytes + h.data_offset && !in.at_end()) in.read(head, 1);  // parse_npy reports the excess
  return ids_to_tokens(npy_to_ids(parse_npy(head.data(), head.size(), what), what), what);
}

}  // namespace

std::vector<int32_t> parse_token_text(const std::string& text, const std::string& what, const TokenListLimits& limits) {
  TextParser p(what, limits);
  p.feed(text.data(), text.size());
  return p.finish();
}

std::vector<int32_t> read_token_stream(StdinReader& in, const std::string& what, const TokenListLimits& limits) {
  static const char kNpyMagic[] = "\x93NUMPY";
  std::vector<uint8_t> buf;
  in.read(buf, 12);
  if (buf.size() >= 6 && std::memcmp(buf.data(), kNpyMagic, 6) == 0) return read_npy_stream(in, std::move(buf), what, limits);
  TextParser p(what, limits);
  while (!buf.empty()) {
    p.feed(reinterpret_cast<const char*>(buf.data()), buf.size());
    buf.clear();
    in.read(buf, 1u << 16);
  }
  return p.finish();
}

std::vector<int32_t> parse_token_bytes(const uint8_t* data, size_t size, const std::string& what,
                                       const TokenListLimits& limits) {
  static const char kNpyMagic[] = "\x93NUMPY";
  if (size >= 6 && std::memcmp(data, kNpyMagic, 6) == 0) {
    const NpyHeader h = parse_npy_header(data, size, what);
    if (h.shape.size() != 1)
      throw Error(what + " has " + std::to_string(h.shape.size()) + " dimensions, expected a 1-D token list");
    if (static_cast<int64_t>(h.numel) > limits.max_tokens) too_many(what, limits);
    return ids_to_tokens(npy_to_ids(parse_npy(data, size, what), what), what);
  }
  TextParser p(what, limits);  // parsed in place: no copy of the text
  p.feed(reinterpret_cast<const char*>(data), size);
  return p.finish();
}

std::vector<int32_t> read_token_list(const std::string& path, const TokenListLimits& limits) {
  if (auto stream = StdinReader::open_stream(path)) return read_token_stream(*stream, path == "-" ? "stdin" : path, limits);
  InputBytes in = InputBytes::open(path);
  return parse_token_bytes(in.data(), in.size(), path, limits);
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
