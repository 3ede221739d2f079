// memra-emu, the device side: what a kernel file needs from CUDA C++ when it is compiled as plain
// C++ and run on the CPU (kernels/emu/README.md). Force-included (-include) before every kernel
// file of the emulated library, after CUDA's own host headers, so the kernels' source is the
// GPU library's, unchanged but for the few inline-PTX helpers that have an emulated branch.
//
// Each CUDA thread is a fiber (simt.cpp); barriers and warp collectives switch between them, so a
// kernel's indexing, shared-memory layouts, fragment maps and barrier placement run as written, and
// racecheck.cpp sees every shared-memory access. What it cannot show: timing, the memory model,
// races in global memory, and the tensor cores' own summation order (mma sums in double).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "emu/racecheck.h"

#ifndef MEMRA_CUDA_EMU
#error "kernels/emu/simt.h is the emulated build's force-included header (MEMRA_CUDA_EMU)"
#endif

// CUDA's host headers define the execution-space keywords as nothing outside nvcc; these are the
// ones they leave undefined or that must mean something here. A kernel's __shared__ variables are
// static, kept in one section, which the scheduler swaps per block when several are resident.
#define __launch_bounds__(...)
#undef __shared__
#define __shared__ static __attribute__((section("memra_emu_smem")))

namespace memra::emu {

inline constexpr int kSlotBytes = 48;  // the most one lane puts into a warp collective (mma: 10 words)

struct Fiber {
  uint3 thread;  // threadIdx
  int linear;    // x + y·bx + z·bx·by
  struct Block* block;
};
struct Block {
  uint3 index;  // blockIdx
  dim3 dim, grid;
  unsigned char* dynamic_smem;
  size_t dynamic_bytes;
  const unsigned* barrier_gen;  // completed __syncthreads so far (racecheck's epochs)
  void* owner;                  // the scheduler's record of this block
  void* shadow;                 // racecheck.cpp's record of this block's shared memory
};

// The running fiber. Not thread_local: launches run one at a time (a mutex), all of a launch's
// fibers on the thread that holds it, and every threadIdx reads it (TLS in a shared library is a call).
extern Fiber* g_fiber;

inline int lane() { return g_fiber->linear % 32; }
void sync_block();
int sync_block_or(int pred);
// Deposits `bytes` (≤ kSlotBytes) of this lane's into its slot, waits for every live lane of
// `mask`, and returns the 32 slots (kSlotBytes apart). A slot stays readable until the lane's
// second collective after this one.
// `arrived`, when given, gets the lanes that took part (the mask's live lanes).
const unsigned char* warp_gather(unsigned mask, const void* mine, int bytes, unsigned* arrived = nullptr);
// cp.async: the 16 bytes read now, the destination poisoned until a wait completes its group.
void cp_async16(void* dst, const void* src, bool valid);
void cp_async_commit();
void cp_async_wait(int pending);
void spin_yield();  // a thread waiting on another block (__nanosleep): run the others
unsigned char* dynamic_smem();
long long clock_ticks();
unsigned long long global_ns();
[[noreturn]] void trap();
// "library+offset" of a kernel (addr2line -Cfe LIBRARY OFFSET names it; kernels in anonymous
// namespaces have no dynamic symbol to print): the fault handler's and racecheck's messages.
void kernel_label(const void* kernel, char* out, size_t n);

template <typename T>
T gather_one(unsigned mask, T v, int src) {
  static_assert(sizeof(T) <= kSlotBytes && std::is_trivially_copyable_v<T>, "warp shuffle value");
  const unsigned char* slots = warp_gather(mask, &v, sizeof(T));
  T r;
  std::memcpy(&r, slots + src * kSlotBytes, sizeof(T));
  return r;
}

}  // namespace memra::emu

// threadIdx & co. are variables in CUDA's host headers; here they read the running fiber.
#define threadIdx (::memra::emu::g_fiber->thread)
#define blockIdx (::memra::emu::g_fiber->block->index)
#define blockDim (::memra::emu::g_fiber->block->dim)
#define gridDim (::memra::emu::g_fiber->block->grid)

inline void __syncthreads() { ::memra::emu::sync_block(); }
inline int __syncthreads_or(int pred) { return ::memra::emu::sync_block_or(pred); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::memra::emu::warp_gather(mask, nullptr, 0); }
inline void __threadfence() {}
inline void __nanosleep(unsigned) { ::memra::emu::spin_yield(); }
inline long long clock64() { return ::memra::emu::clock_ticks(); }
inline void __trap() { ::memra::emu::trap(); }

template <typename T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  const int lane = ::memra::emu::lane();
  return ::memra::emu::gather_one(mask, v, ((lane & ~(width - 1)) + (src & (width - 1))) & 31);
}
// PTX shfl.bfly: source lane ^ m (5 bits); a source past the lane's own segment gives the lane's
// own value, one in an earlier segment is taken as it is.
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
  const int lane = ::memra::emu::lane(), src = lane ^ (m & 31);
  const int seg_end = (lane & ~(width - 1)) + width - 1;
  return ::memra::emu::gather_one(mask, v, src > seg_end ? lane : src);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
  const int lane = ::memra::emu::lane(), seg = lane & (width - 1), dd = static_cast<int>(d & 31);
  return ::memra::emu::gather_one(mask, v, seg >= dd ? lane - dd : lane);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
  const int lane = ::memra::emu::lane(), seg = lane & (width - 1), dd = static_cast<int>(d & 31);
  return ::memra::emu::gather_one(mask, v, seg + dd < width ? lane + dd : lane);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  const int p = pred != 0;
  unsigned took_part = 0;
  const unsigned char* slots = ::memra::emu::warp_gather(mask, &p, sizeof p, &took_part);
  unsigned r = 0;
  for (int l = 0; l < 32; ++l)
    if ((took_part >> l) & 1u) {
      int v;
      std::memcpy(&v, slots + l * ::memra::emu::kSlotBytes, sizeof v);
      if (v) r |= 1u << l;
    }
  return r;
}
template <typename T>
unsigned __match_any_sync(unsigned mask, T value) {
  unsigned took_part = 0;
  const unsigned char* slots = ::memra::emu::warp_gather(mask, &value, sizeof value, &took_part);
  unsigned r = 0;
  for (int l = 0; l < 32; ++l)
    if (((took_part >> l) & 1u) && std::memcmp(slots + l * ::memra::emu::kSlotBytes, &value, sizeof value) == 0) r |= 1u << l;
  return r;
}

// CUDA's device min / max overloads (global, unlike std::min's single-type template).
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned min(int a, unsigned b) { return min(static_cast<unsigned>(a), b); }
inline unsigned min(unsigned a, int b) { return min(a, static_cast<unsigned>(b)); }
inline unsigned max(int a, unsigned b) { return max(static_cast<unsigned>(a), b); }
inline unsigned max(unsigned a, int b) { return max(a, static_cast<unsigned>(b)); }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline long long min(int a, long long b) { return min(static_cast<long long>(a), b); }
inline long long min(long long a, int b) { return min(a, static_cast<long long>(b)); }
inline long long max(int a, long long b) { return max(static_cast<long long>(a), b); }
inline long long max(long long a, int b) { return max(a, static_cast<long long>(b)); }
inline long min(int a, long b) { return min(static_cast<long>(a), b); }
inline long min(long a, int b) { return min(a, static_cast<long>(b)); }
inline long max(int a, long b) { return max(static_cast<long>(a), b); }
inline long max(long a, int b) { return max(a, static_cast<long>(b)); }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }

inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline unsigned __brev(unsigned v) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
  return r;
}
inline float __uint_as_float(unsigned v) {
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned v;
  std::memcpy(&v, &f, 4);
  return v;
}
inline float __fmaf_rn(float a, float b, float c) { return std::fmaf(a, b, c); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
template <typename T>
T __ldg(const T* p) {
  return *p;
}
template <typename T>
T __ldcg(const T* p) {
  return *p;
}
inline size_t __cvta_generic_to_shared(const void* p) { return reinterpret_cast<size_t>(p); }

// Atomics: fibers switch only at barriers and collectives, so a read-modify-write is atomic here;
// not instrumented, so racecheck does not take two warps' atomics on one word for a race.
template <typename T>
__attribute__((no_sanitize("thread"))) T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}
template <typename T>
__attribute__((no_sanitize("thread"))) T atomicMin(T* p, T v) {
  const T old = *p;
  if (v < old) *p = v;
  return old;
}

namespace memra::emu {
// ldmatrix.x4 (b16, not transposed): lane l gives the row address of matrix l / 8, row l % 8; lane l
// receives, of each matrix i, the 32-bit word (l % 4) of row l / 4.
void ldmatrix_x4(uint32_t (&r)[4], const void* row);
// mma.sync m16n8k8 row.col f32.tf32.tf32.f32 (fragments as in mma_tf32.cuh); the TF32 inputs'
// low 13 bits ignored, as the tensor cores do; each output one double sum of c and the 8 products.
void mma_m16n8k8_tf32(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
// ex2.approx.ftz.f32: 2^x with subnormal inputs and results flushed to zero (the hardware's is
// within 2 ulp; this one is glibc's exp2f).
inline float ex2_approx_ftz(float x) {
  if (std::fabs(x) < 1.17549435e-38f) x = 0.0f;
  const float r = std::exp2(x);
  return std::fabs(r) < 1.17549435e-38f ? 0.0f : r;
}
// cvt.rna.tf32.f32: to nearest, ties away from zero, low 13 bits cleared (NaN and Inf kept).
inline uint32_t tf32_rna(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0x7fffffu) ? 0x7fffffffu : u;  // NaN: canonical
  return (u + 0x1000u) & 0xffffe000u;
}
// cvt.rn.tf32.f32: to nearest, ties to even, low 13 bits cleared (NaN and Inf kept).
inline uint32_t tf32_rn(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0x7fffffu) ? 0x7fffffffu : u;  // NaN: canonical
  u += 0xfffu + ((u >> 13) & 1u);
  return u & 0xffffe000u;
}
}  // namespace memra::emu
