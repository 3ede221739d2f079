// The tensor-name table (tensor_names.h). `{L}` is the layer index, `{E}` the expert index.
#include "model/tensor_names.h"

#include <array>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace memra {

namespace {

constexpr std::array<std::pair<TensorId, std::string_view>, 41> kNames = {{
    {TensorId::kEmbed, "embed.weight"},
    {TensorId::kFinalNorm, "norm.weight"},
    {TensorId::kHcHeadFn, "hc_head_fn"},
    {TensorId::kHcHeadBase, "hc_head_base"},
    {TensorId::kHcHeadScale, "hc_head_scale"},
    {TensorId::kHead, "head.weight"},
    {TensorId::kHcAttnFn, "layers.{L}.hc_attn_fn"},
    {TensorId::kHcAttnBase, "layers.{L}.hc_attn_base"},
    {TensorId::kHcAttnScale, "layers.{L}.hc_attn_scale"},
    {TensorId::kAttnNorm, "layers.{L}.attn_norm.weight"},
    {TensorId::kWqA, "layers.{L}.attn.wq_a.weight"},
    {TensorId::kQNorm, "layers.{L}.attn.q_norm.weight"},
    {TensorId::kWqB, "layers.{L}.attn.wq_b.weight"},
    {TensorId::kWkv, "layers.{L}.attn.wkv.weight"},
    {TensorId::kKvNorm, "layers.{L}.attn.kv_norm.weight"},
    {TensorId::kAttnSink, "layers.{L}.attn.attn_sink"},
    {TensorId::kWoA, "layers.{L}.attn.wo_a.weight"},
    {TensorId::kWoB, "layers.{L}.attn.wo_b.weight"},
    {TensorId::kCmpWkv, "layers.{L}.attn.compressor.wkv.weight"},
    {TensorId::kCmpWgate, "layers.{L}.attn.compressor.wgate.weight"},
    {TensorId::kCmpApe, "layers.{L}.attn.compressor.ape"},
    {TensorId::kCmpNorm, "layers.{L}.attn.compressor.norm.weight"},
    {TensorId::kIdxWqB, "layers.{L}.attn.indexer.wq_b.weight"},
    {TensorId::kIdxWeights, "layers.{L}.attn.indexer.weights_proj.weight"},
    {TensorId::kIdxCmpWkv, "layers.{L}.attn.indexer.compressor.wkv.weight"},
    {TensorId::kIdxCmpWgate, "layers.{L}.attn.indexer.compressor.wgate.weight"},
    {TensorId::kIdxCmpApe, "layers.{L}.attn.indexer.compressor.ape"},
    {TensorId::kIdxCmpNorm, "layers.{L}.attn.indexer.compressor.norm.weight"},
    {TensorId::kHcFfnFn, "layers.{L}.hc_ffn_fn"},
    {TensorId::kHcFfnBase, "layers.{L}.hc_ffn_base"},
    {TensorId::kHcFfnScale, "layers.{L}.hc_ffn_scale"},
    {TensorId::kFfnNorm, "layers.{L}.ffn_norm.weight"},
    {TensorId::kGate, "layers.{L}.ffn.gate.weight"},
    {TensorId::kGateBias, "layers.{L}.ffn.gate.bias"},
    {TensorId::kTid2eid, "layers.{L}.ffn.gate.tid2eid"},
    {TensorId::kSharedW1, "layers.{L}.ffn.shared_experts.w1.weight"},
    {TensorId::kSharedW2, "layers.{L}.ffn.shared_experts.w2.weight"},
    {TensorId::kSharedW3, "layers.{L}.ffn.shared_experts.w3.weight"},
    {TensorId::kExpertW1, "layers.{L}.ffn.experts.{E}.w1.weight"},
    {TensorId::kExpertW2, "layers.{L}.ffn.experts.{E}.w2.weight"},
    {TensorId::kExpertW3, "layers.{L}.ffn.experts.{E}.w3.weight"},
}};

void substitute(std::string& s, std::string_view key, int64_t value, TensorId id) {
  const auto at = s.find(key);
  if (at == std::string::npos) return;
  if (value < 0) throw Error("tensor " + s + " needs an index for " + std::string(key) + " (id " +
                             std::to_string(static_cast<int>(id)) + ")");
  s.replace(at, key.size(), std::to_string(value));
}

}  // namespace

std::string tensor_name(TensorId id, int64_t layer, int64_t expert) {
  for (const auto& [tid, pattern] : kNames) {
    if (tid != id) continue;
    std::string s(pattern);
    substitute(s, "{L}", layer, id);
    substitute(s, "{E}", expert, id);
    return s;
  }
  throw Error("tensor id " + std::to_string(static_cast<int>(id)) + " is not in the tensor-name table");
}

}  // namespace memra
