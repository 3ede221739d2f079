// The host side of launch.cuh's policy, plain C++ for the code that decides it: when a launch may
// use programmatic dependent launch (the backend turns it off for timeline rounds), and at which
// scheduling priority a thread's launches go (a critical side chain's blocks ahead of a long
// kernel's pending ones).
#pragma once
#include <cuda_runtime_api.h>

namespace memra::cuda {

// MEMRA_CUDA_PDL is not "0", no PdlOff lives on this thread, and the launch's dependencies allow a
// programmatic edge (eager, or every node it depends on in the graph being captured is a kernel).
bool pdl_allowed(cudaStream_t stream);

// No PDL for launches of this thread while it lives: the per-launch timeline times each kernel alone.
class PdlOff {
 public:
  PdlOff();
  ~PdlOff();
  PdlOff(const PdlOff&) = delete;
  PdlOff& operator=(const PdlOff&) = delete;

 private:
  bool saved_;
};

// The priority of this thread's launches (cudaLaunchAttributePriority, captured into graph nodes):
// 0, the default, or what the innermost LaunchPriority scope set (lower numbers are higher
// priorities; cudaDeviceGetStreamPriorityRange gives the device's range).
int launch_priority();

class LaunchPriority {
 public:
  explicit LaunchPriority(int priority);
  ~LaunchPriority();
  LaunchPriority(const LaunchPriority&) = delete;
  LaunchPriority& operator=(const LaunchPriority&) = delete;

 private:
  int saved_;
};

}  // namespace memra::cuda
