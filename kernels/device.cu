// CUDA backend entry points with a C ABI, loaded by lib/backend/cuda_loader.cpp through dlopen so
// that CPU-only commands never pay cuBLAS/CUDA start-up.
#include <cuda_runtime.h>

#include <cstdio>

extern "C" {

// Number of visible CUDA devices; 0 when the driver reports none or errors.
int memra_cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

// One line describing device `index` into buf (name, SM count, memory); returns 0 on success.
int memra_cuda_device_describe(int index, char* buf, int buf_size) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) return 1;
  std::snprintf(buf, static_cast<size_t>(buf_size), "%s, sm_%d%d, %d SMs, %.1f GiB", prop.name, prop.major,
                prop.minor, prop.multiProcessorCount, prop.totalGlobalMem / double(1 << 30));
  return 0;
}

}  // extern "C"
