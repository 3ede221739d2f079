// memra-emu's cuBLAS: the GEMMs memra calls (cublasGemmEx, its strided and pointer-array batches),
// as plain loops on host memory (kernels/emu/README.md). Column-major as cuBLAS: C = α·op(A)·op(B)
// + β·C, C m × n. Each element is one double sum of its k products (TF32-rounded inputs for
// CUBLAS_COMPUTE_32F_FAST_TF32), then α, β and the output type's rounding in f32: deterministic,
// but not cuBLAS's order, so a check may hold memra-emu to a band, never to cuBLAS's bits.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <vector>

#include "emu/runtime.h"
#include "emu/simt.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
};

namespace {

float load(const void* p, cudaDataType t, long long i) {
  switch (t) {
    case CUDA_R_32F: return static_cast<const float*>(p)[i];
    case CUDA_R_16BF: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case CUDA_R_16F: return __half2float(static_cast<const __half*>(p)[i]);
    default: return 0.0f;
  }
}
void store(void* p, cudaDataType t, long long i, float v) {
  switch (t) {
    case CUDA_R_32F: static_cast<float*>(p)[i] = v; break;
    case CUDA_R_16BF: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    case CUDA_R_16F: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    default: break;
  }
}
bool supported(cudaDataType t) { return t == CUDA_R_32F || t == CUDA_R_16BF || t == CUDA_R_16F; }

float tf32_rn(float x) { return __uint_as_float(memra::emu::tf32_rn(x)); }  // cvt.rn's rounding (simt.h)

struct Gemm {
  cublasOperation_t ta, tb;
  int m, n, k;
  float alpha, beta;
  cudaDataType at, bt, ct;
  int lda, ldb, ldc;
  bool tf32;
};

// One product: op(A) as m rows of k, op(B)ᵀ as n rows of k, then the dots.
void gemm(const Gemm& g, const void* A, const void* B, void* C) {
  std::vector<float> a(static_cast<size_t>(g.m) * g.k), b(static_cast<size_t>(g.n) * g.k);
  for (int i = 0; i < g.m; ++i)
    for (int l = 0; l < g.k; ++l) {
      const float v = load(A, g.at, g.ta == CUBLAS_OP_N ? i + 1ll * l * g.lda : l + 1ll * i * g.lda);
      a[static_cast<size_t>(i) * g.k + l] = g.tf32 ? tf32_rn(v) : v;
    }
  for (int j = 0; j < g.n; ++j)
    for (int l = 0; l < g.k; ++l) {
      const float v = load(B, g.bt, g.tb == CUBLAS_OP_N ? l + 1ll * j * g.ldb : j + 1ll * l * g.ldb);
      b[static_cast<size_t>(j) * g.k + l] = g.tf32 ? tf32_rn(v) : v;
    }
  for (int j = 0; j < g.n; ++j)
    for (int i = 0; i < g.m; ++i) {
      const float* x = &a[static_cast<size_t>(i) * g.k];
      const float* y = &b[static_cast<size_t>(j) * g.k];
      double s = 0;
      for (int l = 0; l < g.k; ++l) s += static_cast<double>(x[l]) * y[l];
      const long long at = i + 1ll * j * g.ldc;
      float v = g.alpha * static_cast<float>(s);
      if (g.beta != 0.0f) v += g.beta * load(C, g.ct, at);  // β = 0: C is not read (it may be garbage)
      store(C, g.ct, at, v);
    }
}

cublasStatus_t check(const Gemm& g, cublasComputeType_t compute) {
  if (g.m < 0 || g.n < 0 || g.k < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (!supported(g.at) || !supported(g.bt) || !supported(g.ct)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32) return CUBLAS_STATUS_NOT_SUPPORTED;
  // cuBLAS's table for these compute types: A and B of one type; f32 in, f32 out (TF32 only so);
  // bf16 or f16 in, f32 or the same 16-bit type out.
  if (g.at != g.bt) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (g.at == CUDA_R_32F && g.ct != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (g.at != CUDA_R_32F && (compute != CUBLAS_COMPUTE_32F || (g.ct != CUDA_R_32F && g.ct != g.at)))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const int rows_a = g.ta == CUBLAS_OP_N ? g.m : g.k, rows_b = g.tb == CUBLAS_OP_N ? g.k : g.n;
  if (g.lda < std::max(1, rows_a) || g.ldb < std::max(1, rows_b) || g.ldc < std::max(1, g.m))
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

Gemm make(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha, cudaDataType at, int lda,
          cudaDataType bt, int ldb, const void* beta, cudaDataType ct, int ldc, cublasComputeType_t compute) {
  return Gemm{ta, tb, m, n, k, *static_cast<const float*>(alpha), *static_cast<const float*>(beta), at, bt, ct,
              lda, ldb, ldc, compute == CUBLAS_COMPUTE_32F_FAST_TF32};
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS (memra-emu: other)";
  }
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt,
                            int ldb, const void* beta, void* C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t) {
  const Gemm g = make(ta, tb, m, n, k, alpha, at, lda, bt, ldb, beta, ct, ldc, compute);
  if (const cublasStatus_t st = check(g, compute); st != CUBLAS_STATUS_SUCCESS) return st;
  memra::emu::enqueue(h->stream, [=] { gemm(g, A, B, C); });
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void* alpha, const void* A, cudaDataType at, int lda,
                                          long long sa, const void* B, cudaDataType bt, int ldb, long long sb,
                                          const void* beta, void* C, cudaDataType ct, int ldc, long long sc, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t) {
  const Gemm g = make(ta, tb, m, n, k, alpha, at, lda, bt, ldb, beta, ct, ldc, compute);
  if (const cublasStatus_t st = check(g, compute); st != CUBLAS_STATUS_SUCCESS) return st;
  if (batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  auto bytes = [](cudaDataType t) { return t == CUDA_R_32F ? 4ll : 2ll; };
  memra::emu::enqueue(h->stream, [=] {
    for (int i = 0; i < batch; ++i)
      gemm(g, static_cast<const char*>(A) + i * sa * bytes(at), static_cast<const char*>(B) + i * sb * bytes(bt),
           static_cast<char*>(C) + i * sc * bytes(ct));
  });
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const void* alpha, const void* const A[], cudaDataType at, int lda,
                                   const void* const B[], cudaDataType bt, int ldb, const void* beta, void* const C[],
                                   cudaDataType ct, int ldc, int batch, cublasComputeType_t compute, cublasGemmAlgo_t) {
  const Gemm g = make(ta, tb, m, n, k, alpha, at, lda, bt, ldb, beta, ct, ldc, compute);
  if (const cublasStatus_t st = check(g, compute); st != CUBLAS_STATUS_SUCCESS) return st;
  if (batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  memra::emu::enqueue(h->stream, [=] {  // the pointer arrays are read when the GEMM runs, as on the device
    for (int i = 0; i < batch; ++i) gemm(g, A[i], B[i], C[i]);
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
