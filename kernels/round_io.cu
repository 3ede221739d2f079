// A round's way in and out as kernels instead of copies (MEMRA_CUDA_PLAN_FETCH=0 and
// MEMRA_CUDA_LOGITS_OUT=0: the copies).
// Run 221 (H100) timed a decode step's ends outside its graph: the plan's H2D copy before it 8 us,
// the last row's D2D and the logits' D2H after it 10 us, each a copy-engine operation of a few
// hundred bytes to a few KB with its own launch. Both are moves the round's graph can make itself:
//
// fetch_plan_kernel    grid 1   block 256
//   the plan staged in pinned host memory (Shard::upload_plan) → its device copy, 16 bytes a
//   thread, read over the bus by the device (pinned memory is mapped under unified addressing). The
//   graph's first node: every later kernel waits for it through pdl_begin().
// logits_out_kernel    grid (⌈V / (256·4)⌉, rows)   block 256
//   row r of the round's logits → each non-null destination of dests[r] (LogitDest: the trunk's
//   last logits, the caller's pinned staging, the forward's journal); the row read once. The plan
//   carries the destinations, so one captured graph serves every step.
// Both move bits and compute nothing; their CPU twins are plain copies (ops test, group moe).
#include "common.cuh"
#include "launch.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kPerThread = 4;  // a logits block moves 1024 floats of a row

__global__ void __launch_bounds__(kBlock) fetch_plan_kernel(const uint4* host, uint4* dev, int64_t n16) {
  pdl_begin();
  for (int64_t i = threadIdx.x; i < n16; i += kBlock) dev[i] = host[i];
}

__global__ void __launch_bounds__(kBlock) logits_out_kernel(const float* logits, int64_t V, const LogitDest* dests) {
  pdl_begin();
  const LogitDest d = dests[blockIdx.y];
  const float* src = logits + static_cast<int64_t>(blockIdx.y) * V;
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kBlock * kPerThread;
#pragma unroll
  for (int u = 0; u < kPerThread; ++u) {
    const int64_t i = begin + u * kBlock + threadIdx.x;
    if (i >= V) break;
    const float v = src[i];
#pragma unroll
    for (int k = 0; k < LogitDest::kSlots; ++k)
      if (d.to[k]) d.to[k][i] = v;
  }
}

}  // namespace

cudaError_t fetch_plan(const void* host, void* dev, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  if (!host || !dev || bytes % 16 != 0 || reinterpret_cast<uintptr_t>(host) % 16 != 0 || reinterpret_cast<uintptr_t>(dev) % 16 != 0)
    return cudaErrorInvalidValue;
  return launch(fetch_plan_kernel, dim3(1), kBlock, 0, stream, static_cast<const uint4*>(host), static_cast<uint4*>(dev),
                static_cast<int64_t>(bytes / 16));
}

cudaError_t logits_out(const float* logits, int64_t V, const LogitDest* dests, int rows, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!logits || !dests || V < 1 || rows < 0 || rows > 65535) return cudaErrorInvalidValue;
  const int64_t chunks = (V + kBlock * kPerThread - 1) / (kBlock * kPerThread);
  if (chunks > 0x7fffffff) return cudaErrorInvalidValue;
  return launch(logits_out_kernel, dim3(static_cast<unsigned>(chunks), rows), kBlock, 0, stream, logits, V, dests);
}

}  // namespace memra::cuda
