// Shared helpers of the libFuzzer targets (fuzz/fuzz_*.cpp, built by the sanitizer build,
// test/sanitizer.cmake). A target feeds bytes to one parser; memra::Error is the expected way for
// it to refuse, anything else (another exception, a sanitizer report, a trap) is a finding.
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "format/json_guard.h"
#include "model/config.h"

namespace memra::fuzz {

// Runs `fn`; a memra::Error is a normal refusal. Returns true when fn completed.
template <typename Fn>
bool accepts(Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const memra::Error& e) {
    // Messages must stay one printable line: the parsers escape what they quote.
    const std::string what = e.what();
    if (what.find('\n') != std::string::npos || what.find('\0') != std::string::npos) __builtin_trap();
    return false;
  }
}

// Bytes through a pipe, read back with StdinReader: the stream paths see exactly what a pipe gives.
// Inputs up to 64 KiB fit the pipe buffer, so a single thread can write all, close, then read.
struct PipeInput {
  int read_fd = -1;
  explicit PipeInput(const uint8_t* data, size_t size) {
    int fds[2];
    if (size > 60000 || ::pipe(fds) != 0) return;
    size_t off = 0;
    while (off < size) {
      const ssize_t n = ::write(fds[1], data + off, size - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::close(fds[1]);
    read_fd = fds[0];
  }
  ~PipeInput() {
    if (read_fd >= 0) ::close(read_fd);
  }
  bool ok() const { return read_fd >= 0; }
};

// models/tiny's config, the geometry the state and dump targets check against.
inline const ModelConfig& tiny_config() {
  static const ModelConfig c = ModelConfig::load(std::string(MEMRA_FIXTURES) + "/tiny");
  return c;
}

}  // namespace memra::fuzz
