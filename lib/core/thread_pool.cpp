// The persistent worker pool behind parallel_for (thread_pool.h). Workers sleep on a condition
// variable between jobs; a job is a range split published under one mutex.
#include "core/thread_pool.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace memra {

namespace {

thread_local bool t_inside = false;  // a worker (or the caller) is already inside parallel_for

class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { loop(i); });
    size_ = threads;
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return size_; }

  void run(int ranges, const std::function<void(int)>& job) {
    std::unique_lock<std::mutex> call(call_mu_);  // one job at a time
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &job;
      ranges_ = ranges;
      pending_ = ranges - 1;
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    run_range(0, job);
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void run_range(int r, const std::function<void(int)>& job) {
    t_inside = true;
    try {
      job(r);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
    t_inside = false;
  }

  void loop(int index) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)>* job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (index >= ranges_) continue;
        job = job_;
      }
      run_range(index, *job);
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  int size_ = 1;
  std::mutex call_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int)>* job_ = nullptr;
  int ranges_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

int configured_threads() {
  if (const char* env = std::getenv("MEMRA_THREADS")) {
    const int v = std::atoi(env);
    if (v >= 1 && v <= 1024) return v;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Pool& pool() {
  static Pool p(configured_threads());
  return p;
}

}  // namespace

int workers() { return pool().size(); }

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_per_range) {
  if (n <= 0) return;
  const int64_t ranges = std::min<int64_t>(t_inside ? 1 : workers(), std::max<int64_t>(1, n / std::max<int64_t>(1, min_per_range)));
  if (ranges <= 1) {
    fn(0, n);
    return;
  }
  const int64_t step = (n + ranges - 1) / ranges;
  const int used = static_cast<int>((n + step - 1) / step);
  pool().run(used, [&](int r) {
    const int64_t b = r * step, e = std::min(n, b + step);
    if (b < e) fn(b, e);
  });
}

}  // namespace memra
