// memra_emu_selftest: memra-emu's own contract (kernels/emu/README.md), each point a kernel that
// could show it wrong. Compiled as an emulated kernel file (simt.h force-included, racecheck's
// instrumentation on) and linked against libmemra_cuda_emu.so; a fault or abort is expected of
// some, so those run in a child process (fork) and the parent reads how it ended.
#define CATCH_CONFIG_MAIN
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "emu/runtime.h"

namespace {

using memra::emu::launch_kernel;

template <typename... P, typename... A>
cudaError_t go(void (*k)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, A... a) {
  return launch_kernel(reinterpret_cast<const void*>(k), grid, block, smem, s, nullptr, 0, [=] { k(a...); });
}

// Runs f in a child; returns its signal (0 when it exited normally) and its exit status.
std::pair<int, int> in_child(const std::function<void()>& f) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stderr);
    signal(SIGSEGV, SIG_DFL);  // Catch2's handlers would report the child's end as the parent's failure
    signal(SIGABRT, SIG_DFL);
    f();
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return {WIFSIGNALED(st) ? WTERMSIG(st) : 0, WIFEXITED(st) ? WEXITSTATUS(st) : -1};
}

template <typename T>
T* device(size_t n) {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, n * sizeof(T)) == cudaSuccess);
  return static_cast<T*>(p);
}
template <typename T>
std::vector<T> download(const T* d, size_t n) {
  std::vector<T> h(n);
  REQUIRE(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  return h;
}

__global__ void shuffles(int* out) {
  const int l = threadIdx.x;
  out[l] = __shfl_xor_sync(0xffffffffu, l, 8, 8);        // lane ^ 8 is in a later segment for l % 16 < 8
  out[32 + l] = __shfl_down_sync(0xffffffffu, l, 3, 8);  // past its segment's end: its own value
  out[64 + l] = __shfl_up_sync(0xffffffffu, l, 1);
  out[96 + l] = __shfl_sync(0xffffffffu, l, 5, 16);
}

TEST_CASE("warp shuffles follow PTX, widths below 32 included", "[emu]") {
  int* d = device<int>(128);
  REQUIRE(go(shuffles, 1, 32, 0, nullptr, d) == cudaSuccess);
  const auto h = download(d, 128);
  for (int l = 0; l < 32; ++l) {
    const int seg = l & ~7, x = l ^ 8;
    CHECK(h[l] == (x > seg + 7 ? l : x));
    CHECK(h[32 + l] == ((l & 7) + 3 < 8 ? l + 3 : l));
    CHECK(h[64 + l] == (l >= 1 ? l - 1 : l));
    CHECK(h[96 + l] == (l & ~15) + 5);
  }
  cudaFree(d);
}

__global__ void ballot_after_exit(unsigned* out) {
  if (threadIdx.x >= 16) return;  // lanes 16-31 leave before the ballot
  const unsigned b = __ballot_sync(0x0000ffffu, 1);
  if (threadIdx.x == 0) out[0] = b;
}

TEST_CASE("a ballot counts only the lanes that took part", "[emu]") {
  unsigned* d = device<unsigned>(1);
  REQUIRE(go(ballot_after_exit, 1, 32, 0, nullptr, d) == cudaSuccess);
  CHECK(download(d, 1)[0] == 0x0000ffffu);
  cudaFree(d);
}

// D = A·B by one m16n8k8 mma, each lane loading its fragments by the PTX ISA's table (as
// mma_tf32.cuh states it), against the host's product. Small integers: every sum is exact.
__global__ void one_mma(const float* A, const float* B, float* D) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  const uint32_t a[4] = {__float_as_uint(A[g * 8 + t]), __float_as_uint(A[(g + 8) * 8 + t]),
                         __float_as_uint(A[g * 8 + t + 4]), __float_as_uint(A[(g + 8) * 8 + t + 4])};
  const uint32_t b[2] = {__float_as_uint(B[t * 8 + g]), __float_as_uint(B[(t + 4) * 8 + g])};
  float c[4] = {0, 0, 0, 0};
  memra::emu::mma_m16n8k8_tf32(c, a, b);
  D[g * 8 + 2 * t] = c[0];
  D[g * 8 + 2 * t + 1] = c[1];
  D[(g + 8) * 8 + 2 * t] = c[2];
  D[(g + 8) * 8 + 2 * t + 1] = c[3];
}

TEST_CASE("mma.sync m16n8k8's fragments give A·B", "[emu]") {
  std::vector<float> A(128), B(64), want(128, 0.0f);
  for (int i = 0; i < 128; ++i) A[i] = static_cast<float>((i * 7) % 11 - 5);
  for (int i = 0; i < 64; ++i) B[i] = static_cast<float>((i * 5) % 9 - 4);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n)
      for (int k = 0; k < 8; ++k) want[r * 8 + n] += A[r * 8 + k] * B[k * 8 + n];
  float *dA = device<float>(128), *dB = device<float>(64), *dD = device<float>(128);
  REQUIRE(cudaMemcpy(dA, A.data(), 512, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(dB, B.data(), 256, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(go(one_mma, 1, 32, 0, nullptr, dA, dB, dD) == cudaSuccess);
  CHECK(download(dD, 128) == want);
  cudaFree(dA), cudaFree(dB), cudaFree(dD);
}

__global__ void fill(int* p, int n, int v) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] = v;
}

TEST_CASE("stream work runs at a synchronisation, not when issued", "[emu]") {
  int* d = device<int>(64);
  int* pinned = nullptr;
  REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&pinned), 64 * sizeof(int)) == cudaSuccess);
  std::memset(pinned, 0, 64 * sizeof(int));
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(go(fill, 1, 64, 0, s, d, 64, 7) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(pinned, d, 64 * sizeof(int), cudaMemcpyDeviceToHost, s) == cudaSuccess);
  CHECK(pinned[5] == 0);  // read without a synchronisation: not there yet
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(pinned[5] == 7);
  // Into pageable memory the copy is synchronous, as the runtime makes it.
  std::vector<int> host(64, 0);
  REQUIRE(go(fill, 1, 64, 0, s, d, 64, 9) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(host.data(), d, 64 * sizeof(int), cudaMemcpyDeviceToHost, s) == cudaSuccess);
  CHECK(host[5] == 9);
  cudaStreamDestroy(s);
  cudaFreeHost(pinned);
  cudaFree(d);
}

TEST_CASE("a capture refuses synchronisations and unjoined forks", "[emu]") {
  cudaStream_t s, side;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&side) == cudaSuccess);
  int* d = device<int>(64);
  cudaGraph_t g = nullptr;
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  REQUIRE(go(fill, 1, 64, 0, s, d, 64, 1) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  CHECK(g == nullptr);
  cudaGetLastError();

  cudaEvent_t fork, join;
  cudaEventCreate(&fork);
  cudaEventCreate(&join);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  cudaEventRecord(fork, s);
  cudaStreamWaitEvent(side, fork, 0);
  REQUIRE(go(fill, 1, 64, 0, side, d, 64, 2) == cudaSuccess);  // forked work, never joined back
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureUnjoined);
  cudaGetLastError();

  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  cudaEventRecord(fork, s);
  cudaStreamWaitEvent(side, fork, 0);
  REQUIRE(go(fill, 1, 64, 0, side, d, 64, 3) == cudaSuccess);
  cudaEventRecord(join, side);
  cudaStreamWaitEvent(s, join, 0);  // joined: the graph is whole
  REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
  cudaGraphExec_t x;
  REQUIRE(cudaGraphInstantiate(&x, g, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(x, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(download(d, 64)[63] == 3);
  cudaGraphExecDestroy(x);
  cudaGraphDestroy(g);
  cudaEventDestroy(fork);
  cudaEventDestroy(join);
  cudaStreamDestroy(side);
  cudaStreamDestroy(s);
  cudaFree(d);
}

// Warp 1 reads what warp 0 wrote; `barrier` puts a __syncthreads between them. Dynamic shared
// memory: the emulator knows the library's static __shared__ section, not this program's.
__global__ void neighbour_read(int* out, bool barrier) {
  int* s = reinterpret_cast<int*>(memra::emu::dynamic_smem());
  s[threadIdx.x] = static_cast<int>(threadIdx.x);
  if (barrier) __syncthreads();
  out[threadIdx.x] = s[63 - threadIdx.x];
}

TEST_CASE("racecheck fails a launch whose warps meet between barriers", "[emu]") {
  int* d = device<int>(64);
  REQUIRE(go(neighbour_read, 1, 64, 256, nullptr, d, true) == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(download(d, 64)[0] == 63);
  const auto [sig, code] = in_child([&] {
    go(neighbour_read, 1, 64, 256, nullptr, d, false);
    _exit(cudaDeviceSynchronize() == cudaErrorLaunchFailure ? 3 : 4);
  });
  CHECK(sig == 0);
  CHECK(code == 3);
  cudaFree(d);
}

__global__ void store_at(int* p, int i) {
  if (threadIdx.x == 0) p[i] = 1;
}
__global__ void store_dynamic(int i) {
  int* s = reinterpret_cast<int*>(memra::emu::dynamic_smem());  // what MEMRA_DYNAMIC_SMEM expands to here
  if (threadIdx.x == 0) s[i] = 1;
}

TEST_CASE("a store past an allocation or the dynamic shared memory faults", "[emu]") {
  int* d = device<int>(1000);  // 4000 bytes: 4096 with cudaMalloc's rounding, then the guard page
  REQUIRE(go(store_at, 1, 32, 0, nullptr, d, 999) == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(in_child([&] {
          go(store_at, 1, 32, 0, nullptr, d, 1024);
          cudaDeviceSynchronize();
        }).first == SIGSEGV);
  REQUIRE(go(store_dynamic, 1, 32, 4096, nullptr, 1023) == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(in_child([&] {
          go(store_dynamic, 1, 32, 4096, nullptr, 1024);
          cudaDeviceSynchronize();
        }).first == SIGSEGV);
  cudaFree(d);
}

// Lanes 0-15 wait at a warp barrier for lanes 16-31, which wait at the block barrier for them.
__global__ void half_barrier() {
  if (threadIdx.x < 16) __syncwarp();
  else __syncthreads();
}

TEST_CASE("a deadlock is reported, not a hang", "[emu]") {
  CHECK(in_child([] {
          go(half_barrier, 1, 32, 0, nullptr);
          cudaDeviceSynchronize();
        }).first == SIGABRT);
}

__global__ void async_copy(const int* src, int* out) {
  __shared__ __align__(16) int s[4];
  if (threadIdx.x == 0) {
    memra::emu::cp_async16(s, src, true);
    memra::emu::cp_async_commit();
    out[0] = s[0];  // before the wait: still in flight
    memra::emu::cp_async_wait(0);
    out[1] = s[0];
  }
}

TEST_CASE("cp.async lands at its wait", "[emu]") {
  int* src = device<int>(4);
  int* out = device<int>(2);
  const int v[4] = {5, 6, 7, 8};
  REQUIRE(cudaMemcpy(src, v, 16, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(go(async_copy, 1, 32, 0, nullptr, src, out) == cudaSuccess);
  const auto h = download(out, 2);
  CHECK(h[0] == -1);  // the poison
  CHECK(h[1] == 5);
  cudaFree(src), cudaFree(out);
}

}  // namespace
