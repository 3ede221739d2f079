// Taps from a trunk trace (see taps.h).
#include "drafter/taps.h"

#include "core/error.h"

namespace memra {

std::vector<std::string> tap_arrays(const DrafterConfig& c) {
  std::vector<std::string> out;
  for (int64_t j : c.tap_layer_inputs)
    if (j > 0) out.push_back("hidden." + std::to_string(j - 1));
  return out;
}

std::vector<float> taps_from_trace(const DrafterConfig& c, const ForwardTrace& trace, int64_t T, int64_t n,
                                   const float* embeddings) {
  const int64_t D = c.hidden_size, K = c.n_taps();
  std::vector<float> taps(T * K * D);
  for (int64_t i = 0; i < K; ++i) {
    const int64_t j = c.tap_layer_inputs[i];
    if (j == 0) {
      if (!embeddings) throw Error("taps: tap " + std::to_string(i) + " reads layer 0's input and needs the embeddings");
      for (int64_t t = 0; t < T; ++t) std::copy(embeddings + t * D, embeddings + (t + 1) * D, taps.begin() + (t * K + i) * D);
      continue;
    }
    const std::string name = "hidden." + std::to_string(j - 1);
    auto it = trace.arrays.find(name);
    if (it == trace.arrays.end() || static_cast<int64_t>(it->second.size()) != T * n * D)
      throw Error("taps: the trunk trace has no " + name + " of " + std::to_string(T) + " rows");
    const float* X = it->second.data();
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d) {
        double s = 0.0;
        for (int64_t k = 0; k < n; ++k) s += X[(t * n + k) * D + d];
        taps[(t * K + i) * D + d] = static_cast<float>(s / static_cast<double>(n));
      }
  }
  return taps;
}

}  // namespace memra
