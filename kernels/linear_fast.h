// The fast realization's linear: cuBLAS on the tensor cores. bf16/f16 weights take activations
// rounded to the same type (f32 accumulation, f32 output); f32 weights run TF32. Not exact: cuBLAS
// may pick another algorithm (another reduction order) for another shape, so results depend on the
// row count; cuda-fast is compared to cuda through the chunk-semantics band.
#pragma once
#include <cublas_v2.h>

#include "ops.h"

namespace memra::cuda {

// Bytes of conversion scratch linear_fast needs for `a` (0 for f32 weights or 16-bit activations given as x16).
size_t linear_fast_scratch(const LinearArgs& a);
// Returns nullptr on success, else the failing step's error text.
const char* linear_fast(cublasHandle_t handle, const LinearArgs& a, void* scratch, size_t scratch_bytes,
                        cudaStream_t stream);

}  // namespace memra::cuda
