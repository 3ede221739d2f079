// The band rule (docs/bands.md): how far two numeric realizations of the same forward may drift
// apart, from each one's unit roundoff and the depth of ONE reduction chain (the seed's drift
// coefficient), with a safety factor calibrated against the drift measured between real
// realizations (bench/band_calibration.sh, results in docs/bands.md).
//
//   drift coefficient   c = √n · u          n: depth of the longest single reduction that feeds a
//                                           logit's inputs (one dot product: n·D for the mHC mix, I
//                                           for an expert, W + visible entries for attention, …),
//                                           u: unit roundoff of what the realization rounds to
//                                           (f32: 2^-24, bf16 storage: 2^-8)
//   pair band at a logit of magnitude |x|:   band = S·√2·(c_a + c_b)·|x|,  S = kBandSafety
//
// √n·u is the standard deviation of a sum of n independently rounded terms (Higham, probabilistic
// error analysis); (c_a + c_b) bounds the two realizations' errors together and √2 turns the bound
// on each logit into one on the difference of two logits (a top-1/top-2 margin).
#pragma once
#include <cstdint>
#include <string>

#include "model/config.h"

namespace memra {

// S, calibrated (bench/band_calibration.sh, docs/bands.md): with S = 2 the honest f32 pairs on the
// fixtures sit at 0.17–0.40 of the band and noise at 10× their drift at 1.7–4.0 times it.
inline constexpr double kBandSafety = 2.0;

struct Realization {
  std::string name;       // a realization (cpu, cpu-fast, …) or a plain precision (f32, bf16, f16)
  double unit_roundoff;   // u
  int64_t depth;          // n
};

// The depth of the longest single reduction chain of this geometry at `context` tokens: the
// largest of n·D (mHC mix), D (projections, head), q_lora_rank, H·d/G and G·R (output
// projection), I (experts) and the attention keys one query sums over (window + the most visible
// compressed entries: CSA top-k, HCA context/m).
int64_t reduction_depth(const ModelConfig& config, int64_t context);

// Unit roundoff of a realization name (the realization table) or a plain precision: f32 2^-24,
// f16 2^-11, bf16 2^-8. Throws Error otherwise.
double unit_roundoff(const std::string& name);

Realization realization_for(const std::string& name, const ModelConfig& config, int64_t context);
Realization realization_manual(const std::string& name, double unit_roundoff, int64_t depth);

double drift_coefficient(const Realization& r);
double pair_band(double top1_magnitude, const Realization& a, const Realization& b);

}  // namespace memra
