// Graph marks (MEMRA_CUDA_GRAPH_MARKS=1, read per round; `memra bench --graph-marks`): when each of
// a round's sites finishes *inside* its CUDA graph, side streams and programmatic launches included,
// which the timeline (timeline.h: each launch alone, PDL off, one stream) cannot show. After every
// site a one-thread kernel on the site's stream waits for it and stores the global timer; it lets
// the next kernel launch before it waits, so that kernel's blocks are resident early as without
// the mark, and the mark adds about one launch step (~0.6 us) to its stream's chain.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "device_buffer.h"

namespace memra::cuda {

class GraphMarks {
 public:
  explicit GraphMarks(int device);
  // A round starts (captured or launched): marks are numbered from 0 again.
  void restart();
  // A mark on `stream` after the launches just enqueued there, labelled `label` ("main C:wq_a").
  void add(cudaStream_t stream, const std::string& label);
  // Each mark of the round last run on `stream` (synchronised): label and microseconds after the
  // first mark of the round, in enqueue order.
  std::vector<std::pair<std::string, double>> collect(cudaStream_t stream) const;

 private:
  static constexpr size_t kMaxMarks = 1024;
  DeviceBuffer at_;  // uint64 [kMaxMarks]: global timer, ns
  std::vector<std::string> labels_;
};

}  // namespace memra::cuda
