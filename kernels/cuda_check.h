// Every CUDA and cuBLAS call of the backend goes through these: a failure becomes a memra::Error
// naming the call or kernel and the CUDA error, never an exit or abort. With MEMRA_CUDA_SYNC=1 every
// launch is followed by a device synchronisation, so an asynchronous fault is reported at the
// kernel that caused it (tools/gpu-check.sh runs the tests that way once).
#pragma once
#include <cuda_runtime_api.h>

#include <string>

namespace memra::cuda {

// Throws Error("CUDA <what> failed: <error string> (<error name>)") unless err == cudaSuccess.
void check(cudaError_t err, const char* what);
// For a launcher's result: also synchronises the current device when MEMRA_CUDA_SYNC=1.
void check_launch(cudaError_t err, const char* kernel);
// A launcher's or cuBLAS call's error text (nullptr = success).
void check_text(const char* error, const char* what);
bool sync_each_launch();

// Sets the current device for a scope and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace memra::cuda
