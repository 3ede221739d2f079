// Progress lines on stderr for long work (total 0: a stream of unknown length), only when stderr
// is a terminal and -q is not given.
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace memra::cli {

class Progress {
 public:
  Progress(std::string label, bool quiet) : label_(std::move(label)), enabled_(!quiet && isatty(2)) {}
  ~Progress() { finish(); }
  void update(int64_t done, int64_t total) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - start_).count();
    if (total > 0)
      std::fprintf(stderr, "\r\033[Kmemra: %s %lld/%lld (%.1f s)", label_.c_str(), static_cast<long long>(done),
                   static_cast<long long>(total), s);
    else  // a stream of unknown length
      std::fprintf(stderr, "\r\033[Kmemra: %s %lld (%.1f s)", label_.c_str(), static_cast<long long>(done), s);
    std::fflush(stderr);
    shown_ = true;
  }
  // Bytes: "label 12.3/160.0 GB (4.1 GB/s)".
  void update_bytes(uint64_t done, uint64_t total) {
    if (!enabled_) return;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stderr, "\r\033[Kmemra: %s %.2f/%.2f GB (%.2f GB/s)", label_.c_str(), done / 1e9, total / 1e9,
                 s > 0 ? done / 1e9 / s : 0.0);
    std::fflush(stderr);
    shown_ = true;
  }
  void finish() {
    if (shown_) std::fprintf(stderr, "\n");
    shown_ = false;
  }

 private:
  std::string label_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace memra::cli
