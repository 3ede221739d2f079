// The ceilings `memra bench` measures its floors against, on one device (METHOD.md: measure them in
// the same run): device-to-device copy bandwidth (bytes read plus bytes written, 4 GiB buffers, so
// the L2 plays no part), the dense bf16 tensor-core rate (cuBLAS GEMM 8192³, bf16 in, f32
// accumulate, random data), and pinned D2H / H2D copies of `pinned_bytes` (the snapshot and
// restore references). Each is the median of 10 timed runs after 3 warm-ups (pinned: 3 after 1).
// Also the launch step: what one more dependent kernel adds to a captured chain of them (with
// programmatic dependent launch and without), the least a round's critical path pays per kernel;
// and the grid barrier: what one dependent phase costs inside one persistent (cooperative) grid.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "common.cuh"
#include "cuda_check.h"
#include "device_buffer.h"
#include "launch.cuh"
#include "pdl.h"
#include "synthetic_weights.h"

namespace memra::cuda {

namespace {

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The median of `runs` timings (ms, events a and b on `stream` around `work()`) after `warm` untimed
// ones: every ceiling below is measured this way.
template <typename Work>
float median_ms(cudaStream_t stream, cudaEvent_t a, cudaEvent_t b, int warm, int runs, Work&& work) {
  std::vector<float> ms;
  for (int r = 0; r < warm + runs; ++r) {
    check(cudaEventRecord(a, stream), "cudaEventRecord (rates)");
    work();
    check(cudaEventRecord(b, stream), "cudaEventRecord (rates)");
    check(cudaEventSynchronize(b), "cudaEventSynchronize (rates)");
    float t = 0;
    check(cudaEventElapsedTime(&t, a, b), "cudaEventElapsedTime (rates)");
    if (r >= warm) ms.push_back(t);
  }
  return median(ms);
}

// One link of a chain: waits for the kernel before it, then one thread adds one to what that kernel
// wrote, so every link depends on the last through memory, as a decode step's kernels do.
__global__ void chain_link_kernel(float* x) {
  pdl_begin();
  if (blockIdx.x == 0 && threadIdx.x == 0) x[0] += 1.0f;
}

// `phases` grid-wide barriers in one resident grid (cooperative launch), each phase's one write read
// by the next as a chain link's is: the handoff a persistent kernel would use between two of a decode
// step's dependent kernels. Block b's thread 0 counts itself into `count` (monotonic, zeroed before
// the launch) and waits until every block has counted for this phase, then the block goes on. The
// cooperative launch guarantees every block is resident (or fails to launch), so the wait ends.
__global__ void grid_barrier_kernel(float* x, unsigned* count, int phases) {
  pdl_begin();
  for (int p = 0; p < phases; ++p) {
    if (blockIdx.x == 0 && threadIdx.x == 0) x[0] += 1.0f;
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();  // this phase's writes reach L2 before the count says so
      atomicAdd(count, 1u);
      const unsigned target = (p + 1u) * gridDim.x;
      while (*reinterpret_cast<volatile unsigned*>(count) < target) {
      }
      __threadfence();
    }
    __syncthreads();
  }
}

}  // namespace

// out[0] / out[1]: microseconds per grid-wide barrier of a persistent grid of two blocks per SM / one
// block per SM (256 threads each), from the time of a kPhases-barrier launch less a no-barrier one:
// next to the launch step, what a persistent decode kernel would pay per dependent phase instead.
void measure_grid_barrier(int device, double out[2]) {
  constexpr int kPhases = 64;
  DeviceGuard guard(device);
  PdlOff off;  // the cooperative launch alone: nothing before it to overlap
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties (grid barrier)");
  int per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_barrier_kernel, 256, 0), "occupancy (grid barrier)");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate (grid barrier)");
  DeviceBuffer x(device, sizeof(float), "grid-barrier value"), count(device, sizeof(unsigned), "grid-barrier count");
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate (grid barrier)");
  check(cudaEventCreate(&b), "cudaEventCreate (grid barrier)");
  cudaLaunchAttribute coop = {};
  coop.id = cudaLaunchAttributeCooperative;
  coop.val.cooperative = 1;
  for (int i = 0; i < 2; ++i) {
    const int per = std::min(i == 0 ? 2 : 1, per_sm);
    const unsigned blocks = static_cast<unsigned>(per * prop.multiProcessorCount);
    float ms[2];
    for (int with = 0; with < 2; ++with) {
      ms[with] = median_ms(stream, a, b, 3, 10, [&] {
        check(cudaMemsetAsync(count.get(), 0, sizeof(unsigned), stream), "grid-barrier count");
        check(launch_with(&coop, 1, grid_barrier_kernel, blocks, 256, 0, stream, static_cast<float*>(x.get()),
                          static_cast<unsigned*>(count.get()), with ? kPhases : 0),
              "grid_barrier_kernel");
      });
    }
    out[i] = std::max(0.0f, ms[1] - ms[0]) * 1e3 / kPhases;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  check(cudaStreamSynchronize(stream), "grid barrier");
  cudaStreamDestroy(stream);
}

// out[0] / out[1]: microseconds per kernel of a captured chain of kLinks dependent kernels, with PDL
// and without; each kernel two blocks per SM of 256 threads (the shape of a decode step's linears).
void measure_launch_step(int device, double out[2]) {
  constexpr int kLinks = 64;
  DeviceGuard guard(device);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties (launch step)");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate (launch step)");
  DeviceBuffer x(device, sizeof(float), "launch-step counter");
  check(cudaMemsetAsync(x.get(), 0, sizeof(float), stream), "launch-step counter");
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate (launch step)");
  check(cudaEventCreate(&b), "cudaEventCreate (launch step)");
  for (int pdl = 1; pdl >= 0; --pdl) {
    std::optional<PdlOff> off;
    if (!pdl) off.emplace();
    cudaGraph_t graph = nullptr;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture (launch step)");
    for (int i = 0; i < kLinks; ++i)
      check(launch(chain_link_kernel, 2 * prop.multiProcessorCount, 256, 0, stream, static_cast<float*>(x.get())),
            "chain_link_kernel");
    check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture (launch step)");
    cudaGraphExec_t exec = nullptr;
    check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate (launch step)");
    const float ms = median_ms(stream, a, b, 3, 10, [&] { check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch (launch step)"); });
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    out[pdl ? 0 : 1] = ms * 1e3 / kLinks;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  check(cudaStreamSynchronize(stream), "launch step");
  cudaStreamDestroy(stream);
}

void measure_device_rates(int device, size_t pinned_bytes, double out[4]) {
  double* copy_gbs = &out[0];
  double* bf16_tflops = &out[1];
  DeviceGuard guard(device);
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate (rates)");
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate (rates)");
  check(cudaEventCreate(&b), "cudaEventCreate (rates)");
  auto timed = [&](auto&& work) { return median_ms(stream, a, b, 3, 10, work); };
  {
    const size_t bytes = size_t(4) << 30;
    DeviceBuffer src(device, bytes, "copy-rate source"), dst(device, bytes, "copy-rate destination");
    check(synthetic_fill(src.get(), true, static_cast<int64_t>(bytes / 2), 12345u, 1.0f, 0.0f, stream), "rates fill");
    const float ms = timed([&] {
      check(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream), "copy-rate memcpy");
    });
    *copy_gbs = 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
  }
  {
    const int n = 8192;
    const size_t elems = static_cast<size_t>(n) * n;
    DeviceBuffer A(device, elems * 2, "gemm A"), B(device, elems * 2, "gemm B"), C(device, elems * 4, "gemm C");
    check(synthetic_fill(A.get(), true, static_cast<int64_t>(elems), 777u, 1.0f, 0.0f, stream), "rates fill");
    check(synthetic_fill(B.get(), true, static_cast<int64_t>(elems), 778u, 1.0f, 0.0f, stream), "rates fill");
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) check_text("cublasCreate failed", "rates");
    cublasSetStream(h, stream);
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    const float ms = timed([&] {
      st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, A.get(), CUDA_R_16BF, n, B.get(), CUDA_R_16BF, n, &zero,
                        C.get(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    });
    cublasDestroy(h);
    if (st != CUBLAS_STATUS_SUCCESS) check_text(cublasGetStatusString(st), "cublasGemmEx (rates)");
    *bf16_tflops = 2.0 * n * static_cast<double>(n) * n / (ms * 1e-3) / 1e12;
  }
  if (pinned_bytes > 0) {
    PinnedBuffer host(pinned_bytes, "pinned-rate host buffer");
    DeviceBuffer dev(device, pinned_bytes, "pinned-rate device buffer");
    std::memset(host.get(), 0x3c, pinned_bytes);
    for (int dir = 0; dir < 2; ++dir) {
      const float ms = median_ms(stream, a, b, 1, 3, [&] {
        if (dir == 0) check(cudaMemcpyAsync(host.get(), dev.get(), pinned_bytes, cudaMemcpyDeviceToHost, stream), "pinned D2H");
        else check(cudaMemcpyAsync(dev.get(), host.get(), pinned_bytes, cudaMemcpyHostToDevice, stream), "pinned H2D");
      });
      out[2 + dir] = static_cast<double>(pinned_bytes) / (ms * 1e-3) / 1e9;
    }
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  check(cudaStreamSynchronize(stream), "rates");
  cudaStreamDestroy(stream);
}

}  // namespace memra::cuda
