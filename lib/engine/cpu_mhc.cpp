// mHC on the CPU: the hyper-connection pre (Sinkhorn-normalised mixing) and post (transposed combine).
#include <algorithm>
#include <cmath>

#include "engine/cpu_layer.h"
#include "engine/cpu_ops.h"
#include "engine/faults.h"

namespace memra::cpu {

void hc_pre(const Arithmetic& ar, const ModelConfig& cfg, const std::vector<float>& X, int64_t T, const HcWeights& w,
            std::vector<float>& x, std::vector<float>& post, std::vector<float>& comb) {
  const int64_t n = cfg.hc_mult, D = cfg.hidden_size, nD = n * D, mix_n = (2 + n) * n;
  const float eps = static_cast<float>(cfg.hc_eps);
  x.assign(T * D, 0.0f);
  post.assign(T * n, 0.0f);
  comb.assign(T * n * n, 0.0f);
  // mix [T, (2+n)n] = rms(X_t) · fnᵀ for every row at once (one product for the realization).
  std::vector<float> flat(X.begin(), X.begin() + T * nD), mixes(T * mix_n), pre(n);
  for (int64_t t = 0; t < T; ++t) cpu::rms_norm(flat.data() + t * nD, nD, nullptr, cfg.rms_norm_eps);
  ar.linear(flat.data(), T, nD, w.fn, mix_n, mixes.data());
  for (int64_t t = 0; t < T; ++t) {
    const float* Xt = X.data() + t * nD;
    const float* mix = mixes.data() + t * mix_n;
    for (int64_t j = 0; j < n; ++j) {
      pre[j] = cpu::sigmoid(mix[j] * w.scale[0] + w.base[j]) + eps;
      post[t * n + j] = 2.0f * cpu::sigmoid(mix[n + j] * w.scale[1] + w.base[n + j]);
    }
    float* C = comb.data() + t * n * n;  // [j][k]
    for (int64_t j = 0; j < n; ++j) {
      float* row = C + j * n;
      float mx = kNegInf;
      for (int64_t k = 0; k < n; ++k) {
        row[k] = mix[2 * n + j * n + k] * w.scale[2] + w.base[2 * n + j * n + k];
        mx = std::max(mx, row[k]);
      }
      double s = 0.0;
      for (int64_t k = 0; k < n; ++k) {
        row[k] = std::exp(row[k] - mx);
        s += row[k];
      }
      for (int64_t k = 0; k < n; ++k) row[k] = row[k] / static_cast<float>(s) + eps;
    }
    auto normalize_columns = [&] {
      for (int64_t k = 0; k < n; ++k) {
        double s = 0.0;
        for (int64_t j = 0; j < n; ++j) s += C[j * n + k];
        const float div = static_cast<float>(s) + eps;
        for (int64_t j = 0; j < n; ++j) C[j * n + k] /= div;
      }
    };
    auto normalize_rows = [&] {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int64_t k = 0; k < n; ++k) s += C[j * n + k];
        const float div = static_cast<float>(s) + eps;
        for (int64_t k = 0; k < n; ++k) C[j * n + k] /= div;
      }
    };
    normalize_columns();
    const int64_t iters = cfg.hc_sinkhorn_iters - (MEMRA_FAULT("sinkhorn_short") ? 1 : 0);
    for (int64_t it = 0; it + 1 < iters; ++it) {
      normalize_rows();
      normalize_columns();
    }
    float* xt = x.data() + t * D;
    for (int64_t i = 0; i < D; ++i) {
      double s = 0.0;
      for (int64_t j = 0; j < n; ++j) s += static_cast<double>(pre[j]) * Xt[j * D + i];
      xt[i] = static_cast<float>(s);
    }
  }
}

void hc_post(const ModelConfig& cfg, std::vector<float>& X, int64_t T, const std::vector<float>& y,
             const std::vector<float>& post, const std::vector<float>& comb) {
  const int64_t n = cfg.hc_mult, D = cfg.hidden_size;
  std::vector<float> out(n * D);
  const bool transposed = MEMRA_FAULT("mhc_transposed");
  for (int64_t t = 0; t < T; ++t) {
    float* Xt = X.data() + t * n * D;
    const float* C = comb.data() + t * n * n;
    const float* yt = y.data() + t * D;
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t i = 0; i < D; ++i) {
        double s = 0.0;
        for (int64_t j = 0; j < n; ++j) s += static_cast<double>(C[transposed ? k * n + j : j * n + k]) * Xt[j * D + i];
        out[k * D + i] = post[t * n + k] * yt[i] + static_cast<float>(s);
      }
    }
    std::copy(out.begin(), out.end(), Xt);
  }
}

}  // namespace memra::cpu
