// Speculative vs plain greedy decoding, timed (speculative_compare.h).
#include "drafter/speculative_compare.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "engine/engine.h"

namespace memra {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double SpeculativeComparison::median_speculative_s() const { return median(speculative_s); }
double SpeculativeComparison::median_greedy_s() const { return median(greedy_s); }
double SpeculativeComparison::speculative_tokens_per_s() const {
  const double s = median_speculative_s();
  return s > 0 ? static_cast<double>(speculative.size()) / s : 0.0;
}
double SpeculativeComparison::greedy_tokens_per_s() const {
  const double s = median_greedy_s();
  return s > 0 ? static_cast<double>(greedy.size()) / s : 0.0;
}
double SpeculativeComparison::speedup() const {
  const double s = median_speculative_s();
  return s > 0 ? median_greedy_s() / s : 0.0;
}

SpeculativeComparison compare_speculative(const Backend& backend, const Drafter& drafter, const State& start,
                                          int64_t steps, const DraftShape& shape, int runs,
                                          std::span<const int32_t> stop, Rollback rollback) {
  if (runs < 1) throw Error("a comparison needs at least one run");
  const int64_t pos = start.position(), capacity = std::max(start.capacity(), pos + steps);
  const std::vector<CacheClass> classes = start.export_classes();
  std::vector<CacheClass> trunk_classes;
  for (const auto& c : classes)
    if (c.name.rfind(kDrafterClassPrefix, 0) != 0) trunk_classes.push_back(c);
  using Clock = std::chrono::steady_clock;
  SpeculativeComparison out;
  out.identical = true;
  for (int r = 0; r < runs; ++r) {
    auto spec_state = state_from_classes(backend, pos, capacity, classes, [&](State& s) { drafter.attach(s); });
    SpeculativeStats stats;
    auto t0 = Clock::now();
    std::vector<int32_t> spec = generate_speculative(backend, drafter, *spec_state, steps, shape, &stats, stop, rollback);
    backend.sync();
    out.speculative_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());

    auto plain_state = state_from_classes(backend, pos, capacity, trunk_classes);
    t0 = Clock::now();
    std::vector<int32_t> plain = generate_greedy(backend, *plain_state, steps, nullptr, {}, stop);
    backend.sync();
    out.greedy_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());

    if (r == 0) {
      out.speculative = std::move(spec);
      out.greedy = std::move(plain);
      out.stats = std::move(stats);
      out.final_state = std::move(spec_state);
      out.greedy_state = std::move(plain_state);
      for (size_t i = 0; i < out.greedy.size() && out.first_difference < 0; ++i)
        if (i >= out.speculative.size() || out.speculative[i] != out.greedy[i])
          out.first_difference = static_cast<int64_t>(i);
      out.identical = out.first_difference < 0 && out.speculative.size() == out.greedy.size();
    } else {
      out.identical = out.identical && spec == out.speculative && plain == out.greedy;
    }
  }
  return out;
}

}  // namespace memra
