// Two dependent exact linears of one row in one persistent launch: z = x·Waᵀ (grouped or not), then
// y = z·Wbᵀ (with b's hc_post epilogue, if any): the decode step's wo_a → wo_b. Two launches pay the
// second matrix's ramp after the first's tail (each 64 MB stream ~22 us for ~16 us of bytes, run 47);
// here the blocks that finish a's tiles go on to b's as soon as the last a tile is counted, and the
// grid streams both matrices like the one-row MoE (moe.cu) streams its experts.
//
// Items (blocks take it = blockIdx.x, + gridDim.x, …): [0, a_tiles) a's outputs, kPairOuts per tile,
// two per warp (dot_rows_pair: two dot_rows<Row, 1> sequences, linear_one_row_kernel's bits);
// [a_tiles, a_tiles + b_tiles) b's outputs likewise, from a copy of z in shared memory that a block
// makes once, after sync[0] counts every a tile (z is read through L2: other blocks wrote it).
// No deadlock: a block takes its items in ascending order and every a item precedes every b item,
// so a waiting block waits only on a items that blocks not waiting run; the grid is at most the
// kernel's resident capacity, so every block gets an SM once other kernels drain. sync [2]: [0] a
// tiles done, [1] blocks finished; the last block zeroes both for the next launch.
//
// MEMRA_CUDA_LINEAR_PAIR_PREFETCH=KB asks a block's first b tile into L2 before it waits (A/B).
//
//   grid min(items, resident blocks)   block 256   dynamic shared memory b.in floats
#include <algorithm>
#include <cstdlib>

#include "common.cuh"
#include "device_caps.h"
#include "dot_exact.cuh"
#include "launch.cuh"
#include "linear_store.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / kWarp;
constexpr int kPairOuts = 2 * kWarps;  // outputs per tile: two per warp

// One output q of a flattened [groups · out] linear on one row (x at x_row + its group's stride).
// The args by value: a reference to the kernel's parameter made ptxas copy it to a stack frame.
template <typename Row>
__device__ __forceinline__ void one_output(LinearArgs a, const float* x_row, int q) {
  const int g = q / a.out, o = q % a.out;
  const float* const xr[1] = {x_row + g * a.x_gstride};
  float acc[1];
  dot_rows<Row, 1>(xr, 1, Row::at(a.w, a.ws, g * a.w_gstride / a.in + o, a.in), a.in, acc);
  if (threadIdx.x % kWarp == 0) store_output(a, g, 0, o, acc[0]);
}

// Outputs q and q + 1 (those below groups · out) on one warp: one loop over both weight rows when
// they are in one group, else one after the other; each is dot_rows<Row, 1>'s sequence.
template <typename Row>
__device__ __forceinline__ void two_outputs(LinearArgs a, const float* x_row, int q) {
  const int total = a.groups * a.out;
  if (q >= total) return;
  const int g = q / a.out, o = q % a.out;
  if (q + 1 < total && o + 1 < a.out) {
    const int64_t first = g * a.w_gstride / a.in;
    float acc0, acc1;
    dot_rows_pair<Row>(x_row + g * a.x_gstride, Row::at(a.w, a.ws, first + o, a.in), Row::at(a.w, a.ws, first + o + 1, a.in),
                       a.in, acc0, acc1);
    if (threadIdx.x % kWarp == 0) store_output(a, g, 0, o, acc0), store_output(a, g, 0, o + 1, acc1);
    return;
  }
  one_output<Row>(a, x_row, q);
  if (q + 1 < total) one_output<Row>(a, x_row, q + 1);
}

// The first `bytes` of b's rows for tile `tile` (contiguous: row-major, plain weights) asked into L2
// by the block while it waits for a's last tiles (MEMRA_CUDA_LINEAR_PAIR_PREFETCH, KB per tile).
template <typename Row>
__device__ __forceinline__ void prefetch_tile(const LinearArgs& b, int tile, int bytes) {
  const int64_t row_bytes = Row::matrix_bytes(1, b.in);
  const int rows = min(kPairOuts, b.out - tile * kPairOuts);
  const int64_t span = min(static_cast<int64_t>(bytes), rows * row_bytes);
  const char* base = static_cast<const char*>(b.w) + static_cast<int64_t>(tile) * kPairOuts * row_bytes;
  for (int64_t off = static_cast<int64_t>(threadIdx.x) * 128; off < span; off += kBlock * 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(base + off));
}

template <typename Row>
__global__ void __launch_bounds__(kBlock) linear_pair_kernel(LinearArgs a, LinearArgs b, int32_t* sync, int a_tiles,
                                                             int b_tiles, int prefetch_bytes) {
  pdl_begin();
  extern __shared__ __align__(16) float z_s[];  // [b.in]: a's outputs, once per block
  const int warp = threadIdx.x / kWarp;
  const int n_items = a_tiles + b_tiles;
  bool staged = false;
  for (int it = blockIdx.x; it < n_items; it += gridDim.x) {
    if (it < a_tiles) {
      two_outputs<Row>(a, a.x, it * kPairOuts + 2 * warp);
      __threadfence();  // the values reach L2 before the count below says so
      __syncthreads();
      if (threadIdx.x == 0) atomicAdd(&sync[0], 1);
      continue;
    }
    if (!staged) {
      if (prefetch_bytes > 0) prefetch_tile<Row>(b, it - a_tiles, prefetch_bytes);
      if (threadIdx.x == 0) {
        const long long start = clock64();
        while (*reinterpret_cast<volatile int32_t*>(&sync[0]) < a_tiles) {
          __nanosleep(64);
          if (clock64() - start > (1ll << 33)) __trap();  // seconds: a broken invariant, not a hang
        }
        __threadfence();
      }
      __syncthreads();
#pragma unroll 4
      for (int i = threadIdx.x; i < b.in; i += kBlock) z_s[i] = __ldcg(b.x + i);  // L2: other blocks wrote it
      __syncthreads();
      staged = true;
    }
    two_outputs<Row>(b, z_s, (it - a_tiles) * kPairOuts + 2 * warp);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&sync[1], 1) == static_cast<int>(gridDim.x) - 1) {
      sync[0] = 0, sync[1] = 0;
      __threadfence();
    }
  }
}

// MEMRA_CUDA_LINEAR_PAIR_PREFETCH=KB (A/B timing; same bits): each block's first b tile, up to KB
// kilobytes of it, asked into L2 before the block waits for a. Unset: none.
int prefetch_bytes() {
  static const int bytes = [] {
    const char* v = std::getenv("MEMRA_CUDA_LINEAR_PAIR_PREFETCH");
    return v ? std::max(0, std::atoi(v)) * 1024 : 0;
  }();
  return bytes;
}

template <typename Row>
cudaError_t launch_pair(const LinearArgs& a, const LinearArgs& b, int32_t* sync, cudaStream_t stream) {
  const size_t smem = static_cast<size_t>(b.in) * sizeof(float);
  DeviceCaps caps;
  int per_sm = 0;
  cudaError_t err;
  if ((err = current_device_caps(caps)) != cudaSuccess ||
      (err = resident_blocks(reinterpret_cast<const void*>(linear_pair_kernel<Row>), kBlock, smem, per_sm)) != cudaSuccess)
    return err;
  if (per_sm < 1) return cudaErrorInvalidConfiguration;
  const int a_tiles = static_cast<int>((static_cast<int64_t>(a.groups) * a.out + kPairOuts - 1) / kPairOuts);
  const int b_tiles = (b.out + kPairOuts - 1) / kPairOuts;
  const int grid = static_cast<int>(std::min<int64_t>(a_tiles + b_tiles, static_cast<int64_t>(per_sm) * caps.sms));
  return launch(linear_pair_kernel<Row>, grid, kBlock, smem, stream, a, b, sync, a_tiles, b_tiles, prefetch_bytes());
}

// The one launch serves one row of two plain matrices of one type whose link is contiguous (b reads
// a's whole output) and fits the default shared memory; anything else runs as two linear_exact launches.
bool pair_fits(const LinearArgs& a, const LinearArgs& b) {
  const bool plain = a.wtype == WType::kF32 || a.wtype == WType::kBF16 || a.wtype == WType::kF16;
  return plain && a.wtype == b.wtype && a.rows == 1 && b.rows == 1 && b.groups == 1 && b.x == a.y &&
         a.y_gstride == a.out && static_cast<int64_t>(a.groups) * a.out == b.in && a.x_gstride % a.in == 0 &&
         static_cast<size_t>(b.in) * sizeof(float) <= 48 * 1024 && a.hc.X == nullptr;
}

}  // namespace

cudaError_t linear_pair_exact(const LinearArgs& a, const LinearArgs& b, int32_t* sync, cudaStream_t stream) {
  if (!sync || !pair_fits(a, b)) {
    const cudaError_t err = linear_exact(a, stream);
    return err != cudaSuccess ? err : linear_exact(b, stream);
  }
  if (!a.x || !a.w || !a.y || !b.w || a.in <= 0 || a.out <= 0 || b.out <= 0 || a.groups < 1 ||
      a.w_gstride % a.in != 0 || (b.hc.X && (!b.hc.post || !b.hc.comb || b.hc.n < 1 || b.hc.n > kMaxHc)) ||
      (!b.hc.X && !b.y))
    return cudaErrorInvalidValue;
  switch (a.wtype) {
    case WType::kF32: return launch_pair<PlainRow<float>>(a, b, sync, stream);
    case WType::kBF16: return launch_pair<PlainRow<__nv_bfloat16>>(a, b, sync, stream);
    case WType::kF16: return launch_pair<PlainRow<__half>>(a, b, sync, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace memra::cuda
