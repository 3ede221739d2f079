// A loaded drafter: config, every tensor the config predicts (widened to f32), per-tensor XXH3-128
// of the stored bytes and a fingerprint (as model/model.h does for the trunk). The embedding and LM
// head are the trunk's and never part of a drafter folder. A released checkpoint carries its DSpark
// drafter inside the model folder under these names (where a release spells one differently,
// released_drafter.cpp's table maps it), possibly FP8/FP4, dequantised at load.
//
// THE drafter tensor-name table (expected_drafter_tensors):
//  dspark  mtp.0.main_proj.weight [D, n_taps·D]  mtp.0.main_norm.weight [D]
//          per stage s: mtp.s.hc_{attn,ffn}_{fn [(2+n)n, nD], base [(2+n)n], scale [3]}
//            mtp.s.{attn_norm,ffn_norm}.weight [D]  mtp.s.attn.wq_a.weight [q_l, D]  .q_norm.weight [q_l]
//            .wq_b.weight [H·hd, q_l]  .wkv.weight [hd, D]  .kv_norm.weight [hd]  .wo_a.weight [G·R, H·hd/G]
//            .wo_b.weight [D, G·R]  .attn_sink [H]  mtp.s.ffn.gate.weight [E, D]  .gate.bias [E]
//            mtp.s.ffn.experts.e.{w1,w3}.weight [I, D]  .w2.weight [D, I]  mtp.s.ffn.shared_experts.{w1,w2,w3}.weight
//          last stage L: mtp.L.norm.weight [D]  mtp.L.hc_head_fn [n, nD]  mtp.L.hc_head_base [n]  mtp.L.hc_head_scale [1]
//          heads under mtp.L.: markov_head.markov_w1.weight [V, r]  markov_head.markov_w2.weight [V, r]
//            confidence_head.proj.weight [1, D(+r)]  confidence_head.proj.bias [1]
//  dflash  fc.weight [D, n_taps·D]  hidden_norm.weight [D]  norm.weight [D]
//          layers.l.{input_layernorm,post_attention_layernorm}.weight [D]
//          layers.l.self_attn.{q_proj [H·hd, D], k_proj [KVH·hd, D], v_proj [KVH·hd, D], o_proj [D, H·hd]}.weight
//          layers.l.self_attn.{q_norm,k_norm}.weight [hd]  layers.l.mlp.{gate_proj,up_proj [I, D], down_proj [D, I]}.weight
//          heads at the top level: markov_head.*, confidence_head.* (shapes as above)
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/hash.h"
#include "drafter/drafter_config.h"
#include "format/safetensors.h"

namespace memra {

class Model;

struct DrafterTensorSpec {
  std::string name;
  std::vector<int64_t> shape;
};

// Every tensor the config predicts, in a stable order (the confidence bias only when `with_bias`).
std::vector<DrafterTensorSpec> expected_drafter_tensors(const DrafterConfig& config, bool with_bias);
// The prefix of the Markov / confidence head tensors: "mtp.<last>." for dspark, "" for dflash.
std::string drafter_head_prefix(const DrafterConfig& config);

class DrafterWeights {
 public:
  // A drafter folder: reads DIR/config.json and DIR/model.safetensors; every tensor must be
  // predicted, present, F32, BF16 or F16 and of the predicted shape (Error naming it otherwise).
  // The confidence bias is optional when the config does not say; when it does, the checkpoint must
  // agree. A model folder (config.json of a DeepSeek-V4 trunk) instead yields the checkpoint's own
  // DSpark drafter (drafter/released_drafter.h), or an Error when it carries none.
  // `trunk`, when given and loaded from DIR itself, is the model whose drafter that is: it is not
  // loaded a second time.
  static DrafterWeights load(const std::string& dir, const Model* trunk = nullptr);

  const DrafterConfig& config() const { return config_; }
  const std::string& dir() const { return dir_; }
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  const float* f32(const std::string& name) const;  // throws Error
  const Hash128& fingerprint() const { return fingerprint_; }
  struct Tensor {
    std::string name;  // ours (the table above)
    DType dtype;       // as stored
    std::vector<int64_t> shape;  // logical
    Hash128 hash;      // of the stored bytes (a block format's weight bytes, then its scale's)
    std::vector<float> values;   // widened / dequantised
    std::string format;  // the fingerprint's label: the dtype name, or a block format's label
  };
  const std::vector<Tensor>& tensors() const { return tensors_; }

  // A drafter of `config` from its tensors in expected_drafter_tensors() order: indexes them and
  // computes the fingerprint (used by the loaders).
  static DrafterWeights assemble(DrafterConfig config, std::string dir, std::vector<Tensor> tensors);

 private:
  DrafterConfig config_;
  std::string dir_;
  std::vector<Tensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
  Hash128 fingerprint_;
};

}  // namespace memra
