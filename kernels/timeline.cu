// Per-launch device time of a round (timeline.h).
#include "timeline.h"

#include "common.cuh"
#include "cuda_check.h"
#include "launch.cuh"

namespace memra::cuda {

namespace {

__global__ void spin_kernel(unsigned long long ns) {
  pdl_begin();
  const unsigned long long t0 = global_ns();
  while (global_ns() - t0 < ns) __nanosleep(1000);
}

}  // namespace

cudaError_t spin_for(unsigned long long ns, cudaStream_t stream) {
  return launch(spin_kernel, 1, 1, 0, stream, ns);
}

Timeline::~Timeline() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

cudaEvent_t Timeline::next_event() {
  if (names_.size() == events_.size()) {
    cudaEvent_t e;
    check(cudaEventCreate(&e), "cudaEventCreate (timeline)");
    events_.push_back(e);
  }
  return events_[names_.size()];
}

void Timeline::spin(double ms) {
  check_launch(spin_for(static_cast<unsigned long long>(ms * 1e6), stream_), "spin (timeline)");
  check(cudaEventRecord(next_event(), stream_), "cudaEventRecord (timeline)");
  names_.emplace_back();
}

void Timeline::mark(const std::string& what) {
  if (names_.empty()) return;  // not started this round
  check(cudaEventRecord(next_event(), stream_), "cudaEventRecord (timeline)");
  names_.push_back(what);
}

void Timeline::collect(std::map<std::string, SiteTime>& into) {
  check(cudaStreamSynchronize(stream_), "stream synchronisation (timeline)");
  for (size_t i = 1; i < names_.size(); ++i) {
    if (names_[i].empty()) continue;
    float t = 0;
    check(cudaEventElapsedTime(&t, events_[i - 1], events_[i]), "cudaEventElapsedTime (timeline)");
    SiteTime& s = into[names_[i]];
    s.ms += t;
    s.launches += 1;
  }
  names_.clear();
}

}  // namespace memra::cuda
