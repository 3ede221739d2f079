// Snapshot/restore bandwidth of a device-resident state of ≥ 1 GiB against the plain pinned-copy
// bandwidth measured in the same run. The state is filled through import (no forward needed): a
// state at position pos of a large capacity, every live class random.
//   pinned D2H / H2D        cudaMemcpy of the same bytes between a device buffer and pinned memory
//   export_to (+hash)       the component's D2H into pinned memory, XXH3-128 of each class
//                           streamed chunk by chunk while later chunks are in flight: once on the
//                           calling thread, once with each class's hasher on a worker thread (the
//                           state file's class hashes are independent: docs/state-format.md)
//   import_from             H2D from pinned memory (after the state reset)
//   export/import_classes   the StateComponent interface (pageable vectors through pinned staging)
// Round trip checked by bytes. Target (issue 11): export_to with hashing ≥ 80% of pinned D2H.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <tuple>

#include "core/hash.h"
#include "device_state.h"
#include "harness.h"
#include "model/config.h"

namespace memra::cuda::test {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void fill_random(uint8_t* p, size_t n, uint64_t seed) {
  const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  const size_t per = (n / threads) & ~size_t(7);
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([=] {
      uint64_t x = seed + 0x9e3779b97f4a7c15ull * (t + 1);
      const size_t begin = t * per, end = t + 1 == threads ? n : begin + per;
      for (size_t i = begin; i < end; i += 8) {
        x += 0x9e3779b97f4a7c15ull;  // splitmix64
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        // keep every f32 finite: clear the exponent's top bit of both halves
        z &= 0xbfffffffbfffffffull;
        std::memcpy(p + i, &z, std::min<size_t>(8, end - i));
      }
    });
  for (auto& th : pool) th.join();
}

}  // namespace

int run_bandwidth(const std::string& model_dir, double gib) {
  Report rep;
  try {
    const ModelConfig cfg = ModelConfig::load(model_dir);
    const Placement place = split_layers({0}, cfg.num_hidden_layers);
    // Live bytes grow linearly with pos (entries); find pos with ≥ gib GiB.
    CudaTrunkComponent probe(nullptr, cfg, place, 1);
    const double per_token = static_cast<double>(probe.live_bytes(1 << 20) - probe.live_bytes(1 << 19)) / (1 << 19);
    const int64_t pos = static_cast<int64_t>(gib * (1ull << 30) / per_token) + cfg.sliding_window + 1;
    CudaTrunkComponent comp(nullptr, cfg, place, pos);
    const size_t total = comp.live_bytes(pos);
    std::printf("state: %s, position %lld, %zu live bytes (%.3f GiB), %zu device bytes\n", model_dir.c_str(),
                static_cast<long long>(pos), total, total / double(1ull << 30), comp.trunk().device_bytes());
    PinnedBuffer src(total, "bandwidth source"), dst(total, "bandwidth destination");
    fill_random(src.get(), total, 42);
    DeviceBuffer plain(0, total, "bandwidth plain copy");
    auto gbps = [&](double s) { return total / s / 1e9; };
    // warm-up
    check(cudaMemcpy(plain.get(), src.get(), total, cudaMemcpyHostToDevice), "warm-up");
    auto t = Clock::now();
    check(cudaMemcpy(dst.get(), plain.get(), total, cudaMemcpyDeviceToHost), "pinned D2H");
    const double d2h = gbps(seconds_since(t));
    t = Clock::now();
    check(cudaMemcpy(plain.get(), src.get(), total, cudaMemcpyHostToDevice), "pinned H2D");
    const double h2d = gbps(seconds_since(t));

    t = Clock::now();
    comp.import_from(pos, src.get(), total);
    const double imp = gbps(seconds_since(t));
    std::memset(dst.get(), 0, total);
    t = Clock::now();
    comp.export_to(pos, dst.get(), total, nullptr);
    const double exp_plain = gbps(seconds_since(t));
    const bool rt = std::memcmp(src.get(), dst.get(), total) == 0;

    // export with per-class XXH3-128 streamed over the chunks as they land
    const std::vector<ClassLayout> layout = comp.layout(pos);
    std::vector<size_t> bounds = {0};
    for (const auto& l : layout) bounds.push_back(bounds.back() + l.nbytes());
    std::vector<std::unique_ptr<Hasher>> hashers;
    for (size_t i = 0; i < layout.size(); ++i) hashers.push_back(std::make_unique<Hasher>());
    std::memset(dst.get(), 0, total);
    t = Clock::now();
    comp.export_to(pos, dst.get(), total, [&](size_t off, size_t n) {
      for (size_t k = 0; k < layout.size(); ++k) {
        const size_t a = std::max(off, bounds[k]), b = std::min(off + n, bounds[k + 1]);
        if (a < b) hashers[k]->update(dst.get() + a, b - a);
      }
    });
    const double exp_hash = gbps(seconds_since(t));
    bool hashes_ok = true;
    for (size_t k = 0; k < layout.size(); ++k)
      hashes_ok = hashes_ok && hashers[k]->digest() == xxh3_128(src.get() + bounds[k], bounds[k + 1] - bounds[k]);

    // Per-class hashers on worker threads: class k's pieces go, in order, to worker k % W.
    const unsigned W = std::max(1u, std::min<unsigned>(16, std::thread::hardware_concurrency()));
    struct Queue {
      std::mutex mu;
      std::condition_variable cv;
      std::deque<std::tuple<size_t, size_t, size_t>> items;  // class, offset, bytes
      bool done = false;
    };
    std::vector<Queue> queues(W);
    std::vector<std::unique_ptr<Hasher>> phashers;
    for (size_t i = 0; i < layout.size(); ++i) phashers.push_back(std::make_unique<Hasher>());
    std::vector<std::thread> workers;
    for (unsigned w = 0; w < W; ++w)
      workers.emplace_back([&, w] {
        Queue& q = queues[w];
        for (;;) {
          std::unique_lock<std::mutex> lock(q.mu);
          q.cv.wait(lock, [&] { return q.done || !q.items.empty(); });
          if (q.items.empty()) return;
          auto [k, off, n] = q.items.front();
          q.items.pop_front();
          lock.unlock();
          phashers[k]->update(dst.get() + off, n);
        }
      });
    std::memset(dst.get(), 0, total);
    t = Clock::now();
    comp.export_to(pos, dst.get(), total, [&](size_t off, size_t n) {
      for (size_t k = 0; k < layout.size(); ++k) {
        const size_t a = std::max(off, bounds[k]), b = std::min(off + n, bounds[k + 1]);
        if (a >= b) continue;
        Queue& q = queues[k % W];
        {
          std::lock_guard<std::mutex> lock(q.mu);
          q.items.emplace_back(k, a, b - a);
        }
        q.cv.notify_one();
      }
    });
    for (auto& q : queues) {
      {
        std::lock_guard<std::mutex> lock(q.mu);
        q.done = true;
      }
      q.cv.notify_one();
    }
    for (auto& th : workers) th.join();
    const double exp_phash = gbps(seconds_since(t));
    for (size_t k = 0; k < layout.size(); ++k)
      hashes_ok = hashes_ok && phashers[k]->digest() == xxh3_128(src.get() + bounds[k], bounds[k + 1] - bounds[k]);
    t = Clock::now();
    const Hash128 whole = xxh3_128(src.get(), total);
    const double hash_only = gbps(seconds_since(t));
    (void)whole;

    t = Clock::now();
    std::vector<CacheClass> classes = comp.export_classes(pos);
    const double exp_if = gbps(seconds_since(t));
    bool if_ok = true;
    for (size_t k = 0; k < classes.size(); ++k)
      if_ok = if_ok && std::memcmp(classes[k].bytes.data(), src.get() + bounds[k], classes[k].bytes.size()) == 0;
    CudaTrunkComponent grown(nullptr, cfg, place, pos + 97);
    t = Clock::now();
    grown.import_classes(pos, classes);
    const double imp_if = gbps(seconds_since(t));
    std::memset(dst.get(), 0, total);
    grown.export_to(pos, dst.get(), total, nullptr);
    const bool grown_ok = std::memcmp(src.get(), dst.get(), total) == 0;

    std::printf("\n%-36s %8s %8s\n", "path", "GB/s", "of pinned");
    std::printf("%-36s %8.2f %8s\n", "pinned D2H (cudaMemcpy)", d2h, "1.00");
    std::printf("%-36s %8.2f %8s\n", "pinned H2D (cudaMemcpy)", h2d, "1.00");
    std::printf("%-36s %8.2f %8.2f\n", "export_to (D2H, no hash)", exp_plain, exp_plain / d2h);
    std::printf("%-36s %8.2f %8.2f\n", "export_to + XXH3-128 (1 thread)", exp_hash, exp_hash / d2h);
    std::printf("%-36s %8.2f %8.2f\n", "export_to + XXH3-128 (class workers)", exp_phash, exp_phash / d2h);
    std::printf("%-36s %8.2f %8.2f\n", "import_from (H2D)", imp, imp / h2d);
    std::printf("%-36s %8.2f %8.2f\n", "export_classes (interface)", exp_if, exp_if / d2h);
    std::printf("%-36s %8.2f %8.2f\n", "import_classes (interface, +97 cap)", imp_if, imp_if / h2d);
    std::printf("%-36s %8.2f\n\n", "XXH3-128 alone, one thread (host)", hash_only);
    rep.add("state round trip by bytes (pinned path)", rt && hashes_ok, rt && hashes_ok ? "equal, hashes equal" : "DIFFER");
    rep.add("state round trip by bytes (interface, grown)", if_ok && grown_ok, if_ok && grown_ok ? "equal" : "DIFFER");
    const double best = std::max(exp_hash, exp_phash);
    rep.add("snapshot >= 80% of pinned D2H, hashing included", best >= 0.8 * d2h,
            fmt("%.2f", best) + " of " + fmt("%.2f", d2h) + " GB/s (" + fmt("%.0f%%", 100 * best / d2h) + ")");
    rep.add("restore >= 80% of pinned H2D", imp >= 0.8 * h2d,
            fmt("%.2f", imp) + " of " + fmt("%.2f", h2d) + " GB/s (" + fmt("%.0f%%", 100 * imp / h2d) + ")");
  } catch (const std::exception& e) {
    rep.add("bandwidth", false, std::string("threw: ") + e.what());
  }
  rep.table("state snapshot/restore bandwidth");
  return rep.all_pass() ? 0 : 1;
}

}  // namespace memra::cuda::test
