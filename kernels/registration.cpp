// libmemra_cuda.so's C entry points (backend_registry.h): the versioned registration that
// make_backend() asks for, the device list for `memra devices` (cuda_loader.cpp), and the device
// ceilings `memra bench` measures. Nothing here lets an exception cross the C boundary.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "core/error.h"
#include "cuda_backend.h"
#include "engine/backend_registry.h"

namespace memra::cuda {
void measure_device_rates(int device, size_t pinned_bytes, double out[4]);  // device_rates.cu
void measure_launch_step(int device, double out[2]);                        // device_rates.cu
void measure_grid_barrier(int device, double out[2]);                       // device_rates.cu
}

namespace {

void write_error(char* out, size_t size, const std::string& what, const std::string& hint) {
  if (!out || size == 0) return;
  const std::string text = hint.empty() ? what : what + "\n" + hint;
  std::snprintf(out, size, "%s", text.c_str());
}

memra::Backend* create(const memra::RealizationInfo& realization, const memra::Model& model,
                       const memra::BackendOptions& options, char* error, size_t error_size) {
  try {
    return new memra::cuda::CudaBackend(realization, model, options);
  } catch (const memra::Error& e) {
    write_error(error, error_size, e.what(), e.hint());
  } catch (const std::exception& e) {
    write_error(error, error_size, std::string("CUDA backend: ") + e.what(), "");
  } catch (...) {
    write_error(error, error_size, "CUDA backend: unknown failure while creating the backend", "");
  }
  return nullptr;
}

const memra::BackendRegistration kRegistration = {memra::kBackendApiVersion, "cuda", &create};

}  // namespace

extern "C" {

const memra::BackendRegistration* memra_backend_registration() { return &kRegistration; }

// Number of visible CUDA devices; 0 when the driver reports none or errors.
int memra_cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

// One line describing device `index` into buf (name, SM count, memory); returns 0 on success.
int memra_cuda_device_describe(int index, char* buf, int buf_size) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) return 1;
  std::snprintf(buf, static_cast<size_t>(buf_size), "%s, sm_%d%d, %d SMs, %.1f GiB", prop.name, prop.major, prop.minor,
                prop.multiProcessorCount, prop.totalGlobalMem / double(1 << 30));
  return 0;
}

// The ceilings of device `index`, measured now (`memra bench`; device_rates.cu): out[0] device copy
// bandwidth (GB/s, bytes read + written), out[1] dense bf16 tensor-core rate (TFLOP/s), out[2] and
// out[3] pinned D2H and H2D bandwidth (GB/s) for `pinned_bytes` (0: not measured). Returns 0, or 1
// with a one-line reason in error.
int memra_cuda_device_rates(int index, size_t pinned_bytes, double* out, char* error, size_t error_size) {
  try {
    out[0] = out[1] = out[2] = out[3] = 0.0;
    memra::cuda::measure_device_rates(index, pinned_bytes, out);
  } catch (const std::exception& e) {
    write_error(error, error_size, e.what(), "");
    return 1;
  }
  return 0;
}

// The launch step of device `index` (device_rates.cu): out[0] / out[1] microseconds one more
// dependent kernel adds to a captured chain, with programmatic dependent launch and without.
// Returns 0, or 1 with a one-line reason in error.
int memra_cuda_launch_step(int index, double* out, char* error, size_t error_size) {
  try {
    out[0] = out[1] = 0.0;
    memra::cuda::measure_launch_step(index, out);
  } catch (const std::exception& e) {
    write_error(error, error_size, e.what(), "");
    return 1;
  }
  return 0;
}

// The grid barrier of device `index` (device_rates.cu): out[0] / out[1] microseconds per grid-wide
// barrier of a resident grid of two blocks per SM / one. Returns 0, or 1 with a one-line reason.
int memra_cuda_grid_barrier(int index, double* out, char* error, size_t error_size) {
  try {
    out[0] = out[1] = 0.0;
    memra::cuda::measure_grid_barrier(index, out);
  } catch (const std::exception& e) {
    write_error(error, error_size, e.what(), "");
    return 1;
  }
  return 0;
}

}  // extern "C"
