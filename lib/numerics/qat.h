// The quantisation simulations DeepSeek's official inference code applies to activations in the
// attention path (QAT: the model was trained seeing them), as an option memra can switch on; the
// transformers reference (and memra by default) does not apply them. Architecture note §3.4–§3.6, §6:
//   window kv and compressed kv, the non-RoPE dims: FP8 e4m3 quant-dequant in blocks of 64
//     (official act_quant(kv[..., :-rd], 64, "ue8m0", inplace=True));
//   indexer queries and keys: Hadamard (orthonormal, size di), then FP4 e2m1 quant-dequant in
//     blocks of 32 (rotate_activation, then fp4_act_quant(x, 32, inplace=True)).
// Per block: amax = max|x| (at least 1e-4 for FP8, 6·2^-126 for FP4); scale s = 2^ceil(log2(amax/qmax))
// (ue8m0, qmax 448 / 6); x ← round_to_nearest_even(clamp(x/s, ±qmax)) · s. With a power-of-two s every
// step except the rounding is exact, so the result does not depend on how x/s is computed.
#pragma once
#include <cstdint>

namespace memra {

// f32 → nearest e4m3fn / e2m1 value (ties to even), returned as f32. |x| above the largest finite
// value: e4m3 gives NaN (as torch's cast does), e2m1 gives ±6 (the kernels clamp first anyway).
float round_to_e4m3(float x);
float round_to_e2m1(float x);

// In place over x[0 .. n): blocks of `block` consecutive values (the last one may be shorter).
void fp8_quant_dequant(float* x, int64_t n, int64_t block = 64);
void fp4_quant_dequant(float* x, int64_t n, int64_t block = 32);

// x ← H x / sqrt(n), H the Sylvester-ordered Walsh–Hadamard matrix (n a power of two; fast
// butterfly, stages h = 1, 2, 4, …: (a, b) → (a + b, a − b)).
void hadamard_transform(float* x, int64_t n);

}  // namespace memra
