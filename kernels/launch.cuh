// Every kernel of the library is launched through launch() (test/shell/kernel_rules.sh checks it):
// with programmatic dependent launch (PDL) where it is safe, so a kernel's blocks can be resident
// and waiting while the kernel before it in its stream finishes, instead of starting only after it
// has drained (a decode step is ~30 dependent launches per layer, each a few microseconds).
//
// The contract with the kernels: each one calls pdl_begin() (common.cuh) before it reads anything
// an earlier kernel wrote and before its first write; only reads of weights, which nothing writes
// during a forward, may come before it. pdl_begin() waits until every prerequisite grid has
// completed and its writes are visible, so results are those of plain stream order: PDL moves no
// bit (the backend test compares graphed rounds, eager rounds and the CPU by bits).
//
// PDL is used when MEMRA_CUDA_PDL is not "0", the thread is not inside a PdlOff scope (the
// per-launch timeline measures each kernel alone), and, while a stream is being captured into a
// graph, every node the launch will depend on is a kernel (a programmatic edge may join kernel
// nodes only).
#pragma once
#include <cuda_runtime.h>

#include <utility>

#include "pdl.h"

#if defined(MEMRA_CUDA_EMU)
#include "emu/runtime.h"
#endif

namespace memra::cuda {

// kernel<<<grid, block, smem, stream>>>(args…), with PDL where allowed and `extra` launch attributes
// (a cluster shape) when given; returns the launch's error (or an earlier one not yet reported).
template <typename... Params, typename... Args>
cudaError_t launch_with(const cudaLaunchAttribute* extra, int n_extra, void (*kernel)(Params...), dim3 grid, dim3 block,
                        size_t smem, cudaStream_t stream, Args&&... args) {
#if defined(MEMRA_CUDA_EMU)
  // memra-emu (kernels/emu/README.md): the kernel runs on the CPU's fibers; PDL and priorities
  // change no result, so only the launch's shape and its cluster request are passed on.
  return emu::launch_kernel(reinterpret_cast<const void*>(kernel), grid, block, smem, stream, extra, n_extra,
                            [kernel, args...]() { kernel(args...); });
#else
  cudaLaunchAttribute attrs[5];
  int n = 0;
  for (int i = 0; i < n_extra && n < 3; ++i) attrs[n++] = extra[i];
  if (pdl_allowed(stream)) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (const int priority = launch_priority(); priority != 0) {
    attrs[n].id = cudaLaunchAttributePriority;
    attrs[n].val.priority = priority;
    ++n;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = n > 0 ? attrs : nullptr;
  cfg.numAttrs = static_cast<unsigned>(n);
  const cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  const cudaError_t last = cudaGetLastError();  // as after kernel<<<…>>>: reported once, then cleared
  return err != cudaSuccess ? err : last;
#endif
}

// The launch attribute for thread-block clusters of `blocks` blocks along grid x (launch_with's extra).
inline cudaLaunchAttribute cluster_of(unsigned blocks) {
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = blocks;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  return attr;
}

template <typename... Params, typename... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args&&... args) {
  return launch_with(nullptr, 0, kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

}  // namespace memra::cuda
