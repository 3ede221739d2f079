// Band rule: drift coefficients and the pair band (see band.h and docs/bands.md).
#include "gate/band.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "engine/realization.h"

namespace memra {

int64_t reduction_depth(const ModelConfig& c, int64_t context) {
  int64_t keys = c.sliding_window;  // keys one query's softmax·V sums over
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const int64_t m = c.compress_ratio(l);
    if (c.layer_types[l] == LayerKind::kCSA) keys = std::max(keys, c.sliding_window + std::min(c.index_topk, context / m));
    if (c.layer_types[l] == LayerKind::kHCA) keys = std::max(keys, c.sliding_window + context / m);
  }
  return std::max({c.hc_mult * c.hidden_size, c.hidden_size, c.q_lora_rank,
                   c.num_attention_heads * c.head_dim / std::max<int64_t>(c.o_groups, 1), c.o_groups * c.o_lora_rank,
                   c.moe_intermediate_size, keys, int64_t{1}});
}

Realization realization_manual(const std::string& name, double u, int64_t depth) {
  if (!(u > 0) || depth < 1) throw Error("a realization needs unit roundoff > 0 and depth >= 1");
  return {name, u, depth};
}

double unit_roundoff(const std::string& name) {
  if (name == "f32") return std::ldexp(1.0, -24);
  if (name == "f16") return std::ldexp(1.0, -11);
  if (name == "bf16") return std::ldexp(1.0, -8);
  try {
    return realization(name).unit_roundoff;
  } catch (const Error&) {
    throw Error("unknown precision '" + name + "'", "use a realization (" + realization_names() + ") or f32, bf16, f16");
  }
}

Realization realization_for(const std::string& name, const ModelConfig& config, int64_t context) {
  return {name, unit_roundoff(name), reduction_depth(config, context)};
}

double drift_coefficient(const Realization& r) { return std::sqrt(static_cast<double>(r.depth)) * r.unit_roundoff; }

double pair_band(double top1, const Realization& a, const Realization& b) {
  return kBandSafety * std::sqrt(2.0) * (drift_coefficient(a) + drift_coefficient(b)) * std::fabs(top1);
}

}  // namespace memra
