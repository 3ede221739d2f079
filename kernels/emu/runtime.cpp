// memra-emu's CUDA runtime: the part of the CUDA runtime API memra calls, on host memory, so the
// emulated library links against this instead of libcudart (kernels/emu/README.md). Device
// memory is host memory handed out poisoned (0xff bytes), as cudaMalloc's is never zeroed.
// Stream work is deferred, as on a device: kernels, async copies and memsets run in issue order
// (a valid order for any correctly ordered program) only at a synchronisation (stream, event or
// device sync, a synchronous copy or memset, cudaFree), so host code that reads a result without
// one sees the poison. A pageable source is staged at the call and a pageable destination makes
// the copy synchronous, as the runtime does. On a stream being captured, work is recorded into the
// graph instead and runs at each cudaGraphLaunch; the calls a capture forbids (synchronisations,
// allocations) fail and invalidate it, and ending it with a forked stream not joined back fails.
// Events read the host clock when they run.
// The device: compute capability 9.0, no thread-block clusters, MEMRA_EMU_DEVICES devices (1).
#include <cuda_profiler_api.h>
#include <sys/mman.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
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
struct CUevent_st;
struct CUgraph_st {
  std::vector<std::function<void()>> ops;  // in issue order: a valid order of the captured work
  bool capturing = true;                   // until the origin stream's cudaStreamEndCapture
  bool invalidated = false;                // a forbidden call was made during the capture
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::vector<CUstream_st*> joined;        // streams forked into the capture (they leave with it)
  std::vector<CUevent_st*> recorded;       // events recorded into it (cleared when it ends)
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> ops;
};
struct CUstream_st {
  CUgraph_st* capture = nullptr;  // the graph being captured into, or none
  bool origin = false;            // the stream the capture began on
  long captured_ops = 0;          // work recorded from this stream in the capture
  long rejoined_at = 0;           // its work another stream of the capture has waited for
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at{};
  CUgraph_st* capture = nullptr;  // recorded during a capture: waiting on it joins the capture
  CUstream_st* stream = nullptr;  // where it was recorded in the capture, and after how much work
  long index = 0;
};

namespace memra::emu {
namespace {

std::mutex g_state;
// The last error: one for the process, as a CUDA context's sticky launch errors are (a kernel that
// fails while another thread's synchronisation runs it is still reported).
std::atomic<cudaError_t> g_last{cudaSuccess};
thread_local int g_device = 0;
CUstream_st g_default_stream;
std::map<const void*, int> g_smem_optin;  // kernel → bytes allowed by cudaFuncSetAttribute
struct Mapping {
  void* base;
  size_t bytes;
  size_t body;  // the bytes handed out
  bool host;    // cudaMallocHost / cudaHostAlloc (pinned): async copies from / to it stay async
};
std::map<void*, Mapping> g_allocations;  // pointer handed out → its mapping (guard pages included)

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

std::mutex g_queue_mutex;
std::vector<std::function<void()>> g_queue;  // issued, not yet run: every stream's work in issue order
std::mutex g_capture_mutex;
std::vector<CUgraph_st*> g_global_captures;  // captures in cudaStreamCaptureModeGlobal
thread_local std::vector<CUgraph_st*> t_captures;  // this thread's captures

// Runs everything issued so far (a synchronisation point).
std::mutex g_drain_mutex;                  // one drain at a time: a sync returns after all work issued before it has run
std::vector<CUevent_st*> g_dead_events;    // destroyed while queued work may still record them
std::vector<CUgraphExec_st*> g_dead_execs;  // destroyed while a queued launch may still run them

void drain() {
  std::lock_guard<std::mutex> running(g_drain_mutex);
  for (;;) {
    std::vector<std::function<void()>> work;
    {
      std::lock_guard<std::mutex> lock(g_queue_mutex);
      work.swap(g_queue);
    }
    if (work.empty()) break;
    for (auto& op : work) op();
  }
  std::lock_guard<std::mutex> lock(g_queue_mutex);  // nothing queued refers to them now
  for (CUevent_st* e : g_dead_events) delete e;
  for (CUgraphExec_st* x : g_dead_execs) delete x;
  g_dead_events.clear();
  g_dead_execs.clear();
}

// Records `op` into the stream's capture, or queues it to run at the next synchronisation.
cudaError_t issue(cudaStream_t s, std::function<void()> op) {
  CUstream_st* st = stream_of(s);
  if (st->capture) {
    st->capture->ops.push_back(std::move(op));
    ++st->captured_ops;
    return cudaSuccess;
  }
  std::lock_guard<std::mutex> lock(g_queue_mutex);
  g_queue.push_back(std::move(op));
  return cudaSuccess;
}

// A call a capture forbids (it would synchronise or allocate): under this thread's capture, or any
// thread's in global mode, it fails and invalidates the capture, as the runtime does.
bool forbidden_in_capture() {
  std::vector<CUgraph_st*> hit(t_captures.begin(), t_captures.end());
  {
    std::lock_guard<std::mutex> lock(g_capture_mutex);
    hit.insert(hit.end(), g_global_captures.begin(), g_global_captures.end());
  }
  std::lock_guard<std::mutex> lock(g_capture_mutex);
  for (CUgraph_st* g : hit) g->invalidated = true;
  return !hit.empty();
}

// Each allocation ends where a guard page begins (and one more guard page precedes its mapping), so a
// kernel that reads or writes 256 bytes or more past the end faults at once (simt.cpp names the
// block and thread) instead of reading a neighbour's data as a GPU might without compute-sanitizer.
void* allocate(size_t bytes, bool host) {
  constexpr size_t kPage = 4096;
  const size_t body = std::max<size_t>(256, (bytes + 255) / 256 * 256);  // cudaMalloc's 256-byte alignment
  const size_t span = (body + kPage - 1) / kPage * kPage, total = span + 2 * kPage;
  void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  auto* base = static_cast<unsigned char*>(m);
  mprotect(base, kPage, PROT_NONE);
  mprotect(base + kPage + span, kPage, PROT_NONE);
  void* p = base + kPage + span - body;
  std::memset(p, 0xff, body);
  std::lock_guard<std::mutex> lock(g_state);
  g_allocations[p] = Mapping{m, total, body, host};
  return p;
}

// Whether [p, p + n) lies in pinned host memory or device memory (an allocation of ours), and if
// so whether it is pinned host memory.
bool ours(const void* p, bool& pinned) {
  std::lock_guard<std::mutex> lock(g_state);
  auto it = g_allocations.upper_bound(const_cast<void*>(p));
  if (it == g_allocations.begin()) return false;
  --it;
  const auto* base = static_cast<const unsigned char*>(it->first);
  if (static_cast<const unsigned char*>(p) >= base + it->second.body) return false;
  pinned = it->second.host;
  return true;
}
bool pageable(const void* p) {
  bool pinned = false;
  return !ours(p, pinned);
}

}  // namespace

cudaError_t launch_kernel(const void* kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                          const cudaLaunchAttribute* extra, int n_extra, std::function<void()> body) {
  for (int i = 0; i < n_extra; ++i)
    if (extra[i].id == cudaLaunchAttributeClusterDimension) return fail(cudaErrorNotSupported);  // no clusters here
  // The shape is checked at the launch, as the runtime does (also while capturing).
  const unsigned long long threads_ = 1ull * block.x * block.y * block.z;
  if (threads_ == 0 || threads_ > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
      grid.z > 65535)
    return fail(cudaErrorInvalidConfiguration);
  size_t allowed = kSmemDefault;
  {
    std::lock_guard<std::mutex> lock(g_state);
    if (auto it = g_smem_optin.find(kernel); it != g_smem_optin.end()) allowed = std::max<size_t>(allowed, it->second);
  }
  if (smem > allowed) return fail(cudaErrorInvalidValue);  // as the runtime refuses it: opt in first
  const int threads = static_cast<int>(block.x * block.y * block.z);
  int per_sm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
  GridShape shape{grid, block, smem, static_cast<size_t>(std::max(1, per_sm) * kSms), kernel};
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
cudaError_t cudaDeviceSynchronize() {
  if (memra::emu::forbidden_in_capture()) return fail(cudaErrorStreamCaptureUnsupported);
  memra::emu::drain();
  return g_last;
}
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
    case cudaErrorLaunchFailure: return "unspecified launch failure (memra-emu: see its error above)";
    default: return "memra-emu: unrecognized error code";
  }
}
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
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
  if (memra::emu::forbidden_in_capture()) return fail(cudaErrorStreamCaptureUnsupported);
  *p = memra::emu::allocate(bytes, false);
  return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  if (memra::emu::forbidden_in_capture()) return fail(cudaErrorStreamCaptureUnsupported);
  *p = memra::emu::allocate(bytes, true);
  return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned) { return cudaMallocHost(p, bytes); }
cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  if (memra::emu::forbidden_in_capture()) return fail(cudaErrorStreamCaptureUnsupported);
  memra::emu::drain();  // cudaFree waits for the device
  memra::emu::Mapping m{};
  {
    std::lock_guard<std::mutex> lock(memra::emu::g_state);
    auto it = memra::emu::g_allocations.find(p);
    if (it == memra::emu::g_allocations.end()) return fail(cudaErrorInvalidValue);
    m = it->second;
    memra::emu::g_allocations.erase(it);
  }
  munmap(m.base, m.bytes);
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *free_bytes = 16ull << 30;
  *total = 64ull << 30;
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind) {
  if (memra::emu::forbidden_in_capture()) return fail(cudaErrorStreamCaptureUnsupported);
  memra::emu::drain();  // on the legacy stream: after all earlier work
  if (n) std::memmove(dst, src, n);
  return g_last;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const bool capturing = memra::emu::stream_of(s)->capture != nullptr;
  if (!capturing && memra::emu::pageable(dst)) {  // into pageable memory: synchronous, as the runtime does
    memra::emu::drain();
    std::memmove(dst, src, n);
    return g_last;
  }
  if (!capturing && memra::emu::pageable(src)) {  // from pageable memory: staged now, the source free at return
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                               static_cast<const unsigned char*>(src) + n);
    return memra::emu::issue(s, [=] { std::memcpy(dst, staged->data(), n); });
  }
  return memra::emu::issue(s, [=] { std::memmove(dst, src, n); });
}
cudaError_t cudaMemcpyPeerAsync(void* dst, int, const void* src, int, size_t n, cudaStream_t s) {
  return cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s);
}
cudaError_t cudaMemset(void* p, int v, size_t n) {  // asynchronous for device memory, as the runtime's
  if (memra::emu::forbidden_in_capture()) return fail(cudaErrorStreamCaptureUnsupported);
  return memra::emu::issue(nullptr, [=] { std::memset(p, v, n); });
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
cudaError_t cudaStreamDestroy(cudaStream_t s) {  // its queued work still runs (no op refers to the stream)
  if (s && s != cudaStreamLegacy && s != cudaStreamPerThread) delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (memra::emu::stream_of(s)->capture || memra::emu::forbidden_in_capture()) {
    if (CUgraph_st* g = memra::emu::stream_of(s)->capture) g->invalidated = true;
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  memra::emu::drain();
  return g_last;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
  CUstream_st* st = memra::emu::stream_of(s);
  if (e->capture && e->capture->capturing) {
    if (!st->capture) {  // a fork: the stream joins the capture
      st->capture = e->capture;
      st->captured_ops = st->rejoined_at = 0;
      e->capture->joined.push_back(st);
    } else if (e->stream && e->stream != st) {  // a join: st now waits for e's stream's work so far
      e->stream->rejoined_at = std::max(e->stream->rejoined_at, e->index);
    }
  }
  return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  CUstream_st* st = memra::emu::stream_of(s);
  if (st == &memra::emu::g_default_stream || st->capture) return fail(cudaErrorStreamCaptureUnsupported);
  st->capture = new CUgraph_st;
  st->capture->mode = mode;
  st->origin = true;
  st->captured_ops = st->rejoined_at = 0;
  if (mode == cudaStreamCaptureModeGlobal) {
    std::lock_guard<std::mutex> lock(memra::emu::g_capture_mutex);
    memra::emu::g_global_captures.push_back(st->capture);
  } else if (mode == cudaStreamCaptureModeThreadLocal) {
    memra::emu::t_captures.push_back(st->capture);
  }
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  CUstream_st* st = memra::emu::stream_of(s);
  if (!st->capture || !st->origin) return fail(cudaErrorIllegalState);
  CUgraph_st* g = st->capture;
  // Every forked stream's work must have been waited for by another stream of the capture.
  bool unjoined = false;
  for (CUstream_st* j : g->joined) {
    unjoined = unjoined || j->captured_ops > j->rejoined_at;
    j->capture = nullptr;
  }
  for (CUevent_st* e : g->recorded) e->capture = nullptr, e->stream = nullptr;  // they outlive the graph
  g->capturing = false;
  st->capture = nullptr;
  st->origin = false;
  {
    std::lock_guard<std::mutex> lock(memra::emu::g_capture_mutex);
    auto& gl = memra::emu::g_global_captures;
    gl.erase(std::remove(gl.begin(), gl.end(), g), gl.end());
  }
  auto& tl = memra::emu::t_captures;
  tl.erase(std::remove(tl.begin(), tl.end(), g), tl.end());
  if (g->invalidated || unjoined) {
    delete g;
    *graph = nullptr;
    return fail(unjoined ? cudaErrorStreamCaptureUnjoined : cudaErrorStreamCaptureInvalidated);
  }
  *graph = g;
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
  if (e->capture) {
    auto& r = e->capture->recorded;
    r.erase(std::remove(r.begin(), r.end(), e), r.end());
  }
  std::lock_guard<std::mutex> lock(memra::emu::g_queue_mutex);
  memra::emu::g_dead_events.push_back(e);  // freed at the next drain: a queued record may still write it
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  CUstream_st* st = memra::emu::stream_of(s);
  if (e->capture && e->capture != st->capture) {
    auto& r = e->capture->recorded;
    r.erase(std::remove(r.begin(), r.end(), e), r.end());
  }
  e->capture = st->capture;
  e->stream = st->capture ? st : nullptr;
  e->index = st->captured_ops;  // the stream's captured work so far (before this record)
  if (st->capture) {  // in a capture a record only orders the graph's work: no node of its own
    st->capture->recorded.push_back(e);
    return cudaSuccess;
  }
  return memra::emu::issue(s, [e] { e->at = std::chrono::steady_clock::now(); });
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned) { return cudaEventRecord(e, s); }
cudaError_t cudaEventSynchronize(cudaEvent_t) {
  if (memra::emu::forbidden_in_capture()) return fail(cudaErrorStreamCaptureUnsupported);
  memra::emu::drain();
  return g_last;
}
cudaError_t cudaEventQuery(cudaEvent_t) {
  memra::emu::drain();  // done, once run
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  memra::emu::drain();
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long) {
  if (!g) return fail(cudaErrorInvalidValue);
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
  std::lock_guard<std::mutex> lock(memra::emu::g_queue_mutex);
  memra::emu::g_dead_execs.push_back(e);  // freed at the next drain: a queued launch may still run it
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
