// File input and output with the project's rules: `-` is stdin/stdout, inputs are mapped or read
// whole and never trusted, outputs are written atomically (temp file in the same folder, fsync,
// rename) so a crash never leaves a half-written file under the final name.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace memra {

// Read-only bytes of a file (memory-mapped) or of stdin (`-`, read into memory).
class InputBytes {
 public:
  static InputBytes open(const std::string& path);  // throws Error naming the path
  InputBytes() = default;
  InputBytes(InputBytes&&) noexcept;
  InputBytes& operator=(InputBytes&&) noexcept;
  InputBytes(const InputBytes&) = delete;
  InputBytes& operator=(const InputBytes&) = delete;
  ~InputBytes();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;  // non-null when mmapped
  std::vector<uint8_t> owned_;
};

// Streams bytes to `path` through a temp file that is renamed into place by commit(); `-` writes
// to stdout directly. Destroying an uncommitted writer removes the temp file.
class AtomicWriter {
 public:
  explicit AtomicWriter(const std::string& path);  // throws Error
  ~AtomicWriter();
  AtomicWriter(const AtomicWriter&) = delete;
  AtomicWriter& operator=(const AtomicWriter&) = delete;
  void write(const void* data, size_t size);  // throws Error
  void write(std::string_view text) { write(text.data(), text.size()); }
  // Files only (not stdout): writes at `offset`, extending the file or rewriting bytes already
  // written, e.g. a header whose hashes are known only after the payload went out.
  void write_at(uint64_t offset, const void* data, size_t size);
  void commit();  // fsync + rename (+ fsync of the folder); throws Error
  bool to_stdout() const { return fd_ == 1; }

 private:
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

void write_file_atomic(const std::string& path, std::string_view bytes);
std::string read_text_file(const std::string& path, size_t max_bytes = 64u << 20);  // `-` = stdin

}  // namespace memra
