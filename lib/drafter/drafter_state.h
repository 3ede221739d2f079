// The drafter's part of a decode state: State component "drafter", class prefix "drafter." (backend.h).
// It holds what a proposal at the next position reads, one entry per COMMITTED position (never for
// rejected drafts), so after speculative decoding it equals the component that plain greedy decoding
// of the same tokens builds, bit for bit. The drafter math runs on the host whatever the trunk's
// backend, so the component lives in host memory.
//
// THE drafter class table (F32, position order, oldest first; empty classes omitted, as the trunk's):
//   dspark  drafter.stage.S.ring   [min(W, pos), hd]   stage S's window of K=V (drafters.md §5.4)
//   dflash  drafter.layer.L.k      [pos, KVH·hd]       layer L's context keys (post-k_norm, post-RoPE)
//           drafter.layer.L.v      [pos, KVH·hd]       layer L's context values
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "drafter/dflash_forward.h"
#include "drafter/drafter_config.h"
#include "drafter/dspark_forward.h"
#include "engine/backend.h"

namespace memra {

inline constexpr const char* kDrafterComponentName = "drafter";

// The classes a drafter component holds at `pos`: names, dtypes (F32) and shapes, in export order.
std::vector<ClassLayout> drafter_layout(const DrafterConfig& config, int64_t pos);

class DrafterComponent final : public StateComponent {
 public:
  explicit DrafterComponent(const DrafterConfig& config);
  std::string name() const override { return kDrafterComponentName; }
  std::string class_prefix() const override { return kDrafterClassPrefix; }
  std::vector<ClassLayout> layout(int64_t pos) const override { return drafter_layout(config_, pos); }
  std::vector<CacheClass> export_classes(int64_t pos) const override;
  void import_classes(int64_t pos, const std::vector<CacheClass>& classes) override;
  // DFlash: the context only grows by position, so a mark holds nothing and coming back to it drops
  // the positions past it; DSpark: the rings (at most W rows a stage), as export_classes.
  std::shared_ptr<const ComponentMark> export_mark(int64_t pos) const override;
  void import_mark(int64_t pos, const ComponentMark& mark) override;

  const DrafterConfig& config() const { return config_; }
  int64_t position() const;  // committed positions held (the next anchor position)

  DsparkRings rings;      // dspark
  DflashContext context;  // dflash

 private:
  const DrafterConfig& config_;
};

// The drafter component of `state`; throws Error when the state has none.
DrafterComponent& drafter_component(State& state);
const DrafterComponent& drafter_component(const State& state);

}  // namespace memra
