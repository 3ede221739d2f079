// Weight upload (weights.h).
#include "weights.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstring>

#include "core/error.h"
#include "cuda_check.h"
#include "engine/rope.h"
#include "model/model.h"

namespace memra::cuda {

WType device_wtype(DType stored) {
  if (stored == DType::kBF16) return WType::kBF16;
  if (stored == DType::kF16) return WType::kF16;
  return WType::kF32;
}

const float* DeviceUploader::f32(const float* values, size_t n, const std::string& what) {
  DeviceBuffer buf(device_, n * sizeof(float), what.c_str());
  DeviceGuard guard(device_);
  check(cudaMemcpy(buf.get(), values, n * sizeof(float), cudaMemcpyHostToDevice), ("upload of " + what).c_str());
  check(cudaDeviceSynchronize(), ("upload of " + what).c_str());  // pageable copies may still be in flight
  bytes_ += buf.bytes();
  buffers_.push_back(std::move(buf));
  return buffers_.back().as<float>();
}

void* DeviceUploader::alloc(size_t bytes, const std::string& what) {
  DeviceBuffer buf(device_, bytes, what.c_str());
  bytes_ += buf.bytes();
  buffers_.push_back(std::move(buf));
  return buffers_.back().get();
}

const int32_t* DeviceUploader::i32(const std::vector<int64_t>& values, const std::string& what) {
  std::vector<int32_t> v(values.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (values[i] < INT32_MIN || values[i] > INT32_MAX) throw Error(what + " holds a value outside int32");
    v[i] = static_cast<int32_t>(values[i]);
  }
  DeviceBuffer buf(device_, v.size() * sizeof(int32_t), what.c_str());
  DeviceGuard guard(device_);
  check(cudaMemcpy(buf.get(), v.data(), v.size() * sizeof(int32_t), cudaMemcpyHostToDevice), ("upload of " + what).c_str());
  check(cudaDeviceSynchronize(), ("upload of " + what).c_str());
  bytes_ += buf.bytes();
  buffers_.push_back(std::move(buf));
  return buffers_.back().as<int32_t>();
}

DevMatrix DeviceUploader::matrix(const std::vector<const float*>& values, int64_t rows, int64_t cols, DType stored,
                                 const std::string& what) {
  DevMatrix m;
  m.type = device_wtype(stored);
  m.rows = rows;
  m.cols = cols;
  const size_t per = static_cast<size_t>(rows * cols), n = per * values.size(), es = wtype_size(m.type);
  std::vector<uint8_t> host(n * es);
  for (size_t g = 0; g < values.size(); ++g) {
    const float* src = values[g];
    uint8_t* dst = host.data() + g * per * es;
    if (m.type == WType::kF32) {
      std::memcpy(dst, src, per * sizeof(float));
    } else if (m.type == WType::kBF16) {
      // The values were widened from bf16: their upper 16 bits are the stored bf16, exactly.
      auto* d16 = reinterpret_cast<uint16_t*>(dst);
      for (size_t i = 0; i < per; ++i) {
        uint32_t bits;
        std::memcpy(&bits, src + i, 4);
        d16[i] = static_cast<uint16_t>(bits >> 16);
      }
    } else {
      auto* dh = reinterpret_cast<__half*>(dst);
      for (size_t i = 0; i < per; ++i) dh[i] = __float2half_rn(src[i]);  // exact: widened from f16
    }
  }
  DeviceBuffer buf(device_, host.size(), what.c_str());
  DeviceGuard guard(device_);
  check(cudaMemcpy(buf.get(), host.data(), host.size(), cudaMemcpyHostToDevice), ("upload of " + what).c_str());
  check(cudaDeviceSynchronize(), ("upload of " + what).c_str());
  bytes_ += buf.bytes();
  m.ptr = buf.get();
  buffers_.push_back(std::move(buf));
  return m;
}

namespace {

// The device storage of a stored dtype: bf16/f16/f32 as stored; block-quantised formats (FP8, FP4)
// are dequantised to f32 until the packed decode kernels land (docs/quantization.md).
DType device_dtype(DType stored) {
  return stored == DType::kBF16 || stored == DType::kF16 ? stored : DType::kF32;
}

// One dtype for a stack: the common device dtype, f32 when they differ.
DType common_dtype(const std::vector<const WeightTensor*>& ts) {
  DType d = device_dtype(ts.front()->dtype);
  for (const auto* t : ts)
    if (device_dtype(t->dtype) != d) return DType::kF32;
  return d;
}

}  // namespace

std::unique_ptr<DeviceWeights> upload_weights(const Model& model, int device, int first_layer, int last_layer,
                                              bool embed, bool head) {
  const ModelConfig& cfg = model.config();
  auto dw = std::make_unique<DeviceWeights>(device);
  DeviceUploader& up = dw->up;
  dw->first = first_layer;
  auto numel = [](const WeightTensor& t) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    return static_cast<size_t>(n);
  };
  auto vec = [&](const std::string& name) { return up.f32(model.f32(name), numel(model.tensor(name)), name); };
  auto mat = [&](const std::string& name) {
    const WeightTensor& t = model.tensor(name);
    if (t.shape.size() != 2) throw Error("tensor " + name + " is not a matrix");
    return up.matrix({model.f32(name)}, t.shape[0], t.shape[1], device_dtype(t.dtype), name);
  };
  const int64_t r = cfg.qk_rope_head_dim;
  const std::vector<float> inv_main = rope_inv_freq(cfg.rope_main, r), inv_cmp = rope_inv_freq(cfg.rope_compress, r);
  const float* d_inv_main = up.f32(inv_main.data(), inv_main.size(), "rope table (main)");
  const float* d_inv_cmp = up.f32(inv_cmp.data(), inv_cmp.size(), "rope table (compress)");

  for (int l = first_layer; l < last_layer; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    DevLayer L;
    L.kind = cfg.layer_types[l];
    L.mlp = cfg.mlp_layer_types[l];
    L.m = cfg.compress_ratio(l);
    L.inv_freq = L.kind == LayerKind::kSliding ? d_inv_main : d_inv_cmp;
    L.hc_attn_fn = vec(p + "hc_attn_fn");
    L.hc_attn_base = vec(p + "hc_attn_base");
    L.hc_attn_scale = vec(p + "hc_attn_scale");
    L.hc_ffn_fn = vec(p + "hc_ffn_fn");
    L.hc_ffn_base = vec(p + "hc_ffn_base");
    L.hc_ffn_scale = vec(p + "hc_ffn_scale");
    L.attn_norm = vec(p + "attn_norm.weight");
    L.ffn_norm = vec(p + "ffn_norm.weight");
    L.wq_a = mat(p + "attn.wq_a.weight");
    L.q_norm = vec(p + "attn.q_norm.weight");
    L.wq_b = mat(p + "attn.wq_b.weight");
    L.wkv = mat(p + "attn.wkv.weight");
    L.kv_norm = vec(p + "attn.kv_norm.weight");
    L.sink = vec(p + "attn.attn_sink");
    L.wo_a = mat(p + "attn.wo_a.weight");
    L.wo_b = mat(p + "attn.wo_b.weight");
    auto compressor = [&](const std::string& c) {
      return DevCompressor{mat(c + "wkv.weight"), mat(c + "wgate.weight"), vec(c + "ape"), vec(c + "norm.weight")};
    };
    if (L.kind != LayerKind::kSliding) L.cmp = compressor(p + "attn.compressor.");
    if (L.kind == LayerKind::kCSA) {
      L.idx = compressor(p + "attn.indexer.compressor.");
      L.idx_wq_b = mat(p + "attn.indexer.wq_b.weight");
      L.idx_weights = mat(p + "attn.indexer.weights_proj.weight");
    }
    L.gate = mat(p + "ffn.gate.weight");
    if (L.mlp == MlpKind::kHash) {
      L.tid2eid = up.i32(model.tensor(p + "ffn.gate.tid2eid").ids, p + "ffn.gate.tid2eid");
    } else {
      L.gate_bias = vec(p + "ffn.gate.bias");
    }
    for (const char* w : {"w1", "w2", "w3"}) {
      std::vector<const WeightTensor*> ts;
      for (int64_t e = 0; e < cfg.n_routed_experts; ++e)
        ts.push_back(&model.tensor(p + "ffn.experts." + std::to_string(e) + "." + w + ".weight"));
      std::vector<const float*> vals;
      for (const auto* t : ts) vals.push_back(model.f32(t->name));
      DevMatrix m = up.matrix(vals, ts.front()->shape[0], ts.front()->shape[1], common_dtype(ts),
                              p + "ffn.experts.*." + w + ".weight");
      (std::string(w) == "w1" ? L.w1 : std::string(w) == "w2" ? L.w2 : L.w3) = m;
    }
    if (L.w1.type != L.w2.type || L.w1.type != L.w3.type) {  // the fused kernels take one dtype
      auto refloat = [&](const char* w, DevMatrix& m) {
        std::vector<const float*> vals;
        for (int64_t e = 0; e < cfg.n_routed_experts; ++e)
          vals.push_back(model.f32(p + "ffn.experts." + std::to_string(e) + "." + w + ".weight"));
        m = up.matrix(vals, m.rows, m.cols, DType::kF32, p + "ffn.experts.*." + w + ".weight (f32)");
      };
      refloat("w1", L.w1);
      refloat("w2", L.w2);
      refloat("w3", L.w3);
    }
    L.shared_w1 = mat(p + "ffn.shared_experts.w1.weight");
    L.shared_w2 = mat(p + "ffn.shared_experts.w2.weight");
    L.shared_w3 = mat(p + "ffn.shared_experts.w3.weight");
    dw->layers.push_back(L);
  }
  if (embed) dw->ends.embed = mat("embed.weight");
  if (head) {
    dw->ends.head = mat("head.weight");
    dw->ends.final_norm = vec("norm.weight");
    dw->ends.hc_head_fn = vec("hc_head_fn");
    dw->ends.hc_head_base = vec("hc_head_base");
    dw->ends.hc_head_scale = vec("hc_head_scale");
  }
  return dw;
}

}  // namespace memra::cuda
