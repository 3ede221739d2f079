// CUDA error reporting (cuda_check.h).
#include "cuda_check.h"

#include <cstdlib>

#include "core/error.h"

namespace memra::cuda {

namespace {

const char* kHint = "run tools/gpu-check.sh (compute-sanitizer) or set MEMRA_CUDA_SYNC=1 to locate the failing kernel";

}  // namespace

bool sync_each_launch() {
  static const bool on = [] {
    const char* v = std::getenv("MEMRA_CUDA_SYNC");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky launch error so later diagnostics are not misattributed
  std::string hint = kHint;
  if (err == cudaErrorMemoryAllocation) hint = "free device memory or plan a smaller --capacity";
  throw Error(std::string("CUDA ") + what + " failed: " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")",
              hint);
}

void check_launch(cudaError_t err, const char* kernel) {
  check(err, (std::string("kernel ") + kernel + " (launch)").c_str());
  if (sync_each_launch()) check(cudaDeviceSynchronize(), (std::string("kernel ") + kernel + " (execution)").c_str());
}

void check_text(const char* error, const char* what) {
  if (!error) return;
  throw Error(std::string("CUDA ") + what + " failed: " + error, kHint);
}

DeviceGuard::DeviceGuard(int device) {
  check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice");
}

DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_ && previous_ >= 0) cudaSetDevice(previous_);
}

}  // namespace memra::cuda
