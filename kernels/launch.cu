// When a launch may use programmatic dependent launch, and at which priority (launch.cuh, pdl.h).
#include "ab_switch.h"
#include "pdl.h"

namespace memra::cuda {

namespace {

thread_local bool t_pdl_off = false;
thread_local int t_priority = 0;

bool pdl_env() {
  static const bool on = switch_on("MEMRA_CUDA_PDL");
  return on;
}

}  // namespace

PdlOff::PdlOff() : saved_(t_pdl_off) { t_pdl_off = true; }
PdlOff::~PdlOff() { t_pdl_off = saved_; }

int launch_priority() { return t_priority; }
LaunchPriority::LaunchPriority(int priority) : saved_(t_priority) { t_priority = priority; }
LaunchPriority::~LaunchPriority() { t_priority = saved_; }

bool pdl_allowed(cudaStream_t stream) {
  if (t_pdl_off || !pdl_env()) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  size_t n = 0;
  if (cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps, &edges, &n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (status == cudaStreamCaptureStatusNone) return true;  // eager: the runtime orders non-kernel work itself
  if (status != cudaStreamCaptureStatusActive || n == 0) return false;
  for (size_t i = 0; i < n; ++i) {
    cudaGraphNodeType type;
    if (cudaGraphNodeGetType(deps[i], &type) != cudaSuccess || type != cudaGraphNodeTypeKernel) {
      cudaGetLastError();
      return false;
    }
  }
  return true;
}

}  // namespace memra::cuda
