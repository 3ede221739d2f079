// safetensors reading and writing. The reader treats every byte as hostile: the header length,
// the JSON text (UTF-8, nesting depth, size), every dtype, shape and data offset are checked before
// anything is dereferenced, and each failure is a one-line Error naming the file and the tensor.
#include "format/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/checked.h"
#include "core/error.h"
#include "format/json_guard.h"

namespace memra {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // 100 MB of JSON at most
constexpr uint64_t kMaxElements = 1ull << 40;       // per tensor; the model loader is stricter

struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::kF64, "F64", 8},  {DType::kF32, "F32", 4}, {DType::kF16, "F16", 2}, {DType::kBF16, "BF16", 2},
    {DType::kI64, "I64", 8},  {DType::kI32, "I32", 4}, {DType::kI16, "I16", 2}, {DType::kI8, "I8", 1},
    {DType::kU8, "U8", 1},    {DType::kBool, "BOOL", 1}, {DType::kF8E4M3, "F8_E4M3", 1}, {DType::kF8E5M2, "F8_E5M2", 1},
    {DType::kF8E8M0, "F8_E8M0", 1},
};

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A JSON number that is a non-negative integer that fits in uint64.
bool json_u64(const nlohmann::json& j, uint64_t* out) {
  if (j.is_number_unsigned()) {
    *out = j.get<uint64_t>();
    return true;
  }
  if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    if (v < 0) return false;
    *out = static_cast<uint64_t>(v);
    return true;
  }
  return false;
}

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

size_t dtype_size(DType dtype) {
  for (const auto& d : kDTypes)
    if (d.dtype == dtype) return d.size;
  return 0;
}

const char* dtype_name(DType dtype) {
  for (const auto& d : kDTypes)
    if (d.dtype == dtype) return d.name;
  return "?";
}

bool parse_dtype(std::string_view name, DType* out) {
  for (const auto& d : kDTypes) {
    if (name == d.name) {
      *out = d.dtype;
      return true;
    }
  }
  return false;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  auto stream = StdinReader::open_stream(path);
  if (!stream) return parse(InputBytes::open(path));
  return parse(read_stream(*stream, path == "-" ? "stdin" : path, stdin_limit()));
}

InputBytes SafetensorsFile::read_stream(StdinReader& in, const std::string& name, uint64_t max_bytes) {
  // Header first: the length (8 bytes), then the JSON it announces, then only the data the JSON
  // describes. A bad length, a bad header or a data section larger than max_bytes fails before any
  // more is read, so `cat /dev/zero | memra snapshot -` stops after 8 bytes.
  std::vector<uint8_t> bytes;
  auto done = [&] { return InputBytes::from_buffer(name, std::move(bytes)); };
  if (in.read(bytes, 8) < 8) return done();
  const uint64_t header_len = read_u64_le(bytes.data());
  if (header_len < 2 || header_len > kMaxHeaderBytes) return done();  // parse() names the problem
  if (in.read(bytes, static_cast<size_t>(header_len)) < header_len) return done();
  uint64_t data_end = 0;
  try {
    std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), header_len);
    const nlohmann::json header = parse_json_guarded(text, name + ": header", true);
    if (header.is_object())
      for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == "__metadata__" || !it->is_object() || !it->contains("data_offsets")) continue;
        const nlohmann::json& off = (*it)["data_offsets"];
        uint64_t end = 0;
        if (off.is_array() && off.size() == 2 && json_u64(off[1], &end)) data_end = std::max(data_end, end);
      }
  } catch (const Error&) {
    return done();  // parse() reports the header's problem
  }
  if (data_end > max_bytes)
    throw Error(name + ": the header describes " + std::to_string(data_end) + " bytes of data, more than the " +
                    std::to_string(max_bytes) + " memra buffers from a stream",
                "write it to a file and pass the path (files are mapped, not buffered), or raise --max-memory");
  in.read(bytes, static_cast<size_t>(data_end));
  // One byte past the described data tells a reader that needs an exact end (state files) that
  // there is more; plain safetensors readers ignore trailing bytes.
  if (!in.at_end()) in.read(bytes, 1);
  return done();
}

SafetensorsFile SafetensorsFile::parse(InputBytes bytes) {
  const std::string where = bytes.path().empty() ? std::string("safetensors input") : bytes.path() == "-" ? std::string("stdin") : bytes.path();
  const std::string hint = "the file is not a valid safetensors file; re-export or re-download it";
  const size_t size = bytes.size();
  if (size < 8)
    throw Error(where + ": " + std::to_string(size) + " bytes is too short for a safetensors header", hint);
  const uint64_t header_len = read_u64_le(bytes.data());
  if (header_len > kMaxHeaderBytes)
    throw Error(where + ": header length " + std::to_string(header_len) + " exceeds the " +
                    std::to_string(kMaxHeaderBytes) + "-byte limit",
                hint);
  if (header_len > size - 8)
    throw Error(where + ": header length " + std::to_string(header_len) + " runs past the end of the file (" +
                    std::to_string(size) + " bytes)",
                hint);
  if (header_len < 2) throw Error(where + ": header of " + std::to_string(header_len) + " bytes is not a JSON object", hint);

  std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), header_len);
  nlohmann::json header = parse_json_guarded(text, where + ": header", /*reject_duplicate_keys=*/true);
  if (!header.is_object()) throw Error(where + ": header is not a JSON object", hint);

  SafetensorsFile file;
  file.header_size_ = header_len;
  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = size - data_start;
  const uint8_t* data = bytes.data() + data_start;

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) throw Error(where + ": __metadata__ is not an object", hint);
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string()) throw Error(where + ": __metadata__." + m.key() + " is not a string", hint);
        file.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string tw = where + ": tensor " + printable(name);
    if (name.empty()) throw Error(where + ": a tensor has an empty name", hint);
    if (!entry.is_object()) throw Error(tw + " entry is not an object", hint);
    auto dt = entry.find("dtype");
    auto sh = entry.find("shape");
    auto off = entry.find("data_offsets");
    if (dt == entry.end() || !dt->is_string()) throw Error(tw + " has no dtype string", hint);
    if (sh == entry.end() || !sh->is_array()) throw Error(tw + " has no shape array", hint);
    if (off == entry.end() || !off->is_array()) throw Error(tw + " has no data_offsets array", hint);

    TensorView t;
    t.name = name;
    const std::string dname = dt->get<std::string>();
    if (!parse_dtype(dname, &t.dtype)) throw Error(tw + " has unknown dtype '" + printable(dname) + "'", hint);
    if (sh->size() > 16) throw Error(tw + " has " + std::to_string(sh->size()) + " dimensions (at most 16)", hint);
    uint64_t numel = 1;
    for (const auto& d : *sh) {
      uint64_t v;
      if (!json_u64(d, &v) || v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw Error(tw + " has a shape entry that is not a non-negative integer", hint);
      uint64_t next;
      if (!mul_fits(numel, v, &next) || next > kMaxElements)
        throw Error(tw + " shape product overflows (more than " + std::to_string(kMaxElements) + " elements)", hint);
      numel = next;
      t.shape.push_back(static_cast<int64_t>(v));
    }
    t.numel = numel;
    uint64_t begin = 0, end = 0;
    if (off->size() != 2 || !json_u64((*off)[0], &begin) || !json_u64((*off)[1], &end))
      throw Error(tw + " data_offsets is not a pair of non-negative integers", hint);
    if (begin > end)
      throw Error(tw + " data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] are reversed", hint);
    if (end > data_size)
      throw Error(tw + " data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                      "] are out of range (data section is " + std::to_string(data_size) + " bytes)",
                  hint);
    const uint64_t nbytes = end - begin;
    const uint64_t need = mul_checked(numel, static_cast<uint64_t>(dtype_size(t.dtype)), tw + " byte size");
    if (nbytes != need)
      throw Error(tw + " holds " + std::to_string(nbytes) + " bytes but shape and dtype " + printable(dname) + " need " +
                      std::to_string(need),
                  hint);
    t.data_begin = begin;
    t.nbytes = static_cast<size_t>(nbytes);
    t.data = data + begin;
    file.tensors_.push_back(std::move(t));
  }

  std::sort(file.tensors_.begin(), file.tensors_.end(), [](const TensorView& a, const TensorView& b) {
    return a.data_begin != b.data_begin ? a.data_begin < b.data_begin : a.nbytes < b.nbytes;
  });
  // Gaps are allowed, overlap is not (empty tensors overlap nothing).
  uint64_t prev_end = 0;
  const TensorView* prev = nullptr;
  for (const auto& t : file.tensors_) {
    if (t.nbytes == 0) continue;
    if (prev && t.data_begin < prev_end)
      throw Error(where + ": tensors " + printable(prev->name) + " and " + printable(t.name) + " have overlapping data_offsets", hint);
    prev_end = t.data_begin + t.nbytes;
    prev = &t;
  }
  file.bytes_ = std::move(bytes);
  // The views point into the mapping (or the owned buffer, whose heap storage moved with it).
  const uint8_t* base = file.bytes_.data() + data_start;
  for (auto& t : file.tensors_) t.data = base + t.data_begin;
  return file;
}

const TensorView* SafetensorsFile::find(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

const TensorView& SafetensorsFile::get(std::string_view name) const {
  const TensorView* t = find(name);
  if (!t) throw Error(path() + ": no tensor named " + std::string(name));
  return *t;
}

std::vector<float> tensor_to_f32(const TensorView& t) {
  std::vector<float> out(t.numel);
  const uint8_t* p = t.data;
  switch (t.dtype) {
    case DType::kF32:
      if (t.numel) std::memcpy(out.data(), p, t.numel * 4);
      break;
    case DType::kBF16:
      for (uint64_t i = 0; i < t.numel; ++i) {
        uint32_t bits = static_cast<uint32_t>(p[2 * i] | (p[2 * i + 1] << 8)) << 16;
        std::memcpy(&out[i], &bits, 4);
      }
      break;
    case DType::kF16:
      for (uint64_t i = 0; i < t.numel; ++i) out[i] = half_to_float(static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
      break;
    case DType::kF64:
      for (uint64_t i = 0; i < t.numel; ++i) {
        double d;
        std::memcpy(&d, p + 8 * i, 8);
        out[i] = static_cast<float>(d);
      }
      break;
    default:
      throw Error("tensor " + t.name + " has dtype " + dtype_name(t.dtype) + ", expected a float dtype (F32, BF16, F16, F64)");
  }
  return out;
}

std::vector<int64_t> tensor_to_i64(const TensorView& t) {
  std::vector<int64_t> out(t.numel);
  const uint8_t* p = t.data;
  for (uint64_t i = 0; i < t.numel; ++i) {
    switch (t.dtype) {
      case DType::kI64: {
        int64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        out[i] = v;
        break;
      }
      case DType::kI32: {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = v;
        break;
      }
      case DType::kI16: {
        int16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        out[i] = v;
        break;
      }
      case DType::kI8:
        out[i] = static_cast<int8_t>(p[i]);
        break;
      case DType::kU8:
        out[i] = p[i];
        break;
      default:
        throw Error("tensor " + t.name + " has dtype " + dtype_name(t.dtype) + ", expected an integer dtype (I64, I32, I16, I8, U8)");
    }
  }
  return out;
}

void SafetensorsWriter::add(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                            const void* data, size_t nbytes) {
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0 || !mul_fits(numel, static_cast<uint64_t>(d), &numel) || numel > kMaxElements)
      throw Error("tensor " + name + " has an invalid shape");
  }
  const uint64_t need = mul_checked(numel, static_cast<uint64_t>(dtype_size(dtype)), "tensor " + name + " byte size");
  if (need != nbytes)
    throw Error("tensor " + name + ": " + std::to_string(nbytes) + " bytes given, shape and dtype need " + std::to_string(need));
  if (name == "__metadata__" || name.empty()) throw Error("tensor name '" + name + "' is reserved or empty");
  for (const auto& it : items_)
    if (it.name == name) throw Error("tensor " + name + " added twice");
  items_.push_back({name, dtype, shape, std::string(static_cast<const char*>(data), nbytes)});
}

std::string SafetensorsWriter::serialize() const {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& it : items_) {
    header[it.name] = {{"dtype", dtype_name(it.dtype)},
                       {"shape", it.shape},
                       {"data_offsets", {offset, offset + it.bytes.size()}}};
    offset += it.bytes.size();
  }
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += text;
  for (const auto& it : items_) out += it.bytes;
  return out;
}

void SafetensorsWriter::write(const std::string& path) const { write_file_atomic(path, serialize()); }

}  // namespace memra
