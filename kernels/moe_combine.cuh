// The routed half of the MoE combine for one element, in the one order both of its users take
// (moe.cu combine_kernel and mhc.cu hc_post_moe_kernel, which the ops test holds equal by bits):
// from +0 over the slots ascending, each step `routed + eo·ew`, a product and a sum rounded apart
// (--fmad=false), as the CPU's combine. The slots' loads go kSlotBatch at a time ahead of the chain
// (one round trip for V4-Flash's k = 6); the chain does not depend on the batching.
#pragma once
#include <cstdint>

namespace memra::cuda {

// Σ_{s < k} eo[row(t·k + s)·D + i] · ew[t·k + s], s ascending; row(p) = eo_rows[p], or p without them
// (eo_rows: the batched experts' outputs read where their GEMMs left them, run 162).
__device__ __forceinline__ float moe_routed(const float* eo, const float* ew, int k, int D, int64_t t, int i,
                                            const int32_t* eo_rows = nullptr) {
  constexpr int kSlotBatch = 8;
  float routed = 0.0f;
  for (int s0 = 0; s0 < k; s0 += kSlotBatch) {
    float e[kSlotBatch], w[kSlotBatch];
#pragma unroll
    for (int u = 0; u < kSlotBatch; ++u) {
      const int s = s0 + u;
      e[u] = s < k ? eo[(eo_rows ? static_cast<int64_t>(eo_rows[t * k + s]) : t * k + s) * D + i] : 0.0f;
      w[u] = s < k ? ew[t * k + s] : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kSlotBatch; ++u)
      if (s0 + u < k) routed = routed + e[u] * w[u];
  }
  return routed;
}

}  // namespace memra::cuda
