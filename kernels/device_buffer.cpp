// Device and pinned host allocations (device_buffer.h).
#include "device_buffer.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "core/error.h"
#include "cuda_check.h"

namespace memra::cuda {

namespace {

std::string gib(size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f GiB", bytes / double(1ull << 30));
  return buf;
}

}  // namespace

DeviceBuffer::DeviceBuffer(int device, size_t bytes, const char* what) : device_(device), bytes_(bytes) {
  DeviceGuard guard(device);
  cudaError_t err = cudaMalloc(&ptr_, bytes ? bytes : 1);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    ptr_ = nullptr;
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw Error("out of device memory on cuda:" + std::to_string(device) + ": " + what + " needs " + gib(bytes) + ", " +
                    gib(free_b) + " free",
                "plan a smaller --capacity, use fewer sequences at once, or spread the model with --devices");
  }
  if (err != cudaSuccess) ptr_ = nullptr;
  check(err, (std::string("cudaMalloc for ") + what).c_str());
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    device_ = std::exchange(o.device_, -1);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::release() {
  if (!ptr_) return;
  int prev = -1;
  cudaGetDevice(&prev);
  cudaSetDevice(device_);
  cudaFree(ptr_);
  if (prev >= 0) cudaSetDevice(prev);
  ptr_ = nullptr;
  bytes_ = 0;
}

PinnedBuffer::PinnedBuffer(size_t bytes, const char* what) { ensure(bytes, what); }

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    release();
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void PinnedBuffer::ensure(size_t bytes, const char* what) {
  if (bytes <= bytes_ && ptr_) return;
  release();
  cudaError_t err = cudaMallocHost(&ptr_, bytes ? bytes : 1);
  if (err != cudaSuccess) {
    ptr_ = nullptr;
    cudaGetLastError();
    throw Error(std::string("cannot pin ") + gib(bytes) + " of host memory for " + what + ": " + cudaGetErrorString(err),
                "free host memory");
  }
  bytes_ = bytes;
}

void PinnedBuffer::release() {
  if (ptr_) cudaFreeHost(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace memra::cuda
