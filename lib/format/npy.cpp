// .npy reading (hostile-safe) and f32 writing. Format: "\x93NUMPY", major, minor, header length
// (u16 for 1.0, u32 for 2.0/3.0), an ASCII Python dict {'descr', 'fortran_order', 'shape'} padded
// with spaces and a newline so the data starts on a 64-byte boundary, then the raw array bytes.
#include "format/npy.h"

#include <cstring>
#include <limits>

#include "core/checked.h"
#include "core/error.h"
#include "core/file_io.h"
#include "format/json_guard.h"

namespace memra {

namespace {

constexpr uint64_t kMaxNpyElements = 1ull << 40;
constexpr size_t kMaxNpyHeader = 1u << 20;

size_t descr_size(const std::string& d) {
  if (d == "<f4" || d == "<i4") return 4;
  if (d == "<f8" || d == "<i8") return 8;
  if (d == "|i1" || d == "|u1") return 1;
  return 0;
}

// Parser for the header dict, a small subset of Python literal syntax.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& what) : s_(text), what_(what) {}

  void parse(std::string* descr, bool* fortran, std::vector<int64_t>* shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip();
    expect('{');
    for (;;) {
      skip();
      if (peek() == '}') {
        ++i_;
        break;
      }
      std::string key = string_lit();
      skip();
      expect(':');
      skip();
      if (key == "descr") {
        *descr = string_lit();
        have_descr = true;
      } else if (key == "fortran_order") {
        *fortran = bool_lit();
        have_fortran = true;
      } else if (key == "shape") {
        *shape = tuple_lit();
        have_shape = true;
      } else {
        fail("has unknown header key '" + printable(key) + "'");
      }
      skip();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip();
      expect('}');
      break;
    }
    skip();
    if (i_ != s_.size()) fail("has trailing bytes after the header dict");
    if (!have_descr || !have_fortran || !have_shape) fail("header lacks descr, fortran_order or shape");
  }

 private:
  [[noreturn]] void fail(const std::string& msg) { throw Error(what_ + " " + msg, "the file is not a valid .npy file"); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("header dict is malformed (expected '") + c + "')");
    ++i_;
  }
  std::string string_lit() {
    char q = peek();
    if (q != '\'' && q != '"') fail("header dict is malformed (expected a string)");
    ++i_;
    size_t start = i_;
    while (i_ < s_.size() && s_[i_] != q) ++i_;
    if (i_ >= s_.size()) fail("header dict has an unterminated string");
    std::string out(s_.substr(start, i_ - start));
    ++i_;
    return out;
  }
  bool bool_lit() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    fail("header fortran_order is not True or False");
  }
  std::vector<int64_t> tuple_lit() {
    std::vector<int64_t> out;
    expect('(');
    for (;;) {
      skip();
      if (peek() == ')') {
        ++i_;
        return out;
      }
      if (peek() < '0' || peek() > '9') fail("header shape is not a tuple of non-negative integers");
      uint64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (!mul_fits(v, 10u, &v) || !add_fits(v, static_cast<uint64_t>(peek() - '0'), &v) ||
            v > kMaxNpyElements)
          fail("header shape entry is too large");
        ++i_;
      }
      out.push_back(static_cast<int64_t>(v));
      if (out.size() > 16) fail("header shape has more than 16 dimensions");
      skip();
      if (peek() == ',') ++i_;
      else if (peek() != ')') fail("header shape is malformed");
    }
  }

  std::string_view s_;
  std::string what_;
  size_t i_ = 0;
};

}  // namespace

std::string serialize_npy_f32(const float* data, const std::vector<int64_t>& shape) {
  uint64_t numel = 1;
  std::string dims;
  for (int64_t d : shape) {
    if (d < 0 || !mul_fits(numel, static_cast<uint64_t>(d), &numel) || numel > kMaxNpyElements)
      throw Error("npy: invalid shape for an f32 array");
    dims += std::to_string(d) + ", ";
  }
  if (shape.size() > 1) dims.resize(dims.size() - 1);  // "(3, 4)" vs "(3,)"
  if (shape.size() > 1) dims.resize(dims.size() - 1);
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  if (shape.size() == 1) dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(shape[0]) + ",), }";
  bool v2 = dict.size() + 10 + 1 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(v2 ? 2 : 1);
  out.push_back(0);
  uint32_t hl = static_cast<uint32_t>(dict.size());
  out.push_back(static_cast<char>(hl & 0xff));
  out.push_back(static_cast<char>((hl >> 8) & 0xff));
  if (v2) {
    out.push_back(static_cast<char>((hl >> 16) & 0xff));
    out.push_back(static_cast<char>((hl >> 24) & 0xff));
  }
  out += dict;
  size_t header_end = out.size();
  out.resize(elements_checked(static_cast<int64_t>(add_checked(header_end, mul_checked(numel, uint64_t{4}, "npy data"), "npy file")),
                              1, "npy file"));
  for (uint64_t i = 0; i < numel; ++i) {  // little-endian regardless of host
    uint32_t bits;
    std::memcpy(&bits, data + i, 4);
    for (int b = 0; b < 4; ++b) out[header_end + 4 * i + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  return out;
}

void write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& shape) {
  write_file_atomic(path, serialize_npy_f32(data, shape));
}

NpyHeader parse_npy_header(const uint8_t* bytes, size_t size, const std::string& what) {
  const std::string hint = "the file is not a valid .npy file";
  if (size < 10 || std::memcmp(bytes, "\x93NUMPY", 6) != 0) throw Error(what + " is not a .npy file (bad magic)", hint);
  uint8_t major = bytes[6];
  size_t prefix;
  uint64_t header_len;
  if (major == 1) {
    prefix = 10;
    header_len = bytes[8] | (bytes[9] << 8);
  } else if (major == 2 || major == 3) {
    if (size < 12) throw Error(what + " is truncated inside the .npy preamble", hint);
    prefix = 12;
    header_len = static_cast<uint64_t>(bytes[8]) | (static_cast<uint64_t>(bytes[9]) << 8) |
                 (static_cast<uint64_t>(bytes[10]) << 16) | (static_cast<uint64_t>(bytes[11]) << 24);
  } else {
    throw Error(what + " has unsupported .npy version " + std::to_string(major), hint);
  }
  if (header_len > kMaxNpyHeader) throw Error(what + " has a .npy header of " + std::to_string(header_len) + " bytes (limit 1 MiB)", hint);
  if (header_len > size - prefix)
    throw Error(what + " .npy header length " + std::to_string(header_len) + " runs past the end of the file", hint);
  std::string_view header(reinterpret_cast<const char*>(bytes + prefix), header_len);
  for (char c : header)
    if (static_cast<unsigned char>(c) >= 0x80 || c == '\0') throw Error(what + " .npy header is not ASCII", hint);

  NpyHeader h;
  bool fortran = false;
  DictParser(header, what).parse(&h.descr, &fortran, &h.shape);
  h.item_size = descr_size(h.descr);
  if (h.item_size == 0)
    throw Error(what + " has unsupported dtype '" + printable(h.descr) + "' (expected <f4, <f8, <i4, <i8, |i1 or |u1)", hint);
  if (fortran && h.shape.size() > 1) throw Error(what + " is stored in Fortran order; save it C-contiguous", hint);
  uint64_t numel = 1;
  for (int64_t d : h.shape)
    if (!mul_fits(numel, static_cast<uint64_t>(d), &numel) || numel > kMaxNpyElements)
      throw Error(what + " shape product overflows", hint);
  h.numel = numel;
  h.data_offset = prefix + header_len;
  h.data_bytes = mul_checked(numel, static_cast<uint64_t>(h.item_size), what + " data size");
  return h;
}

NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& what) {
  const NpyHeader h = parse_npy_header(bytes, size, what);
  const uint64_t data_size = size - h.data_offset;
  if (data_size != h.data_bytes)
    throw Error(what + " holds " + std::to_string(data_size) + " data bytes but its shape and dtype need " +
                    std::to_string(h.data_bytes),
                "the file is not a valid .npy file");
  NpyArray a;
  a.descr = h.descr;
  a.shape = h.shape;
  a.numel = h.numel;
  a.data.assign(bytes + h.data_offset, bytes + size);
  return a;
}

NpyArray read_npy(const std::string& path) {
  InputBytes in = InputBytes::open(path);
  return parse_npy(in.data(), in.size(), path);
}

std::vector<int64_t> npy_to_ids(const NpyArray& a, const std::string& what) {
  if (a.shape.size() != 1)
    throw Error(what + " has " + std::to_string(a.shape.size()) + " dimensions, expected a 1-D token list");
  std::vector<int64_t> out(a.numel);
  if (a.descr == "<i4") {
    for (uint64_t i = 0; i < a.numel; ++i) {
      uint32_t u = 0;
      for (int b = 3; b >= 0; --b) u = (u << 8) | a.data[4 * i + b];
      out[i] = static_cast<int32_t>(u);
    }
  } else if (a.descr == "<i8") {
    for (uint64_t i = 0; i < a.numel; ++i) {
      uint64_t u = 0;
      for (int b = 7; b >= 0; --b) u = (u << 8) | a.data[8 * i + b];
      out[i] = static_cast<int64_t>(u);
    }
  } else {
    throw Error(what + " has dtype " + a.descr + ", expected int32 (<i4) or int64 (<i8) token ids");
  }
  return out;
}

std::vector<int64_t> read_npy_ids(const std::string& path) { return npy_to_ids(read_npy(path), path); }

std::vector<float> npy_to_f32(const NpyArray& a, const std::string& what) {
  std::vector<float> out(a.numel);
  if (a.descr == "<f4") {
    for (uint64_t i = 0; i < a.numel; ++i) {
      uint32_t u = 0;
      for (int b = 3; b >= 0; --b) u = (u << 8) | a.data[4 * i + b];
      std::memcpy(&out[i], &u, 4);
    }
  } else if (a.descr == "<f8") {
    for (uint64_t i = 0; i < a.numel; ++i) {
      uint64_t u = 0;
      for (int b = 7; b >= 0; --b) u = (u << 8) | a.data[8 * i + b];
      double d;
      std::memcpy(&d, &u, 8);
      out[i] = static_cast<float>(d);
    }
  } else {
    throw Error(what + " has dtype " + a.descr + ", expected a float array (<f4 or <f8)");
  }
  return out;
}

}  // namespace memra
