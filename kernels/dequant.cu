// Packed weights → bf16 (ops.h dequant_bf16): the dense operand cuBLAS needs on the cuda-fast
// realization's large rounds (prefill). The caller (shard.cpp) dequantises one matrix at a time into
// scratch it reuses, right before the GEMM that reads it, so the device never holds a dequantised
// copy of the model. Values are packed_decode.h's (exact f32 products), rounded to bf16: exact
// whenever the value fits bf16 (docs/quantization.md).
//
//   grid-stride over rows · cols elements, block 256, one element per thread step
#include <cuda_bf16.h>

#include "common.cuh"
#include "launch.cuh"
#include "ops.h"
#include "packed_decode.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;

template <bool kFp4>
__global__ void __launch_bounds__(kBlock) dequant_kernel(const uint8_t* w, WScale ws, int64_t rows, int64_t cols,
                                                         __nv_bfloat16* out) {
  pdl_begin();
  const int64_t total = rows * cols;
  for (int64_t id = global_thread(); id < total; id += global_stride()) {
    const int64_t r = id / cols, k = id % cols;
    const float scale = e8m0_f32(ws.ptr[(r / ws.block_rows) * ws.cols + k / ws.block_cols]);
    const float v = kFp4 ? fp4_at(w + r * (cols / 2), k, scale) : fp8_at(w + r * cols, k, scale);
    out[id] = __float2bfloat16_rn(v);
  }
}

}  // namespace

cudaError_t dequant_bf16(const void* w, WType wtype, const WScale& ws, int64_t rows, int64_t cols, void* out,
                         cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!w || !out || rows < 0 || cols <= 0 || cols > INT32_MAX || !wtype_packed(wtype) ||
      !wscale_valid(wtype, ws, static_cast<int>(cols)))
    return cudaErrorInvalidValue;
  const int64_t blocks = (rows * cols + kBlock - 1) / kBlock;
  const int grid = static_cast<int>(blocks < 65535 * 8 ? blocks : 65535 * 8);
  const auto* codes = static_cast<const uint8_t*>(w);
  auto* dst = static_cast<__nv_bfloat16*>(out);
  if (wtype == WType::kFp4Block) return launch(dequant_kernel<true>, grid, kBlock, 0, stream, codes, ws, rows, cols, dst);
  return launch(dequant_kernel<false>, grid, kBlock, 0, stream, codes, ws, rows, cols, dst);
}

}  // namespace memra::cuda
