// safetensors reading (hostile-input safe) and writing.
// Layout: u64 little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets:[b,e]},
// "__metadata__": {str: str}}, then the data section. Every size and offset is checked: header past
// EOF, offsets out of range or overlapping, shape products that overflow or disagree with the byte
// range, unknown dtypes, non-UTF8 or oversized JSON are each a one-line Error (exit 2).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_io.h"

namespace memra {

// F8_E4M3 / F8_E5M2 / F8_E8M0: the FP8 codes and ue8m0 scale bytes of quantised checkpoints
// (decoded in format/quant.h, never widened by tensor_to_f32).
enum class DType { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool, kF8E4M3, kF8E5M2, kF8E8M0 };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);                  // safetensors spelling: "F32", "BF16", ...
bool parse_dtype(std::string_view name, DType* out);  // false when unknown

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t numel = 0;
  const uint8_t* data = nullptr;  // points into the file's bytes
  size_t nbytes = 0;
  uint64_t data_begin = 0;  // offset within the data section
};

class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);    // `-` reads stdin; throws Error
  static SafetensorsFile parse(InputBytes bytes);           // throws Error
  // Reads one safetensors file from a stream, header first (see open): the bytes parse() needs,
  // never more than 8 + header + max_bytes of data + 1.
  static InputBytes read_stream(StdinReader& in, const std::string& name, uint64_t max_bytes);
  const std::vector<TensorView>& tensors() const { return tensors_; }  // in data-offset order
  const TensorView* find(std::string_view name) const;
  const TensorView& get(std::string_view name) const;  // throws Error naming the tensor
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return bytes_.path(); }
  size_t header_size() const { return header_size_; }  // bytes of JSON
  const InputBytes& bytes() const { return bytes_; }

 private:
  InputBytes bytes_;
  size_t header_size_ = 0;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Converts F32/BF16/F16/F64 to f32 (throws Error for other dtypes).
std::vector<float> tensor_to_f32(const TensorView& t);
// Converts I64/I32/I16/I8/U8 to int64 (throws Error for other dtypes).
std::vector<int64_t> tensor_to_i64(const TensorView& t);

// Collects tensors and metadata, writes a valid safetensors file (8-byte aligned header,
// tensors in the order added). Data is copied at add() time.
class SafetensorsWriter {
 public:
  void add(const std::string& name, DType dtype, const std::vector<int64_t>& shape, const void* data,
           size_t nbytes);  // throws Error when nbytes disagrees with the shape
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  std::string serialize() const;
  void write(const std::string& path) const;  // atomic; `-` = stdout

 private:
  struct Item {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::string bytes;
  };
  std::vector<Item> items_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace memra
