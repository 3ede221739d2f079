// CPU reference kernels. linear() splits work over output features across threads; each element
// is still one sequential double-accumulated dot product, so results are independent of threading.
#include "engine/cpu_ops.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace memra::cpu {

void linear(const float* x, int64_t rows, int64_t in, const float* w, int64_t out, float* y) {
  auto work = [&](int64_t o_begin, int64_t o_end) {
    for (int64_t t = 0; t < rows; ++t) {
      const float* xr = x + t * in;
      float* yr = y + t * out;
      for (int64_t o = o_begin; o < o_end; ++o) yr[o] = static_cast<float>(dot(xr, w + o * in, in));
    }
  };
  const int64_t flops = rows * in * out;
  static const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int64_t threads = std::min<int64_t>({static_cast<int64_t>(hw), out, std::max<int64_t>(1, flops / (1 << 18))});
  if (threads <= 1) {
    work(0, out);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t step = (out + threads - 1) / threads;
  for (int64_t b = 0; b < out; b += step) pool.emplace_back(work, b, std::min(out, b + step));
  for (auto& th : pool) th.join();
}

}  // namespace memra::cpu
