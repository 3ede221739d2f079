// When a launch may use programmatic dependent launch (launch.cuh says what it is and why): plain
// C++, for the host code that decides it (the backend turns it off for timeline rounds).
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

}  // namespace memra::cuda
