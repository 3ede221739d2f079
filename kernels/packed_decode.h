// Decoding of packed weights (FP8 e4m3 and FP4 e2m1 codes, e8m0 block scales) into f32, shared by
// the device kernels (dot_exact.cuh, dequant.cu) and the host-side test that compares every code
// with lib/format/quant.h (test/cuda/host_test.cpp), so the function the GPU runs is the one the
// test checks. Semantics: docs/quantization.md.
//
// value = decode(code) · scale, one f32 multiplication: exact, because a code has at most 4
// significant bits and the scale is a power of two (the result is representable in f32 unless it
// overflows, which gives ±inf as on the CPU). So these values are bit-equal to the CPU's decoded
// weights, and, whenever the value is also representable in bf16 (lowest set bit ≥ 2^−133: any real
// checkpoint), to the bf16 number holding it, which is why a packed linear gives the bits of the
// bf16 linear on the dequantised matrix (kernels/README.md).
//
//   FP8 e4m3: the hardware conversion e4m3x2 → f16x2 (sm_89+; CUDA's exact software path on the
//             host), f16 → f32, both exact (e4m3's range and precision fit f16's);
//   FP4 e2m1: code S.EE.M placed into f16 bits S.00EE.M000000000 is the value · 2^−14 (normal and
//             subnormal alike), so f16 → f32, · 2^14, is the value exactly;
//   e8m0:     byte e → 2^(e−127) built from bits (e = 0: the f32 subnormal 2^−127; 0xFF: NaN).
#pragma once
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <cstring>

namespace memra::cuda {

#if defined(__CUDACC__)
#define MEMRA_HD __host__ __device__ __forceinline__
#else
#define MEMRA_HD inline
#endif

MEMRA_HD float packed_bits_f32(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
#endif
}

// e8m0 scale byte → 2^(e−127); 0xFF → NaN.
MEMRA_HD float e8m0_f32(uint32_t e) {
  return e == 0 ? packed_bits_f32(0x00400000u) : e == 0xFFu ? packed_bits_f32(0x7fc00000u) : packed_bits_f32(e << 23);
}

// Two e4m3 codes (low byte: the first) → two f32, times `scale`.
MEMRA_HD void fp8x2_f32(uint32_t two, float scale, float& a, float& b) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two & 0xFFFFu), __NV_E4M3);
  const float2 f = __half22float2(__half2(h));
  a = f.x * scale;
  b = f.y * scale;
}

// Two e2m1 codes (bits 0–3: the first, bits 4–7: the second) → two f32, times `scale`.
MEMRA_HD void fp4x2_f32(uint32_t two, float scale, float& a, float& b) {
  const uint32_t bits = ((two & 0x7u) << 9) | ((two & 0x8u) << 12) | ((two & 0x70u) << 21) | ((two & 0x80u) << 24);
  __half2_raw h;
  h.x = static_cast<unsigned short>(bits & 0xFFFFu);
  h.y = static_cast<unsigned short>(bits >> 16);
  const float2 f = __half22float2(__half2(h));
  a = (f.x * 16384.0f) * scale;  // · 2^14 is exact; then the scale
  b = (f.y * 16384.0f) * scale;
}

// 8 consecutive values of a row: FP8 from 8 bytes (lo: elements 0–3), FP4 from 4 bytes (element j
// in bits 4j … 4j+3: byte j/2, low nibble first). All 8 share one scale (the caller's block).
MEMRA_HD void fp8x8_f32(uint32_t lo, uint32_t hi, float scale, float (&out)[8]) {
  fp8x2_f32(lo, scale, out[0], out[1]);
  fp8x2_f32(lo >> 16, scale, out[2], out[3]);
  fp8x2_f32(hi, scale, out[4], out[5]);
  fp8x2_f32(hi >> 16, scale, out[6], out[7]);
}
MEMRA_HD void fp4x8_f32(uint32_t v, float scale, float (&out)[8]) {
  fp4x2_f32(v, scale, out[0], out[1]);
  fp4x2_f32(v >> 8, scale, out[2], out[3]);
  fp4x2_f32(v >> 16, scale, out[4], out[5]);
  fp4x2_f32(v >> 24, scale, out[6], out[7]);
}

// One value (the scalar paths): element k of an FP8 row / of a packed FP4 row.
MEMRA_HD float fp8_at(const uint8_t* row, int64_t k, float scale) {
  float a, b;
  fp8x2_f32(row[k], scale, a, b);
  return a;
}
MEMRA_HD float fp4_at(const uint8_t* row, int64_t k, float scale) {
  float a, b;
  fp4x2_f32((row[k >> 1] >> ((k & 1) * 4)) & 0xFu, scale, a, b);
  return a;
}

}  // namespace memra::cuda
