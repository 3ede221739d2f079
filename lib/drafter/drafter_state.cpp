// The drafter's state component: its class table, export and import (drafter_state.h).
#include "drafter/drafter_state.h"

#include <algorithm>

#include "core/error.h"
#include "core/shape_text.h"

namespace memra {

namespace {

std::string stage_ring(int64_t s) { return std::string(kDrafterClassPrefix) + "stage." + std::to_string(s) + ".ring"; }
std::string layer_kv(int64_t l, const char* kv) {
  return std::string(kDrafterClassPrefix) + "layer." + std::to_string(l) + "." + kv;
}

}  // namespace

std::vector<ClassLayout> drafter_layout(const DrafterConfig& c, int64_t pos) {
  std::vector<ClassLayout> out;
  if (pos <= 0) return out;
  if (c.family == DrafterFamily::kDspark) {
    const int64_t live = std::min(*c.sliding_window, pos);
    for (int64_t s = 0; s < c.num_layers; ++s) out.push_back({stage_ring(s), DType::kF32, {live, c.head_dim}});
  } else {
    const int64_t row = c.num_key_value_heads * c.head_dim;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      out.push_back({layer_kv(l, "k"), DType::kF32, {pos, row}});
      out.push_back({layer_kv(l, "v"), DType::kF32, {pos, row}});
    }
  }
  return out;
}

DrafterComponent::DrafterComponent(const DrafterConfig& config)
    : rings(config.family == DrafterFamily::kDspark ? make_dspark_rings(config) : DsparkRings{}),
      context(make_dflash_context(config)),
      config_(config) {}

int64_t DrafterComponent::position() const {
  return config_.family == DrafterFamily::kDspark ? rings.pos : context.pos;
}

std::vector<CacheClass> DrafterComponent::export_classes(int64_t pos) const {
  if (pos != position())
    throw Error(
        "the drafter holds " + std::to_string(position()) + " committed positions, the state " + std::to_string(pos),
        "feed every trunk forward of a state with a drafter through the drafter (Drafter::prefill)");
  std::vector<CacheClass> out;
  const std::vector<ClassLayout> lay = layout(pos);
  for (size_t i = 0; i < lay.size(); ++i) {
    std::vector<float> values;
    if (config_.family == DrafterFamily::kDspark) {
      values = dspark_ring_window(config_, rings, static_cast<int64_t>(i));
    } else {
      const int64_t l = static_cast<int64_t>(i / 2);
      values = i % 2 == 0 ? context.k[l] : context.v[l];
    }
    out.push_back(CacheClass::f32(lay[i].name, lay[i].shape, values));
  }
  return out;
}

std::shared_ptr<const ComponentMark> DrafterComponent::export_mark(int64_t pos) const {
  if (config_.family == DrafterFamily::kDspark) return std::make_shared<ClassesMark>(export_classes(pos));
  if (pos != position())
    throw Error("the drafter holds " + std::to_string(position()) + " committed positions, the state " + std::to_string(pos));
  return std::make_shared<ClassesMark>(std::vector<CacheClass>{});
}

void DrafterComponent::import_mark(int64_t pos, const ComponentMark& marked) {
  const std::vector<CacheClass>& mark = mark_classes_of(marked);
  if (config_.family == DrafterFamily::kDspark) return import_classes(pos, mark);
  if (!mark.empty() || pos > position())
    throw Error("a DFlash drafter at " + std::to_string(position()) + " committed positions cannot come back to a mark at " +
                std::to_string(pos) + " holding " + std::to_string(mark.size()) + " classes");
  dflash_context_truncate(config_, context, pos);
}

void DrafterComponent::import_classes(int64_t pos, const std::vector<CacheClass>& classes) {
  const std::vector<ClassLayout> lay = layout(pos);
  for (size_t i = 0; i < std::max(lay.size(), classes.size()); ++i) {
    if (i >= classes.size()) throw negative("drafter class " + lay[i].name + " is missing");
    if (i >= lay.size())
      throw negative("drafter class " + classes[i].name + " is not part of this drafter's state at position " +
                     std::to_string(pos));
    const CacheClass& cls = classes[i];
    if (cls.name != lay[i].name)
      throw negative("drafter class " + cls.name + " found where " + lay[i].name + " belongs");
    if (cls.dtype != lay[i].dtype || cls.shape != lay[i].shape)
      throw negative("drafter class " + cls.name + " has dtype/shape " + dtype_name(cls.dtype) + " " +
                         shape_text(cls.shape) + ", expected " + dtype_name(lay[i].dtype) + " " +
                         shape_text(lay[i].shape),
                     "restore with the drafter the state was written with (--drafter)");
  }
  if (config_.family == DrafterFamily::kDspark) {
    std::vector<std::vector<float>> windows(config_.num_layers);
    for (int64_t s = 0; s < config_.num_layers && pos > 0; ++s) windows[s] = classes[s].f32_copy();
    rings = dspark_rings_from_windows(config_, pos, windows);
  } else {
    DflashContext ctx = make_dflash_context(config_);
    for (int64_t l = 0; l < config_.num_layers && pos > 0; ++l) {
      ctx.k[l] = classes[2 * l].f32_copy();
      ctx.v[l] = classes[2 * l + 1].f32_copy();
    }
    ctx.pos = pos;
    context = std::move(ctx);
  }
}

DrafterComponent& drafter_component(State& state) {
  auto* c = dynamic_cast<DrafterComponent*>(state.component(kDrafterComponentName));
  if (!c) throw Error("this state has no drafter", "attach a drafter before the first token (--drafter)");
  return *c;
}

const DrafterComponent& drafter_component(const State& state) { return drafter_component(const_cast<State&>(state)); }

}  // namespace memra
