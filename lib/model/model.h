// A loaded DeepSeek-V4 checkpoint: geometry, every weight under its canonical (upstream) name kept
// packed in the memory-mapped safetensors files (plain f32/bf16/f16, FP8 e4m3 with 128x128 ue8m0
// block scales, packed FP4 e2m1 experts with 1x32 scales), per-tensor XXH3-128 and the model
// fingerprint that state files record. Loading reads the headers only (and tid2eid, which it
// range-checks); tensor bytes are read when they are decoded or hashed.
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
// Shapes are logical ([out, in]); a packed FP4 weight is stored [out, in/2].
// Accepted stored spellings: the above, with or without `model.`, and transformers 5.17's
// save_pretrained names (`model.embed_tokens.weight`, `model.hc_head.hc_{fn,base,scale}`,
// `layers.N.attn.norm.weight` for kv_norm). A quantised weight `P.weight` has its scale in `P.scale`
// (the release's spelling) or `P.weight_scale_inv` (DeepSeek-V3 / transformers' spelling).
// `mtp.*` tensors (the MTP block and a DSpark drafter's stages, main_proj, main_norm, Markov and
// confidence heads) are recognised and listed, not used by the main model (unused_tensors()); a
// checkpoint's own drafter reads them (drafter/released_drafter.h).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/hash.h"
#include "format/quant.h"
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
  std::string name;                   // canonical
  std::string stored_name;            // as spelled in the file
  std::string file;                   // safetensors file name within the model folder
  DType dtype = DType::kF32;          // stored dtype (F8_E4M3 for FP8, I8/U8 for packed FP4)
  std::vector<int64_t> shape;         // logical, as the config predicts
  std::vector<int64_t> stored_shape;  // as stored ([N, K/2] for packed FP4)
  TensorRole role = TensorRole::kFloat;
  WeightView view;                     // the packed bytes in the mapped file (role kFloat)
  std::string scale_name, scale_file;  // block formats: the scale tensor as stored, and its file
  DType scale_dtype = DType::kU8;      // F8_E8M0 or U8
  std::vector<int64_t> scale_shape;
  std::vector<int64_t> ids;        // role kIndex: values widened to int64 (read and checked at load)
  const uint8_t* bytes = nullptr;  // stored weight bytes (what the hash covers, then the scale's)
  size_t nbytes = 0;
  size_t scale_nbytes = 0;
  // The dtype text the fingerprint and listings use: the dtype name for plain tensors,
  // "F8_E4M3*E8M0[128x128]" / "F4_E2M1x2*E8M0[1x32]" for block formats (I8 vs U8 spellings agree).
  std::string format_label() const;
};

// A stored tensor the main model does not use: the MTP block and DSpark drafter (mtp.*), which a
// checkpoint's own drafter reads (drafter/released_drafter.h).
struct UnusedTensor {
  std::string name;       // as stored
  std::string canonical;  // without a `model.` prefix
  std::string file;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;      // as stored
  std::string kind;                // "mtp" or "dspark"
  const uint8_t* bytes = nullptr;  // in the mapped file
  size_t nbytes = 0;
  // A float weight's decoding view: plain F32/BF16/F16/F64 ([∏ shape[:-1], shape[-1]]), or an FP8 /
  // packed FP4 matrix with its checked scale attached (logical [N, K]); format kF32 with null data
  // for anything else (scales, integer tensors).
  WeightView view;
  size_t scale_nbytes = 0;  // block formats: the scale tensor's bytes (view.scale)
  std::string format_label() const;  // as WeightTensor::format_label()
};

struct LoadProgress {
  std::function<void(size_t done, size_t total)> on_shard;  // optional: shard headers opened
};

// Options and progress of hashing every tensor (the fingerprint needs it; `memra load` does it).
struct HashOptions {
  int threads = 0;                                                          // 0: the machine's hardware threads
  std::function<void(uint64_t done_bytes, uint64_t total_bytes)> on_bytes;  // optional, called from one thread
};
struct HashStats {
  uint64_t bytes = 0;  // bytes hashed by this call (0 when the hashes were already known)
  double seconds = 0;
  int threads = 0;
};

// The files Model::load reads in `model_dir` that exist: config.json, model.safetensors or the
// index and every shard it names. Never throws; for the output rules (an output may not replace
// a file its own command reads).
std::vector<std::string> model_input_files(const std::string& model_dir);

class Model {
 public:
  // Reads config.json and the headers of model.safetensors or model.safetensors.index.json + shards.
  // Every tensor's name, dtype and shape is checked against expected_tensors(), every quantised
  // weight against its scale tensor (dtype, shape vs the block size); a missing, extra, mis-shaped
  // or mistyped tensor or scale, and a missing or unreadable shard, is an Error naming it.
  // tid2eid values must lie in [0, E).
  static Model load(const std::string& model_dir, const LoadProgress& progress = {});
  // A model of `config` without weights, for a backend that makes its own from a seed
  // (BackendOptions::synthetic_seed, `memra bench`). tensor() throws; the fingerprint covers the
  // geometry and the seed.
  static Model synthetic(const ModelConfig& config, uint64_t seed);
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const ModelConfig& config() const { return config_; }
  const std::string& dir() const { return dir_; }
  const std::vector<WeightTensor>& tensors() const { return tensors_; }  // expected_tensors() order
  const WeightTensor& tensor(const std::string& canonical) const;        // throws Error
  const std::vector<UnusedTensor>& unused_tensors() const { return unused_; }
  const std::vector<std::string>& files() const { return file_names_; }  // shard file names

  // THE weight access of kernels: the packed weight, decoded row by row (no copy of the tensor).
  const WeightView& weight(const std::string& canonical) const { return tensor(canonical).view; }
  // The whole tensor as f32: the mapped bytes themselves for aligned F32 tensors, else decoded
  // once on first use and cached (thread-safe). Meant for small tensors and small models; a
  // V4-Flash-size checkpoint is never widened as a whole unless every tensor is asked for.
  const float* f32(const std::string& canonical) const;
  // Bytes held by f32()'s decoded copies (what the checkpoint has been widened by so far).
  size_t f32_cached_bytes() const;

  // XXH3-128 of a tensor's stored bytes (a block format's weight bytes then its scale bytes).
  // Computed for all tensors on first use, in parallel (hash_all()).
  const Hash128& hash(const std::string& canonical) const;
  const Hash128& hash(size_t index) const;
  // XXH3-128 of an unused tensor's stored bytes (not part of the fingerprint; the manifest lists it).
  const Hash128& unused_hash(size_t index) const;
  // XXH3-128 over the canonical geometry JSON text and every (name, format label, shape, hash) in order.
  const Hash128& fingerprint() const;
  // Hashes every tensor, unused ones included (once; later calls return at once), reading the
  // shards side by side at disk speed.
  HashStats hash_all(const HashOptions& options = {}) const;
  uint64_t stored_bytes() const;  // what hash_all reads: every tensor's bytes

  // "f32" when every float tensor is stored F32, else "bf16"/"f16"/"fp8"/"fp4" when all are that
  // format, else "mixed".
  std::string weight_precision() const;

 private:
  Model();
  struct Lazy;
  ModelConfig config_;
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;  // keep the mappings alive
  std::vector<std::string> file_names_;
  std::vector<WeightTensor> tensors_;
  std::vector<UnusedTensor> unused_;
  std::unordered_map<std::string, size_t> index_;
  std::unique_ptr<Lazy> lazy_;  // hashes, fingerprint, decoded f32 copies
};

}  // namespace memra
