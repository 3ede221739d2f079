// File input and output with the project's rules: `-` is stdin/stdout, inputs are mapped or read
// and never trusted, stdin is read in bounded pieces, outputs are written atomically (temp file in
// the same folder, fsync, rename) so a crash never leaves a half-written file under the final name.
//
// Output rules (check_outputs, AtomicWriter):
//  - an output may not be the same file as an input of the same command, nor as another output;
//  - two artifacts never share stdout;
//  - character devices and FIFOs (/dev/null, a pipe, `>(…)`) are written in place, without a temp
//    file or rename; directories, block devices and sockets are refused;
//  - every write error (ENOSPC, EIO, EFBIG, a failing close) is an Error (exit 2);
//  - temp files are named `.NAME.memra-tmp.PID.HOST.RANDOM`; a write into a folder first removes
//    the temp files there that this user's memra processes on this host left behind when they
//    died (kill -9, power loss): their PID is no longer running.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace memra {

// The most bytes a reader buffers from stdin (files are mapped, not buffered). Default: the
// default memory share (core/machine.h); the CLI sets it from --max-memory.
void set_stdin_limit(uint64_t bytes);
uint64_t stdin_limit();

// Reads stdin in pieces, so a parser can check a header before it reads what the header describes.
class StdinReader {
 public:
  explicit StdinReader(int fd = 0, bool owns_fd = false) : fd_(fd), owns_(owns_fd) {}
  StdinReader(StdinReader&& o) noexcept : fd_(o.fd_), owns_(o.owns_), consumed_(o.consumed_), peeked_(o.peeked_) {
    o.owns_ = false;
  }
  StdinReader(const StdinReader&) = delete;
  StdinReader& operator=(const StdinReader&) = delete;
  ~StdinReader();
  // `-`, or a path that is not a regular file (a FIFO, `<(…)`, /dev/stdin): a reader of it, so it is
  // read in pieces like stdin; nullptr for a regular file (map it with InputBytes). Throws Error
  // when the path cannot be opened.
  static std::unique_ptr<StdinReader> open_stream(const std::string& path);
  // Appends up to n bytes to `out`; fewer only at the end of the input. Throws Error on a read error.
  size_t read(std::vector<uint8_t>& out, size_t n);
  // True when the input has no byte left (reads at most one byte, kept for the next read()).
  bool at_end();
  uint64_t consumed() const { return consumed_; }

 private:
  int fd_;
  bool owns_ = false;
  uint64_t consumed_ = 0;
  int peeked_ = -1;
};

// Read-only bytes of a file (memory-mapped) or of stdin (`-`, read into memory).
class InputBytes {
 public:
  // `max_bytes` bounds what is accepted (a larger file, or more stdin, is an Error naming the
  // path); stdin is also bounded by stdin_limit() and is never read past the bound.
  static InputBytes open(const std::string& path, uint64_t max_bytes = UINT64_MAX);  // throws Error
  // Bytes already in memory (a stdin stream read piecewise, a test, a fuzzer); `path` names them.
  static InputBytes from_buffer(std::string path, std::vector<uint8_t> bytes);
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
// to stdout directly, a character device or FIFO is written in place. Destroying an uncommitted
// writer removes the temp file.
class AtomicWriter {
 public:
  explicit AtomicWriter(const std::string& path);  // throws Error
  ~AtomicWriter();
  AtomicWriter(const AtomicWriter&) = delete;
  AtomicWriter& operator=(const AtomicWriter&) = delete;
  void write(const void* data, size_t size);  // throws Error
  void write(std::string_view text) { write(text.data(), text.size()); }
  // Seekable outputs only (a temp file): writes at `offset`, extending the file or rewriting bytes
  // already written, e.g. a header whose hashes are known only after the payload went out.
  void write_at(uint64_t offset, const void* data, size_t size);
  void commit();  // fsync + close + rename (+ fsync of the folder); throws Error
  bool to_stdout() const { return fd_ == 1; }
  bool seekable() const { return !in_place_; }
  const std::string& temp_path() const { return temp_path_; }  // empty when written in place

 private:
  std::string path_;       // as given (messages)
  std::string target_;     // the file renamed onto (symlinks resolved)
  std::string temp_path_;
  int fd_ = -1;
  bool in_place_ = false;  // stdout, a character device or a FIFO
  bool committed_ = false;
};

void write_file_atomic(const std::string& path, std::string_view bytes);
std::string read_text_file(const std::string& path, size_t max_bytes = 64u << 20);  // `-` = stdin

// The temp-file name AtomicWriter uses for `final_name` in this process, and whether `name` is a
// temp file of a memra process on this host that has died (so it may be removed).
std::string temp_file_name(const std::string& final_name, uint64_t random);
bool is_stale_temp_name(const std::string& name);
// Removes the stale temp files in `dir` owned by this user; returns how many. Never throws.
int remove_stale_temps(const std::filesystem::path& dir);

// A command's file argument: what names it in messages ("-o", "--tokens", "STATE") and the path.
struct NamedPath {
  std::string what;
  std::string path;
};
// The output rules above, checked before anything is read or written; throws Error (exit 2)
// naming both arguments. Paths that do not exist yet are compared by their resolved absolute path.
void check_outputs(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

}  // namespace memra
