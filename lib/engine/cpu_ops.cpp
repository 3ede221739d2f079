// CPU reference kernels. linear() splits work over output features across the worker pool; each
// element is still one sequential double-accumulated dot product, so results are independent of
// threading (and of whether the weight row was read in place or decoded from a packed tensor).
#include "engine/cpu_ops.h"

#include <algorithm>
#include <vector>

#include "core/thread_pool.h"

namespace memra::cpu {

void linear(const float* x, int64_t rows, int64_t in, const Matrix& w, int64_t out, float* y) {
  const int64_t per_output = rows * in;  // multiply-adds per output feature
  parallel_for(
      out,
      [&](int64_t o_begin, int64_t o_end) {
        if (w.f32) {
          for (int64_t t = 0; t < rows; ++t) {
            const float* xr = x + t * in;
            float* yr = y + t * out;
            for (int64_t o = o_begin; o < o_end; ++o) yr[o] = static_cast<float>(dot(xr, w.f32 + o * in, in));
          }
          return;
        }
        std::vector<float> scratch(in);  // [in]: one decoded weight row, used by every input row
        for (int64_t o = o_begin; o < o_end; ++o) {
          const float* wr = w.row(o, in, scratch.data());
          for (int64_t t = 0; t < rows; ++t) y[t * out + o] = static_cast<float>(dot(x + t * in, wr, in));
        }
      },
      std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, per_output)));
}

}  // namespace memra::cpu
