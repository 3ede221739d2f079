// The model's weights on the GPU: each device holds the layers it runs (and the embedding on the
// first device, the hc head, final norm and LM head on the last). Matrices keep their stored dtype
// (bf16/f16/f32; the exact kernels widen every element to f32, which is exact, so bf16 storage
// loses nothing), copied from the mapped checkpoint without widening on the host; block-quantised
// matrices (FP8 e4m3, FP4 e2m1) stay packed, codes and e8m0 scales as stored, and the kernels
// decode them as they load them (no dequantised copy; docs/quantization.md); vectors (norms,
// hc_*, ape, sinks, router bias) and RoPE tables are f32; tid2eid is int32. Experts of a layer are
// stacked: w1/w3 [E, I, D], w2 [E, D, I] (packed: codes stacked, scales stacked).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "format/quant.h"
#include "format/safetensors.h"
#include "model/config.h"
#include "ops.h"

namespace memra {
class Model;
}

namespace memra::cuda {

struct DevMatrix {
  const void* ptr = nullptr;
  WType type = WType::kF32;
  int64_t rows = 0, cols = 0;  // [out, in]
  WScale scale;                // packed types: the e8m0 block scales
  // Matrix g of a stack [count, rows, cols] (its codes and, packed, its scales).
  DevMatrix at(int64_t g) const {
    DevMatrix m = *this;
    m.ptr = static_cast<const uint8_t*>(ptr) + static_cast<size_t>(g) * wtype_matrix_bytes(type, rows, cols);
    if (scale.ptr) m.scale.ptr = scale.ptr + g * wscale_matrix_bytes(scale, rows);
    return m;
  }
};

struct DevCompressor {
  DevMatrix wkv, wgate;        // [c·w, D]
  const float* ape = nullptr;  // [m, c·w]
  const float* norm = nullptr; // [w]
};

struct DevLayer {
  LayerKind kind = LayerKind::kSliding;
  MlpKind mlp = MlpKind::kLearned;
  int64_t m = 0;                   // compress ratio (0: sliding)
  const float* inv_freq = nullptr; // [r/2]
  const float *hc_attn_fn = nullptr, *hc_attn_base = nullptr, *hc_attn_scale = nullptr;
  const float *hc_ffn_fn = nullptr, *hc_ffn_base = nullptr, *hc_ffn_scale = nullptr;
  const float *attn_norm = nullptr, *ffn_norm = nullptr, *q_norm = nullptr, *kv_norm = nullptr, *sink = nullptr;
  DevMatrix wq_a, wq_b, wkv, wo_a, wo_b;
  DevCompressor cmp, idx;
  DevMatrix idx_wq_b, idx_weights;
  DevMatrix gate;
  const float* gate_bias = nullptr;
  const int32_t* tid2eid = nullptr;
  DevMatrix w1, w2, w3;  // stacked experts
  DevMatrix shared_w1, shared_w2, shared_w3;
};

struct DevEnds {
  DevMatrix embed;  // first device
  DevMatrix head;   // last device
  const float* final_norm = nullptr;
  const float *hc_head_fn = nullptr, *hc_head_base = nullptr, *hc_head_scale = nullptr;
};

// Uploads host values to one device, keeping the buffers alive.
class DeviceUploader {
 public:
  explicit DeviceUploader(int device) : device_(device) {}
  int device() const { return device_; }
  const float* f32(const float* values, size_t n, const std::string& what);
  const int32_t* i32(const std::vector<int64_t>& values, const std::string& what);
  // values are the stored ones widened to f32; `stored` picks the device dtype (BF16/F16 kept,
  // anything else f32). Several tensors of one shape may be stacked into one matrix.
  DevMatrix matrix(const std::vector<const float*>& values, int64_t rows, int64_t cols, DType stored,
                   const std::string& what);
  // A stack of same-shaped, same-format matrices as stored (views into the mapped checkpoint): plain
  // bf16/f16/f32 bytes copied as they are; FP8/FP4 codes and scales copied packed. Other formats
  // (f64) are refused here (the caller widens them through matrix()).
  DevMatrix stored(const std::vector<const WeightView*>& views, const std::string& what);
  // Uninitialised device memory kept with the uploads (synthetic weights fill it on the device).
  void* alloc(size_t bytes, const std::string& what);
  size_t bytes() const { return bytes_; }
  // Device bytes (codes + scales) and logical values of the packed matrices, per format.
  struct Packed {
    size_t bytes = 0, values = 0;
  };
  Packed fp8() const { return fp8_; }
  Packed fp4() const { return fp4_; }

 private:
  const uint8_t* upload(const std::vector<uint8_t>& host, const std::string& what);
  int device_;
  size_t bytes_ = 0;
  Packed fp8_, fp4_;
  std::vector<DeviceBuffer> buffers_;
};

WType device_wtype(DType stored);
// The device type of a stored weight format (f64 → f32).
WType device_wtype(WeightFormat format);

// The layers [first, last) and, when asked, the ends of `model`, on one device.
struct DeviceWeights {
  explicit DeviceWeights(int device) : up(device) {}
  DeviceUploader up;
  std::vector<DevLayer> layers;  // indexed by layer - first
  int first = 0;
  DevEnds ends;
};
std::unique_ptr<DeviceWeights> upload_weights(const Model& model, int device, int first_layer, int last_layer,
                                              bool embed, bool head);

}  // namespace memra::cuda
