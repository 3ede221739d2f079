// The band rule (docs/bands.md): how far two numeric realizations of the same forward may drift
// apart, derived from each one's unit roundoff and accumulation depth (the seed's drift coefficient).
//
//   drift coefficient   c = √n · u          n: accumulation depth (longest chain of rounded adds and
//                                           products feeding one logit), u: unit roundoff of the
//                                           precision the realization rounds to (f32: 2^-24, bf16: 2^-8)
//   pair band at a logit of magnitude |x|:   band = 3·√2·(c_a + c_b)·|x|
//
// √n·u is the standard deviation of a sum of n independently rounded terms (Higham, probabilistic
// error analysis); (c_a + c_b) bounds the two realizations' errors together, √2 turns the bound on
// each logit into one on the difference of two logits (a top-1/top-2 margin), and 3 is 3σ.
#pragma once
#include <cstdint>
#include <string>

#include "model/config.h"

namespace memra {

struct Realization {
  std::string name;       // e.g. "cpu-f32-exact"
  double unit_roundoff;   // u
  int64_t depth;          // n
};

// The longest accumulation chain of this geometry: per layer the largest reduction (n·D for mHC,
// D, q_lora_rank, H·d/G, G·R, I for experts, window + visible entries for attention, hc mixing),
// summed over layers, plus D for the LM head.
int64_t accumulation_depth(const ModelConfig& config, int64_t context);

// Unit roundoff of a precision class: f32/cpu-f32-exact 2^-24, f16 2^-11, bf16 2^-8 (Error otherwise).
double unit_roundoff(const std::string& precision_class);

// The realization a precision class stands for ("cpu-f32-exact", "bf16", "f32"…); throws Error
// for an unknown class.
Realization realization_for(const std::string& precision_class, const ModelConfig& config, int64_t context);
Realization realization_manual(const std::string& name, double unit_roundoff, int64_t depth);

double drift_coefficient(const Realization& r);
double pair_band(double top1_magnitude, const Realization& a, const Realization& b);

}  // namespace memra
