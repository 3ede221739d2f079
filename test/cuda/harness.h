// Shared pieces of memra_cuda_test (test/cuda/): random inputs, device vectors with NaN poisoning,
// error statistics against a CPU twin, and the result table every mode prints last.
#pragma once
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_check.h"

namespace memra::cuda::test {

inline constexpr double kU = 5.9604644775390625e-08;  // 2^-24, f32 unit roundoff

struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t seed) : gen(seed) {}
  float normal(float std = 1.0f) { return std::normal_distribution<float>(0.0f, std)(gen); }
  float uniform(float a, float b) { return std::uniform_real_distribution<float>(a, b)(gen); }
  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); }
  std::vector<float> normals(size_t n, float std = 1.0f, float mean = 0.0f) {
    std::vector<float> v(n);
    for (auto& x : v) x = mean + normal(std);
    return v;
  }
};

// Rounds to bf16 (nearest even), kept as f32: weights the CPU and the GPU then see identically.
inline float round_bf16(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&v, &b, 4);
  return v;
}

template <typename T>
class DevVec {
 public:
  DevVec() = default;
  explicit DevVec(size_t n) : n_(n) { check(cudaMalloc(reinterpret_cast<void**>(&p_), (n ? n : 1) * sizeof(T)), "cudaMalloc (test)"); }
  explicit DevVec(const std::vector<T>& host) : DevVec(host.size()) { upload(host); }
  ~DevVec() {
    if (p_) cudaFree(p_);
  }
  DevVec(DevVec&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  DevVec& operator=(DevVec&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }
  // Synchronous with every stream (the backend's streams do not wait for the legacy one).
  void upload(const std::vector<T>& host) {
    check(cudaMemcpy(p_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "upload (test)");
    check(cudaDeviceSynchronize(), "upload (test)");
  }
  std::vector<T> download() const {
    std::vector<T> h(n_);
    check(cudaDeviceSynchronize(), "kernel under test");
    check(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "download (test)");
    return h;
  }
  // Every byte 0xFF: NaN for f32, -1 for int32. A kernel that skips an element leaves it so.
  void poison() {
    check(cudaMemset(p_, 0xFF, n_ * sizeof(T)), "poison (test)");
    check(cudaDeviceSynchronize(), "poison (test)");
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

// GPU values against the CPU twin's.
struct Diff {
  double max_abs = 0, max_ref = 0, worst_ratio = 0;  // worst_ratio: |err| / per-element bound
  int64_t unwritten = 0, nonfinite = 0, count = 0;
  double rel_to_max() const { return max_ref > 0 ? max_abs / max_ref : max_abs; }
};
inline Diff compare(const std::vector<float>& got, const std::vector<float>& want, const std::vector<double>* bound = nullptr) {
  Diff d;
  d.count = static_cast<int64_t>(want.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &got[i], 4);
    if (bits == 0xffffffffu) {
      ++d.unwritten;
      continue;
    }
    if (!std::isfinite(got[i]) && std::isfinite(want[i])) {
      ++d.nonfinite;
      continue;
    }
    if (!std::isfinite(want[i])) {
      if (!(got[i] == want[i])) ++d.nonfinite;  // −inf scores must stay −inf
      continue;
    }
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    d.max_abs = std::max(d.max_abs, e);
    d.max_ref = std::max(d.max_ref, std::fabs(static_cast<double>(want[i])));
    if (bound) d.worst_ratio = std::max(d.worst_ratio, (*bound)[i] > 0 ? e / (*bound)[i] : (e > 0 ? INFINITY : 0));
  }
  if (got.size() != want.size()) d.unwritten += std::abs(static_cast<int64_t>(got.size()) - static_cast<int64_t>(want.size()));
  return d;
}

inline bool bits_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Row {
  std::string name;
  std::string detail;
  bool pass = true;
};

// Collects results; prints each as it comes and the table at the end.
class Report {
 public:
  void add(const std::string& name, bool pass, const std::string& detail) {
    rows_.push_back({name, detail, pass});
    std::printf("%-4s %-44s %s\n", pass ? "ok" : "FAIL", name.c_str(), detail.c_str());
    std::fflush(stdout);
  }
  // A check this build cannot make, said so (memra-emu has no thread-block clusters); never used
  // on a GPU, where not running a path is a failure.
  void skip(const std::string& name, const std::string& why) {
    ++skipped_;
    std::printf("%-4s %-44s %s\n", "skip", name.c_str(), why.c_str());
    std::fflush(stdout);
  }
  bool all_pass() const {
    for (const auto& r : rows_)
      if (!r.pass) return false;
    return true;
  }
  int failures() const {
    int n = 0;
    for (const auto& r : rows_) n += !r.pass;
    return n;
  }
  void table(const std::string& title) const {
    std::printf("\n== %s: %zu checks, %d failed", title.c_str(), rows_.size(), failures());
    if (skipped_ > 0) std::printf(", %d skipped", skipped_);
    std::printf(" ==\n");
    for (const auto& r : rows_)
      if (!r.pass) std::printf("FAIL %-44s %s\n", r.name.c_str(), r.detail.c_str());
  }

 private:
  std::vector<Row> rows_;
  int skipped_ = 0;
};

inline std::string fmt(const char* f, double a) {
  char b[64];
  std::snprintf(b, sizeof b, f, a);
  return b;
}

}  // namespace memra::cuda::test
