// NumPy .npy files: what the parity tools exchange with Python. memra writes f32 arrays (logits
// [T, V]) atomically and reads 1-D int32/int64 arrays (token lists). The reader is hostile-input safe:
// magic, version, header length, the header dict, dtype, shape and the data size are all checked.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memra {

// Writes `data` (row-major, product of shape elements) as a little-endian '<f4' .npy, version 1.0
// (2.0 when the header would not fit). Atomic; `-` = stdout. Throws Error.
void write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& shape);
std::string serialize_npy_f32(const float* data, const std::vector<int64_t>& shape);

struct NpyArray {
  std::string descr;           // '<f4', '<i4', '<i8', ...
  std::vector<int64_t> shape;  // C order
  uint64_t numel = 0;
  std::vector<uint8_t> data;   // numel * item size bytes, little-endian
};

// The preamble and header dict of a .npy file (`size` bytes may stop anywhere after the header):
// checked like parse_npy() does, without looking at the data.
struct NpyHeader {
  std::string descr;
  std::vector<int64_t> shape;
  uint64_t numel = 0;
  size_t item_size = 0;
  uint64_t data_offset = 0;  // bytes before the data
  uint64_t data_bytes = 0;   // numel · item_size
};
NpyHeader parse_npy_header(const uint8_t* bytes, size_t size, const std::string& what);

// Parses a whole .npy file held in memory. Accepts descr <f4 <f8 <i4 <i8 (and |i1 |u1), C order
// (or Fortran order for 0-D/1-D); anything else is an Error naming `what`.
NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& what);
NpyArray read_npy(const std::string& path);  // `-` = stdin

// Token lists: a 1-D int32 or int64 array, widened to int64.
std::vector<int64_t> read_npy_ids(const std::string& path);
std::vector<int64_t> npy_to_ids(const NpyArray& array, const std::string& what);
// A float array (f4 or f8) as f32.
std::vector<float> npy_to_f32(const NpyArray& array, const std::string& what);

}  // namespace memra
