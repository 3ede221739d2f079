// THE tensor-name table: every weight of a DeepSeek-V4 trunk by id, spelled once, in the canonical
// (upstream, no `model.` prefix) form. The loader's expected-tensor list, the config checks and the
// backends' weight bindings all read names from here.
#pragma once
#include <cstdint>
#include <string>

namespace memra {

enum class TensorId {
  // model-level
  kEmbed, kFinalNorm, kHcHeadFn, kHcHeadBase, kHcHeadScale, kHead,
  // per layer (need a layer index)
  kHcAttnFn, kHcAttnBase, kHcAttnScale, kAttnNorm,
  kWqA, kQNorm, kWqB, kWkv, kKvNorm, kAttnSink, kWoA, kWoB,
  kCmpWkv, kCmpWgate, kCmpApe, kCmpNorm,                                  // CSA/HCA compressor
  kIdxWqB, kIdxWeights, kIdxCmpWkv, kIdxCmpWgate, kIdxCmpApe, kIdxCmpNorm,  // CSA indexer
  kHcFfnFn, kHcFfnBase, kHcFfnScale, kFfnNorm,
  kGate, kGateBias, kTid2eid,
  kSharedW1, kSharedW2, kSharedW3,
  // per layer and expert
  kExpertW1, kExpertW2, kExpertW3,
};

// The canonical name of tensor `id` (layer/expert where the id needs them; throws Error otherwise).
std::string tensor_name(TensorId id, int64_t layer = -1, int64_t expert = -1);

}  // namespace memra
