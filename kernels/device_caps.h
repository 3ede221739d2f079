// What the launchers ask of the device at each launch (shared-memory opt-in, cluster support,
// multiprocessors, a kernel's resident blocks), read once per device, and the dynamic shared-memory
// opt-in of each kernel set once per (kernel, device) rather than before every launch.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

namespace memra::cuda {

struct DeviceCaps {
  int sms = 0;         // multiprocessors
  int smem_optin = 0;  // bytes of shared memory a block may opt in to
  bool clusters = false;
};

// The current device's capabilities; the first call per device reads them (an error is returned
// then, and again on later calls, instead of caps).
cudaError_t current_device_caps(DeviceCaps& caps);

// cudaFuncSetAttribute(kernel, MaxDynamicSharedMemorySize, bytes) on the current device unless a
// value ≥ bytes was set for it there before.
cudaError_t allow_dynamic_smem(const void* kernel, size_t bytes);

// Blocks of `threads` threads and `smem` bytes of dynamic shared memory that one SM of the current
// device holds at once (cudaOccupancyMaxActiveBlocksPerMultiprocessor), asked once per (kernel,
// threads, smem, device): a persistent grid is sized by it at every launch.
cudaError_t resident_blocks(const void* kernel, int threads, size_t smem, int& per_sm);

}  // namespace memra::cuda
