// TF32 tensor-core building blocks of cuda-fast's kernels (attention_fast.cu, indexer_fast.cu):
// rounding f32 to TF32 and one mma.sync m16n8k8 with f32 accumulation. Not exact: TF32 keeps 10
// mantissa bits (round to nearest, |δ| ≤ 2⁻¹¹, whichever way ties go), and the tensor cores add in
// their own order; each caller's ops test derives its band from that.
#pragma once
#include <cstdint>

namespace memra::cuda {

// TF32 round to nearest. On sm_90+ ties to even: cvt.rn.tf32.f32 is one instruction there
// (F2FP.TF32.F32.PACK_B), where cvt.rna (ties away, the only form before sm_90) is three (a finite
// test, half a TF32 ulp added to the bits, a mask), three of every four instructions the passes'
// conversions cost (SASS read on the dev machine, session 41). The bound is the same; only exact
// ties (low 13 bits 0x1000) round the other way. The tensor cores ignore the low 13 bits; tf32f
// clears them for values kept as floats. (A hand-written integer form took four instructions and
// was slower, run 141.)
__device__ __forceinline__ uint32_t tf32(float x) {
#if defined(MEMRA_CUDA_EMU)
  return emu::tf32_rn(x);  // sm_90's cvt.rn
#else
  uint32_t r;
#if __CUDA_ARCH__ >= 900
  asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
#else
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
#endif
  return r;
#endif
}
__device__ __forceinline__ float tf32f(float x) { return __uint_as_float(tf32(x) & 0xffffe000u); }

// D += A·B, m16n8k8, TF32 in, f32 accumulate. a: (row g, col t) (g + 8, t) (g, t + 4) (g + 8, t + 4);
// b: (row t, col g) (t + 4, g); c: (g, 2t) (g, 2t + 1) (g + 8, 2t) (g + 8, 2t + 1); g = lane / 4,
// t = lane % 4 (PTX ISA, mma.m16n8k8 fragments).
__device__ __forceinline__ void mma_tf32(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
#if defined(MEMRA_CUDA_EMU)
  emu::mma_m16n8k8_tf32(c, {a0, a1, a2, a3}, {b0, b1});
#else
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

}  // namespace memra::cuda
