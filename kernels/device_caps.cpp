// Per-device capabilities and per-kernel shared-memory opt-ins, cached (device_caps.h).
#include "device_caps.h"

#include <map>
#include <mutex>
#include <tuple>
#include <utility>

namespace memra::cuda {

namespace {

std::mutex g_mutex;
std::map<int, DeviceCaps> g_caps;
std::map<std::pair<const void*, int>, size_t> g_smem;  // (kernel, device) → bytes allowed
std::map<std::tuple<const void*, int, size_t, int>, int> g_resident;  // (kernel, threads, smem, device)

}  // namespace

cudaError_t current_device_caps(DeviceCaps& caps) {
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_caps.find(dev);
  if (it == g_caps.end()) {
    DeviceCaps c;
    int clusters = 0;
    if ((err = cudaDeviceGetAttribute(&c.sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
        (err = cudaDeviceGetAttribute(&c.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) != cudaSuccess ||
        (err = cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, dev)) != cudaSuccess)
      return err;
    c.clusters = clusters != 0;
    it = g_caps.emplace(dev, c).first;
  }
  caps = it->second;
  return cudaSuccess;
}

cudaError_t allow_dynamic_smem(const void* kernel, size_t bytes) {
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  std::lock_guard<std::mutex> lock(g_mutex);
  size_t& allowed = g_smem[{kernel, dev}];
  if (allowed >= bytes) return cudaSuccess;
  if ((err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes))) != cudaSuccess)
    return err;
  allowed = bytes;
  return cudaSuccess;
}

cudaError_t resident_blocks(const void* kernel, int threads, size_t smem, int& per_sm) {
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto key = std::make_tuple(kernel, threads, smem, dev);
  auto it = g_resident.find(key);
  if (it == g_resident.end()) {
    if ((err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem)) != cudaSuccess) return err;
    it = g_resident.emplace(key, per_sm).first;
  }
  per_sm = it->second;
  return cudaSuccess;
}

}  // namespace memra::cuda
