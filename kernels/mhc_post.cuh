// hc_post of one element (docs/architecture.md §3.2), given the sublayer's output y there: one body
// for its three users, so they cannot drift apart: hc_post and hc_post_moe (mhc.cu), and the exact
// linear's epilogue (linear_exact.cu, LinearArgs::hc), which applies it to each output as it is made
// instead of storing y for a separate launch.
#pragma once
#include <cstdint>

#include "ops.h"

namespace memra::cuda {

// X[t, k, i] = post[t, k]·yv + Σ_j comb[t, j, k]·X[t, j, i] (j ascending, fma from +0), k < n; X is
// [rows, n, D]. Reads and writes column i of row t only.
__device__ __forceinline__ void hc_post_element(float* X, float yv, const float* post, const float* comb, int64_t t,
                                                int i, int n, int D) {
  float* Xt = X + t * n * D;
  const float* C = comb + t * n * n;
  float xs[kMaxHc];
#pragma unroll
  for (int j = 0; j < kMaxHc; ++j) xs[j] = j < n ? Xt[static_cast<int64_t>(j) * D + i] : 0.0f;
  for (int k = 0; k < n; ++k) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxHc; ++j)
      if (j < n) s = __fmaf_rn(C[j * n + k], xs[j], s);
    Xt[static_cast<int64_t>(k) * D + i] = post[t * n + k] * yv + s;
  }
}

}  // namespace memra::cuda
