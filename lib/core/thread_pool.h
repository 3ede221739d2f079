// A persistent pool of worker threads for data-parallel loops. Work is split into contiguous
// ranges, one per worker; which thread computes an element never changes what it computes, so the
// exact realization stays bit-identical whatever the thread count.
#pragma once
#include <cstdint>
#include <functional>

namespace memra {

// Runs fn(begin, end) over [0, n) split into at most `workers()` contiguous ranges (fewer when n is
// small or `min_per_range` asks for bigger ranges), the calling thread taking one. Blocks until all
// are done; rethrows the first exception a range threw. Nested calls run inline.
void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_per_range = 1);

// Threads parallel_for uses (the hardware's, or MEMRA_THREADS when set to 1..1024).
int workers();

}  // namespace memra
