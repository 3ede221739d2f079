// cuBLAS linears for cuda-fast (linear_fast.h). Row-major y[rows, out] = x[rows, in]·W[out, in]ᵀ is
// the column-major product yᵀ = W·xᵀ: A = W (op T, lda = in), B = x (op N, ldb = row stride),
// C = y (ldc = row stride); groups become a strided batch.
#include "linear_fast.h"

namespace memra::cuda {

namespace {

// Columns the conversion covers: every group's slice of a row.
int64_t span_of(const LinearArgs& a) { return (a.groups - 1) * a.x_gstride + a.in; }

}  // namespace

size_t linear_fast_scratch(const LinearArgs& a) {
  if (a.wtype == WType::kF32 || wtype_packed(a.wtype) || a.x16) return 0;
  return static_cast<size_t>(a.rows) * static_cast<size_t>(span_of(a)) * 2;
}

const char* linear_fast(cublasHandle_t handle, const LinearArgs& a, void* scratch, size_t scratch_bytes,
                        cudaStream_t stream) {
  if (a.rows == 0 || a.out == 0) return nullptr;
  if (!(a.x || a.x16) || !a.w || !a.y || a.in <= 0 || a.groups < 1 || a.hc.X) return "linear_fast: invalid arguments";
  if (a.x16 && (a.wtype == WType::kF32 || a.x16_type != a.wtype || a.x_stride < span_of(a)))
    return "linear_fast: 16-bit activations need weights of their type and a row stride that holds every group";
  if (wtype_packed(a.wtype)) return "linear_fast: packed weights must be dequantised first (dequant_bf16)";
  cublasStatus_t st = cublasSetStream(handle, stream);
  if (st != CUBLAS_STATUS_SUCCESS) return cublasGetStatusString(st);
  const float alpha = 1.0f, beta = 0.0f;
  if (a.wtype == WType::kF32) {
    st = cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, a.out, a.rows, a.in, &alpha, a.w, CUDA_R_32F,
                                    a.in, a.w_gstride, a.x, CUDA_R_32F, a.x_stride, a.x_gstride, &beta, a.y, CUDA_R_32F,
                                    a.y_stride, a.y_gstride, a.groups, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    return st == CUBLAS_STATUS_SUCCESS ? nullptr : cublasGetStatusString(st);
  }
  // The 16-bit activations: the caller's (x16, its row stride) or x converted into scratch (rows of span).
  const void* xb = a.x16;
  int64_t ldx = a.x_stride;
  if (!xb) {
    ldx = span_of(a);
    if (!scratch || scratch_bytes < linear_fast_scratch(a)) return "linear_fast: conversion scratch too small";
    cudaError_t err = convert_rows(a.x, a.x_stride, a.rows, static_cast<int>(ldx), scratch, a.wtype, stream);
    if (err != cudaSuccess) return cudaGetErrorString(err);
    xb = scratch;
  }
  const cudaDataType_t t = a.wtype == WType::kBF16 ? CUDA_R_16BF : CUDA_R_16F;
  st = cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, a.out, a.rows, a.in, &alpha, a.w, t, a.in,
                                  a.w_gstride, xb, t, ldx, a.x_gstride, &beta, a.y, CUDA_R_32F, a.y_stride,
                                  a.y_gstride, a.groups, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return st == CUBLAS_STATUS_SUCCESS ? nullptr : cublasGetStatusString(st);
}

}  // namespace memra::cuda
