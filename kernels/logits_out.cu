// The logits out of a round as a kernel instead of copies (MEMRA_CUDA_LOGITS_OUT=0: the copies).
// Run 221 (H100) timed a decode step's logits copies after its graph at 10 us: the last row's D2D
// and the D2H into pinned staging, each a copy-engine operation of a few KB with its own launch,
// which the host then waits for. The round's graph moves the rows itself (run 222: −8 us a step):
//
// logits_out_kernel    grid (⌈V / (256·4)⌉, rows)   block 256
//   row r of the round's logits → each non-null destination of dests[r] (LogitDest: the trunk's
//   last logits, the caller's pinned staging, which is mapped under unified addressing, the
//   forward's journal); the row read once. The plan carries the destinations, so one captured graph
//   serves every step.
// It moves bits and computes nothing; its CPU twin is a plain copy (ops test, group moe). The same
// for the plan's H2D copy before the graph (fetch_plan, the graph's first kernel reading the staged
// plan) saved nothing in run 222: that copy overlaps the graph's launch. Not kept.
#include "common.cuh"
#include "launch.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kPerThread = 4;  // a logits block moves 1024 floats of a row

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

cudaError_t logits_out(const float* logits, int64_t V, const LogitDest* dests, int rows, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!logits || !dests || V < 1 || rows < 0 || rows > 65535) return cudaErrorInvalidValue;
  const int64_t chunks = (V + kBlock * kPerThread - 1) / (kBlock * kPerThread);
  if (chunks > 0x7fffffff) return cudaErrorInvalidValue;
  return launch(logits_out_kernel, dim3(static_cast<unsigned>(chunks), rows), kBlock, 0, stream, logits, V, dests);
}

}  // namespace memra::cuda
