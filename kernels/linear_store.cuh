// Where an exact linear's finished (row, o) value goes, for every exact kernel (linear_exact.cu,
// linear_pair.cu): y of group g, or with LinearArgs::hc the attention's hc_post applied to the value
// as it is made (the decode path's wo_b), one dependent launch fewer per layer.
#pragma once
#include "mhc_post.cuh"
#include "ops.h"

namespace memra::cuda {

__device__ __forceinline__ void store_output(const LinearArgs& a, int g, int64_t row, int o, float v) {
  if (a.hc.X) hc_post_element(a.hc.X, v, a.hc.post, a.hc.comb, row, o, a.hc.n, a.out);
  else a.y[g * a.y_gstride + row * a.y_stride + o] = v;
}

}  // namespace memra::cuda
