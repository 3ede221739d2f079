// A loaded DeepSeek-V4 checkpoint: geometry, every weight under its canonical (upstream) name,
// per-tensor XXH3-128 of the stored bytes, and the model fingerprint that state files record.
//
// Canonical names are the upstream convention without a `model.` prefix, e.g.
//   embed.weight [V,D]  head.weight [V,D]  norm.weight [D]  hc_head_fn [n,nD]  hc_head_base [n]  hc_head_scale [1]
//   layers.N.attn_norm.weight [D]  layers.N.ffn_norm.weight [D]
//   layers.N.hc_attn_fn [(2+n)n, nD]  layers.N.hc_attn_base [(2+n)n]  layers.N.hc_attn_scale [3]  (and hc_ffn_*)
//   layers.N.attn.wq_a.weight [q_l,D]  layers.N.attn.q_norm.weight [q_l]  layers.N.attn.wq_b.weight [H·d,q_l]
//   layers.N.attn.wkv.weight [d,D]  layers.N.attn.kv_norm.weight [d]  layers.N.attn.attn_sink [H]
//   layers.N.attn.wo_a.weight [G·R, H·d/G]  layers.N.attn.wo_b.weight [D, G·R]
//   layers.N.attn.compressor.{wkv,wgate}.weight [c·d, D]  .ape [m, c·d]  .norm.weight [d]   (CSA c=2, HCA c=1)
//   layers.N.attn.indexer.wq_b.weight [Hi·di, q_l]  layers.N.attn.indexer.weights_proj.weight [Hi, D]
//   layers.N.attn.indexer.compressor.{wkv,wgate}.weight [2di, D]  .ape [m, 2di]  .norm.weight [di]  (CSA)
//   layers.N.ffn.gate.weight [E,D]  layers.N.ffn.gate.bias [E] (learned)  layers.N.ffn.gate.tid2eid [V,k] (hash)
//   layers.N.ffn.experts.E.{w1,w3}.weight [I,D]  .w2.weight [D,I]  layers.N.ffn.shared_experts.{w1,w3,w2}.weight
// Accepted stored spellings: the above, with or without `model.`, and transformers 5.17's
// save_pretrained names (`model.embed_tokens.weight`, `model.hc_head.hc_{fn,base,scale}`,
// `layers.N.attn.norm.weight` for kv_norm).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/hash.h"
#include "format/safetensors.h"
#include "model/config.h"

namespace memra {

enum class TensorRole { kFloat, kIndex };  // kIndex: tid2eid (I64/I32)

struct TensorSpec {
  std::string name;  // canonical
  std::vector<int64_t> shape;
  TensorRole role = TensorRole::kFloat;
};

// THE tensor-name table: every tensor the config predicts, in a stable order.
std::vector<TensorSpec> expected_tensors(const ModelConfig& config);

struct WeightTensor {
  std::string name;         // canonical
  std::string stored_name;  // as spelled in the file
  std::string file;         // safetensors file name within the model folder
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  Hash128 hash;                // XXH3-128 of the stored bytes
  std::vector<float> f32;      // role kFloat: values widened to f32
  std::vector<int64_t> ids;    // role kIndex: values widened to int64
};

struct LoadProgress {
  std::function<void(size_t done, size_t total)> on_tensor;  // optional
};

class Model {
 public:
  // Reads config.json and model.safetensors or model.safetensors.index.json + shards. Every
  // tensor's name, dtype and shape is checked against expected_tensors(); a missing, extra or
  // mis-shaped tensor is an Error naming it. tid2eid values must lie in [0, E).
  static Model load(const std::string& model_dir, const LoadProgress& progress = {});
  // A model of `config` without weights, for a backend that makes its own from a seed
  // (BackendOptions::synthetic_seed, `memra bench`). tensor() throws; the fingerprint covers the
  // geometry and the seed.
  static Model synthetic(const ModelConfig& config, uint64_t seed);

  const ModelConfig& config() const { return config_; }
  const std::string& dir() const { return dir_; }
  const std::vector<WeightTensor>& tensors() const { return tensors_; }  // expected_tensors() order
  const WeightTensor& tensor(const std::string& canonical) const;        // throws Error
  const float* f32(const std::string& canonical) const { return tensor(canonical).f32.data(); }
  // XXH3-128 over the canonical geometry JSON text and every (name, dtype, shape, hash) in order.
  const Hash128& fingerprint() const { return fingerprint_; }
  // "f32" when every float tensor is stored F32, else "bf16"/"f16"/"mixed".
  std::string weight_precision() const;

 private:
  ModelConfig config_;
  std::string dir_;
  std::vector<WeightTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
  Hash128 fingerprint_;
};

}  // namespace memra
