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

WType device_wtype(WeightFormat format) {
  switch (format) {
    case WeightFormat::kBF16: return WType::kBF16;
    case WeightFormat::kF16: return WType::kF16;
    case WeightFormat::kFp8Block: return WType::kFp8Block;
    case WeightFormat::kFp4Block: return WType::kFp4Block;
    default: return WType::kF32;
  }
}

const uint8_t* DeviceUploader::upload(const std::vector<uint8_t>& host, const std::string& what) {
  DeviceBuffer buf(device_, host.size(), what.c_str());
  DeviceGuard guard(device_);
  check(cudaMemcpy(buf.get(), host.data(), host.size(), cudaMemcpyHostToDevice), ("upload of " + what).c_str());
  check(cudaDeviceSynchronize(), ("upload of " + what).c_str());
  bytes_ += buf.bytes();
  buffers_.push_back(std::move(buf));
  return buffers_.back().as<uint8_t>();
}

DevMatrix DeviceUploader::stored(const std::vector<const WeightView*>& views, const std::string& what) {
  const WeightView& v0 = *views.front();
  if (v0.format == WeightFormat::kF64) throw Error("internal: " + what + " is f64, which the device does not store");
  for (const WeightView* v : views)
    if (v->format != v0.format || v->rows != v0.rows || v->cols != v0.cols || v->block_rows != v0.block_rows ||
        v->block_cols != v0.block_cols || v->scale_cols != v0.scale_cols)
      throw Error("the CUDA backend stacks " + what + " as one matrix, but its tensors differ in format or shape (" +
                      weight_format_name(v0.format) + " vs " + weight_format_name(v->format) + ")",
                  "run it with --backend cpu");
  DevMatrix m;
  m.type = device_wtype(v0.format);
  m.rows = v0.rows;
  m.cols = v0.cols;
  const size_t per = static_cast<size_t>(v0.rows) * v0.row_bytes();  // stored bytes of one matrix
  if (per != wtype_matrix_bytes(m.type, m.rows, m.cols))
    throw Error("internal: " + what + " holds " + std::to_string(per) + " bytes per matrix, the device type " +
                wtype_name(m.type) + " " + std::to_string(wtype_matrix_bytes(m.type, m.rows, m.cols)));
  std::vector<uint8_t> host(per * views.size());
  for (size_t g = 0; g < views.size(); ++g) std::memcpy(host.data() + g * per, views[g]->data, per);
  m.ptr = upload(host, what);
  if (wtype_packed(m.type)) {
    m.scale.block_rows = static_cast<int32_t>(v0.block_rows);
    m.scale.block_cols = static_cast<int32_t>(v0.block_cols);
    m.scale.cols = v0.scale_cols;
    const size_t sper = static_cast<size_t>(wscale_matrix_bytes(m.scale, m.rows));
    std::vector<uint8_t> sh(sper * views.size());
    for (size_t g = 0; g < views.size(); ++g) std::memcpy(sh.data() + g * sper, views[g]->scale, sper);
    m.scale.ptr = upload(sh, what + " (scales)");
    Packed& p = m.type == WType::kFp8Block ? fp8_ : fp4_;
    p.bytes += host.size() + sh.size();
    p.values += static_cast<size_t>(m.rows) * static_cast<size_t>(m.cols) * views.size();
  }
  return m;
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

// Formats the device stores as they are (f64 is widened to f32 on the host).
bool stored_as_is(WeightFormat f) { return f != WeightFormat::kF64; }

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
    if (stored_as_is(t.view.format)) return up.stored({&t.view}, name);
    return up.matrix({model.f32(name)}, t.shape[0], t.shape[1], DType::kF32, name);
  };
  // The embedding is gathered by rows (embed_rows), which reads plain types only: a quantised
  // embedding (the release stores it bf16) is widened to f32.
  auto plain_mat = [&](const std::string& name) {
    const WeightTensor& t = model.tensor(name);
    if (!is_block_format(t.view.format)) return mat(name);
    return up.matrix({model.f32(name)}, t.shape[0], t.shape[1], DType::kF32, name);
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
    // Experts: one stack per projection, as stored when every expert has one format (always so
    // for a released checkpoint: FP4 or FP8 throughout, or plain); mixed plain dtypes are widened
    // to f32; a mix involving a packed format is refused (stored() says so).
    for (const char* w : {"w1", "w2", "w3"}) {
      std::vector<const WeightView*> views;
      bool same = true, any_packed = false;
      for (int64_t e = 0; e < cfg.n_routed_experts; ++e) {
        views.push_back(&model.weight(p + "ffn.experts." + std::to_string(e) + "." + w + ".weight"));
        same = same && views.back()->format == views.front()->format && stored_as_is(views.back()->format);
        any_packed = any_packed || is_block_format(views.back()->format);
      }
      const std::string what = p + "ffn.experts.*." + w + ".weight";
      DevMatrix m;
      if (same || any_packed) {
        m = up.stored(views, what);
      } else {
        std::vector<const float*> vals;
        for (int64_t e = 0; e < cfg.n_routed_experts; ++e)
          vals.push_back(model.f32(p + "ffn.experts." + std::to_string(e) + "." + w + ".weight"));
        m = up.matrix(vals, views.front()->rows, views.front()->cols, DType::kF32, what);
      }
      (std::string(w) == "w1" ? L.w1 : std::string(w) == "w2" ? L.w2 : L.w3) = m;
    }
    if (L.w1.type != L.w2.type || L.w1.type != L.w3.type) {  // the fused kernels take one dtype
      if (wtype_packed(L.w1.type) || wtype_packed(L.w2.type) || wtype_packed(L.w3.type))
        throw Error("layer " + std::to_string(l) + "'s routed experts store w1, w2, w3 in different formats (" +
                        wtype_name(L.w1.type) + ", " + wtype_name(L.w2.type) + ", " + wtype_name(L.w3.type) +
                        "): the CUDA backend's fused experts read one",
                    "run it with --backend cpu");
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
  if (embed) dw->ends.embed = plain_mat("embed.weight");
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
