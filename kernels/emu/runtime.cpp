// memra-emu's CUDA runtime: the part of the CUDA runtime API memra calls, on host memory, so the
// emulated library links against this instead of libcudart (kernels/emu/README.md). Device
// memory is host memory handed out poisoned (0xff bytes), as cudaMalloc's is never zeroed; every
// operation runs when it is issued, in issue order, except on a stream being captured, where it
// is recorded into the graph and runs at each cudaGraphLaunch. Events read the host clock.
// The device: compute capability 9.0, no thread-block clusters, MEMRA_EMU_DEVICES devices (1).
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emu/runtime.h"

namespace {
constexpr int kSms = 4;  // few SMs: a persistent grid sized to the device stays a few blocks
constexpr int kSmemPerSm = 233472, kSmemOptin = 232448, kSmemDefault = 49152;
}  // namespace

struct CUstream_st;
struct CUgraph_st {
  std::vector<std::function<void()>> ops;  // in issue order: a valid order of the captured work
  bool capturing = true;                   // until the origin stream's cudaStreamEndCapture
  std::vector<CUstream_st*> joined;        // streams forked into the capture (they leave with it)
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> ops;
};
struct CUstream_st {
  CUgraph_st* capture = nullptr;  // the graph being captured into, or none
  bool origin = false;            // the stream the capture began on
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at{};
  CUgraph_st* capture = nullptr;  // recorded during a capture: waiting on it joins the capture
};

namespace memra::emu {
namespace {

std::mutex g_state;
thread_local cudaError_t g_last = cudaSuccess;
thread_local int g_device = 0;
CUstream_st g_default_stream;
std::map<const void*, int> g_smem_optin;  // kernel → bytes allowed by cudaFuncSetAttribute
std::map<void*, size_t> g_allocations;

int device_count() {
  const char* v = std::getenv("MEMRA_EMU_DEVICES");
  const int n = v ? std::atoi(v) : 1;
  return std::clamp(n, 1, 8);
}

CUstream_st* stream_of(cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return &g_default_stream;
  return s;
}

cudaError_t fail(cudaError_t e) { return g_last = e; }

// Runs `op` now, or records it when the stream is being captured.
cudaError_t issue(cudaStream_t s, std::function<void()> op) {
  CUstream_st* st = stream_of(s);
  if (st->capture) {
    st->capture->ops.push_back(std::move(op));
    return cudaSuccess;
  }
  op();
  return cudaSuccess;
}

void* allocate(size_t bytes) {
  const size_t n = std::max<size_t>(256, (bytes + 255) / 256 * 256);
  void* p = std::aligned_alloc(256, n);
  if (!p) return nullptr;
  std::memset(p, 0xff, n);
  std::lock_guard<std::mutex> lock(g_state);
  g_allocations[p] = n;
  return p;
}

}  // namespace

cudaError_t launch_kernel(const void* kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                          const cudaLaunchAttribute* extra, int n_extra, std::function<void()> body) {
  for (int i = 0; i < n_extra; ++i)
    if (extra[i].id == cudaLaunchAttributeClusterDimension) return fail(cudaErrorNotSupported);  // no clusters here
  size_t allowed = kSmemDefault;
  {
    std::lock_guard<std::mutex> lock(g_state);
    if (auto it = g_smem_optin.find(kernel); it != g_smem_optin.end()) allowed = std::max<size_t>(allowed, it->second);
  }
  if (smem > allowed) return fail(cudaErrorInvalidValue);  // as the runtime refuses it: opt in first
  const int threads = static_cast<int>(block.x * block.y * block.z);
  int per_sm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
  GridShape shape{grid, block, smem, static_cast<size_t>(std::max(1, per_sm) * kSms)};
  auto run = [shape, body = std::move(body)]() {
    const cudaError_t e = run_grid(shape, body);
    if (e != cudaSuccess) g_last = e;
  };
  if (threads < 1 || threads > 1024) return fail(cudaErrorInvalidConfiguration);
  return issue(stream, run);
}

cudaError_t enqueue(cudaStream_t stream, std::function<void()> op) { return issue(stream, std::move(op)); }

}  // namespace memra::emu

using memra::emu::fail;
using memra::emu::g_last;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  *count = memra::emu::device_count();
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = memra::emu::g_device;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= memra::emu::device_count()) return fail(cudaErrorInvalidDevice);
  memra::emu::g_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (device < 0 || device >= memra::emu::device_count()) return fail(cudaErrorInvalidDevice);
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof p->name, "memra-emu (CUDA kernels on the CPU)");
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = kSms;
  p->totalGlobalMem = 64ull << 30;
  p->sharedMemPerBlock = kSmemDefault;
  p->sharedMemPerBlockOptin = kSmemOptin;
  p->sharedMemPerMultiprocessor = kSmemPerSm;
  p->regsPerBlock = 65536;
  p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxBlocksPerMultiProcessor = 32;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->l2CacheSize = 50 << 20;
  p->memoryBusWidth = 5120;
  p->pciBusID = 0x10 + device;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device < 0 || device >= memra::emu::device_count()) return fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = kSms; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = kSmemOptin; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = kSmemPerSm; break;
    case cudaDevAttrClusterLaunch: *value = 0; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrCooperativeLaunch: *value = 1; break;
    default: *value = 0; break;
  }
  return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}
cudaError_t cudaDeviceCanAccessPeer(int* can, int, int) {
  *can = 1;
  return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int, unsigned) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return g_last; }
cudaError_t cudaGetLastError() {
  const cudaError_t e = g_last;
  g_last = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return g_last; }
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    default: return "memra-emu: unrecognized error code";
  }
}
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    default: return "cudaErrorUnknown";
  }
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = memra::emu::allocate(bytes);
  return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
cudaError_t cudaMallocHost(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned) { return cudaMalloc(p, bytes); }
cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(memra::emu::g_state);
    if (memra::emu::g_allocations.erase(p) == 0) return fail(cudaErrorInvalidValue);
  }
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *free_bytes = 16ull << 30;
  *total = 64ull << 30;
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind) {
  if (n) std::memmove(dst, src, n);
  return g_last;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind, cudaStream_t s) {
  return memra::emu::issue(s, [=] {
    if (n) std::memmove(dst, src, n);
  });
}
cudaError_t cudaMemcpyPeerAsync(void* dst, int, const void* src, int, size_t n, cudaStream_t s) {
  return cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s);
}
cudaError_t cudaMemset(void* p, int v, size_t n) {
  std::memset(p, v, n);
  return g_last;
}
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s) {
  return memra::emu::issue(s, [=] { std::memset(p, v, n); });
}

cudaError_t cudaStreamCreate(cudaStream_t* s) {
  *s = new CUstream_st;
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { return cudaStreamCreate(s); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned, int) { return cudaStreamCreate(s); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (s && s != cudaStreamLegacy && s != cudaStreamPerThread) delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return g_last; }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
  CUstream_st* st = memra::emu::stream_of(s);
  if (e->capture && e->capture->capturing && !st->capture) {  // a fork: the stream joins the capture
    st->capture = e->capture;
    e->capture->joined.push_back(st);
  }
  return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
  CUstream_st* st = memra::emu::stream_of(s);
  if (st == &memra::emu::g_default_stream || st->capture) return fail(cudaErrorStreamCaptureUnsupported);
  st->capture = new CUgraph_st;
  st->origin = true;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  CUstream_st* st = memra::emu::stream_of(s);
  if (!st->capture || !st->origin) return fail(cudaErrorIllegalState);
  *graph = st->capture;
  for (CUstream_st* j : st->capture->joined) j->capture = nullptr;
  st->capture->capturing = false;
  st->capture = nullptr;
  st->origin = false;
  return cudaSuccess;
}
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id,
                                     cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                     size_t* n_deps) {
  CUstream_st* st = memra::emu::stream_of(s);
  *status = st->capture ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  if (id) *id = reinterpret_cast<uintptr_t>(st->capture);
  if (graph) *graph = st->capture;
  if (deps) *deps = nullptr;
  if (edges) *edges = nullptr;
  if (n_deps) *n_deps = 0;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  CUstream_st* st = memra::emu::stream_of(s);
  e->capture = st->capture;
  return memra::emu::issue(s, [e] { e->at = std::chrono::steady_clock::now(); });
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned) { return cudaEventRecord(e, s); }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return g_last; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long) {
  *exec = new CUgraphExec_st{g->ops};
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  return memra::emu::issue(s, [exec] {
    for (auto& op : exec->ops) op();
  });
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete g;
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t, cudaGraphNode_t*, size_t* n) {
  *n = 0;  // the emulated graph keeps no nodes: nothing asks it for PDL edges (launch.cuh)
  return cudaSuccess;
}
cudaError_t cudaGraphGetEdges(cudaGraph_t, cudaGraphNode_t*, cudaGraphNode_t*, cudaGraphEdgeData*, size_t* n) {
  *n = 0;
  return cudaSuccess;
}
cudaError_t cudaGraphNodeGetType(cudaGraphNode_t, cudaGraphNodeType* t) {
  *t = cudaGraphNodeTypeKernel;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* f, cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > kSmemOptin) return fail(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(memra::emu::g_state);
    memra::emu::g_smem_optin[f] = static_cast<size_t>(value);
  }
  return cudaSuccess;
}
// By threads and shared memory alone (registers are the compiler's, unknown here): 2048 threads,
// 233472 bytes and 32 blocks an SM, 1 KiB reserved a block.
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void*, int threads, size_t smem) {
  if (threads < 1 || threads > 1024) return fail(cudaErrorInvalidValue);
  const int by_threads = 2048 / threads;
  const int by_smem = static_cast<int>(kSmemPerSm / (smem + 1024));
  *blocks = std::min({by_threads, by_smem, 32});
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* f, int threads, size_t smem,
                                                                  unsigned) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, f, threads, smem);
}

cudaError_t cudaProfilerStart() { return cudaSuccess; }
cudaError_t cudaProfilerStop() { return cudaSuccess; }

}  // extern "C"
