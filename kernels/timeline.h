// Per-launch device time of a round (MEMRA_CUDA_TIMELINE=1, read per round; the round then runs
// without its CUDA graph). The stream first runs a spin kernel long enough for the host to enqueue
// the round behind it, so the kernels run back to back and the time between the events recorded
// after consecutive launches is each launch's own device time, not the host's launch gaps. Where
// the host must wait on the device mid-round (the per-expert MoE reads the routing), the shard
// spins again after the wait; spins are left out of the report. `memra bench --timeline` prints it.
#pragma once
#include <cuda_runtime_api.h>

#include <map>
#include <string>
#include <vector>

namespace memra::cuda {

struct SiteTime {
  double ms = 0;
  int launches = 0;
};

class Timeline {
 public:
  explicit Timeline(cudaStream_t stream) : stream_(stream) {}
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Keeps the stream busy for `ms` on the device, then starts timing the launches that follow.
  void spin(double ms);
  // An event after the launch just enqueued: the device time since the previous mark is `what`'s.
  void mark(const std::string& what);
  // Synchronises the stream; adds each site's time to `into` and forgets the marks.
  void collect(std::map<std::string, SiteTime>& into);

 private:
  cudaEvent_t next_event();

  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;  // reused across rounds
  std::vector<std::string> names_;   // names_[i]: what ran before events_[i] ("" = a spin, or the start)
};

// The spin kernel: one thread sleeps on the global timer for `ns` nanoseconds.
cudaError_t spin_for(unsigned long long ns, cudaStream_t stream);

}  // namespace memra::cuda
