// Blocked f32 GEMM for cpu-fast (cpu_gemm.h): an AVX2+FMA micro-kernel where the processor has it,
// the same blocking in portable code otherwise (both realizations of `cpu-fast` are f32 with 8
// partial sums per dot product, so they agree closely but need not agree by bits).
#include "engine/cpu_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "core/thread_pool.h"

namespace memra::cpu {

namespace {

// Portable: 8 partial sums over K (k mod 8), combined pairwise.
float dot8(const float* a, const float* b, int64_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; ++j) s[j] += a[k + j] * b[k + j];
  for (int j = 0; k < n; ++k, ++j) s[j] += a[k] * b[k];
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

__attribute__((target("avx2,fma"))) inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), acc);
  float s = hsum(acc);
  for (; k < n; ++k) s += a[k] * b[k];
  return s;
}

// 4 rows × 3 outputs: 12 accumulators + 3 weight vectors + 1 input vector = 16 ymm registers.
// wb: the weight rows o0 .. o1 (row o at wb + (o - o0)·in).
__attribute__((target("avx2,fma"))) void tile_avx2(const float* x, int64_t in, const float* wb, int64_t out,
                                                   float* y, int64_t r0, int64_t r1, int64_t o0, int64_t o1) {
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    int64_t o = o0;
    for (; o + 3 <= o1; o += 3) {
      __m256 acc[4][3];
      for (auto& row : acc)
        for (auto& a : row) a = _mm256_setzero_ps();
      const float* w0 = wb + (o - o0) * in;
      const float* w1 = w0 + in;
      const float* w2 = w1 + in;
      int64_t k = 0;
      for (; k + 8 <= in; k += 8) {
        const __m256 b0 = _mm256_loadu_ps(w0 + k), b1 = _mm256_loadu_ps(w1 + k), b2 = _mm256_loadu_ps(w2 + k);
        for (int i = 0; i < 4; ++i) {
          const __m256 a = _mm256_loadu_ps(x + (r + i) * in + k);
          acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
          acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
          acc[i][2] = _mm256_fmadd_ps(a, b2, acc[i][2]);
        }
      }
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j) {
          float s = hsum(acc[i][j]);
          const float* xr = x + (r + i) * in;
          const float* wr = wb + (o + j - o0) * in;
          for (int64_t kk = k; kk < in; ++kk) s += xr[kk] * wr[kk];
          y[(r + i) * out + o + j] = s;
        }
    }
    for (; o < o1; ++o)
      for (int i = 0; i < 4; ++i) y[(r + i) * out + o] = dot_avx2(x + (r + i) * in, wb + (o - o0) * in, in);
  }
  for (; r < r1; ++r)
    for (int64_t o = o0; o < o1; ++o) y[r * out + o] = dot_avx2(x + r * in, wb + (o - o0) * in, in);
}

void tile_portable(const float* x, int64_t in, const float* wb, int64_t out, float* y, int64_t r0, int64_t r1,
                   int64_t o0, int64_t o1) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t o = o0; o < o1; ++o) y[r * out + o] = dot8(x + r * in, wb + (o - o0) * in, in);
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");

}  // namespace

float dot_fast(const float* a, const float* b, int64_t n) { return kHaveAvx2 ? dot_avx2(a, b, n) : dot8(a, b, n); }

void gemm(const float* x, int64_t rows, int64_t in, const Matrix& w, int64_t out, float* y) {
  // Blocks of 48 outputs (16 micro-tiles) × 64 rows keep a weight block in L1/L2 while rows stream.
  constexpr int64_t kOut = 48, kRows = 64;
  const int64_t out_blocks = (out + kOut - 1) / kOut;
  const int64_t work_per_block = std::max<int64_t>(1, rows * in * kOut);
  parallel_for(
      out_blocks,
      [&](int64_t b0, int64_t b1) {
        std::vector<float> scratch(w.f32 ? 0 : kOut * in);  // [kOut, in]: a packed block's rows, decoded
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t o0 = b * kOut, o1 = std::min(out, o0 + kOut);
          const float* wb = w.f32 ? w.f32 + o0 * in : nullptr;
          if (!wb) {
            for (int64_t o = o0; o < o1; ++o) w.row(o, in, scratch.data() + (o - o0) * in);
            wb = scratch.data();
          }
          for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
            const int64_t r1 = std::min(rows, r0 + kRows);
            if (kHaveAvx2) tile_avx2(x, in, wb, out, y, r0, r1, o0, o1);
            else tile_portable(x, in, wb, out, y, r0, r1, o0, o1);
          }
        }
      },
      std::max<int64_t>(1, (1 << 17) / work_per_block));
}

}  // namespace memra::cpu
