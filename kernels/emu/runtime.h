// memra-emu, the host side: how the emulated library's launch() runs a kernel (kernels/emu/README.md).
#pragma once
#include <cuda_runtime.h>

#include <functional>

namespace memra::emu {

struct GridShape {
  dim3 grid, block;
  size_t smem = 0;
  size_t max_resident = 1;  // blocks that may run at once (the device's resident capacity)
  const void* kernel = nullptr;  // for messages (its symbol name)
};

// Runs every block of the grid to completion on the calling thread; `body` is the kernel call.
cudaError_t run_grid(const GridShape& shape, const std::function<void()>& body);

// launch_with()'s emulated form: checks the launch as the CUDA runtime would (block size, dynamic
// shared memory against the kernel's opt-in, clusters refused), then runs it now or, while the
// stream is being captured, records it into the graph.
cudaError_t launch_kernel(const void* kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                          const cudaLaunchAttribute* extra, int n_extra, std::function<void()> body);

// Runs `op` now, or records it while `stream` is being captured (the emulated cuBLAS's calls).
cudaError_t enqueue(cudaStream_t stream, std::function<void()> op);

}  // namespace memra::emu
