// Graph marks (graph_marks.h).
#include "graph_marks.h"

#include <algorithm>

#include "common.cuh"
#include "cuda_check.h"
#include "launch.cuh"

namespace memra::cuda {

namespace {

// The next kernel of the stream may launch at once; this one waits for the kernel before it (and
// its writes), then stores the time.
__global__ void graph_mark_kernel(unsigned long long* at) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  pdl_begin();
  *at = global_ns();
}

}  // namespace

GraphMarks::GraphMarks(int device) : at_(device, kMaxMarks * sizeof(unsigned long long), "graph marks") {}

void GraphMarks::restart() { labels_.clear(); }

void GraphMarks::add(cudaStream_t stream, const std::string& label) {
  if (labels_.size() >= kMaxMarks) return;  // a round this long keeps its first kMaxMarks marks
  check_launch(launch(graph_mark_kernel, 1, 1, 0, stream, static_cast<unsigned long long*>(at_.get()) + labels_.size()),
               "graph mark");
  labels_.push_back(label);
}

std::vector<std::pair<std::string, double>> GraphMarks::collect(cudaStream_t stream) const {
  check(cudaStreamSynchronize(stream), "stream synchronisation (graph marks)");
  std::vector<unsigned long long> ns(labels_.size());
  if (!ns.empty())
    check(cudaMemcpy(ns.data(), at_.get(), ns.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost), "graph marks");
  std::vector<std::pair<std::string, double>> out;
  if (ns.empty()) return out;
  const unsigned long long t0 = *std::min_element(ns.begin(), ns.end());
  for (size_t i = 0; i < ns.size(); ++i) out.emplace_back(labels_[i], static_cast<double>(ns[i] - t0) * 1e-3);
  return out;
}

}  // namespace memra::cuda
