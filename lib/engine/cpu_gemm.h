// The fast CPU realization's matrix product: y = x · wᵀ with f32 accumulation in a blocked order
// (4 rows × 3 outputs per micro-tile, 8-wide partial sums over K, then a fixed horizontal sum),
// threads over output blocks. Not the exact path: its summation order differs from cpu::linear's
// sequential double sum, which is what makes cpu-fast a second realization.
#pragma once
#include <cstdint>

#include "engine/cpu_ops.h"

namespace memra::cpu {

// x [rows, in], w [out, in], y [rows, out] (row-major, y need not be initialised). A packed w is
// decoded one block of outputs at a time into per-thread scratch (same bits as an f32 w).
void gemm(const float* x, int64_t rows, int64_t in, const Matrix& w, int64_t out, float* y);

// Dot product of two f32 vectors of length n, f32 accumulation in the same blocked order.
float dot_fast(const float* a, const float* b, int64_t n);

}  // namespace memra::cpu
