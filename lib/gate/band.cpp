// Band rule: drift coefficients and the pair band (see band.h and docs/bands.md).
#include "gate/band.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace memra {

int64_t accumulation_depth(const ModelConfig& c, int64_t context) {
  const int64_t attn_keys = c.sliding_window + (c.csa_rate > 0 ? context / c.csa_rate : 0) + 1;
  const int64_t per_layer = std::max({c.hc_mult * c.hidden_size, c.hidden_size, c.q_lora_rank,
                                      c.num_attention_heads * c.head_dim / std::max<int64_t>(c.o_groups, 1),
                                      c.o_groups * c.o_lora_rank, c.moe_intermediate_size, attn_keys, c.hc_mult});
  return c.num_hidden_layers * per_layer + c.hidden_size;
}

Realization realization_manual(const std::string& name, double u, int64_t depth) {
  if (!(u > 0) || depth < 1) throw Error("a realization needs unit roundoff > 0 and depth >= 1");
  return {name, u, depth};
}

double unit_roundoff(const std::string& cls) {
  if (cls == "cpu-f32-exact" || cls == "f32") return std::ldexp(1.0, -24);
  if (cls == "f16") return std::ldexp(1.0, -11);
  if (cls == "bf16") return std::ldexp(1.0, -8);
  throw Error("unknown precision class '" + cls + "'", "use cpu-f32-exact, f32, bf16 or f16");
}

Realization realization_for(const std::string& cls, const ModelConfig& config, int64_t context) {
  return {cls, unit_roundoff(cls), accumulation_depth(config, context)};
}

double drift_coefficient(const Realization& r) { return std::sqrt(static_cast<double>(r.depth)) * r.unit_roundoff; }

double pair_band(double top1, const Realization& a, const Realization& b) {
  return 3.0 * std::sqrt(2.0) * (drift_coefficient(a) + drift_coefficient(b)) * std::fabs(top1);
}

}  // namespace memra
