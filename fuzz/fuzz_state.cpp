// libFuzzer target: state files. Mode 0 (first byte even): the bytes as a state file, every check,
// then the restore into models/tiny's geometry. Mode 1: the bytes' safetensors tensors (structure
// from the fuzzer) written by the real writer with correct hashes, read back and restored, so
// what follows the hash checks is reached too.
#include "engine/cpu_state.h"
#include "engine/memory_plan.h"
#include "engine/realization.h"
#include "fuzz_common.h"
#include "state/state_file.h"
#include "state/state_manifest.h"

using namespace memra;

namespace {

// States of models/tiny's geometry on the host, without weights: restore_state_file needs only
// new_state (the fuzzer never runs a forward).
class StateOnlyBackend final : public Backend {
 public:
  const RealizationInfo& realization() const override { return memra::realization("cpu"); }
  const ModelConfig& config() const override { return fuzz::tiny_config(); }
  std::unique_ptr<State> new_state(int64_t capacity) const override {
    return std::make_unique<CpuState>(fuzz::tiny_config(), capacity);
  }
  void forward(std::span<const SequenceStep>) const override { __builtin_trap(); }
  std::vector<float> last_logits(const State&) const override { __builtin_trap(); }
};

void use(StateFile& f) {
  nonfinite_classes(f);
  state_manifest_text(f);
  const ModelConfig& cfg = fuzz::tiny_config();
  const int64_t capacity = f.position() + 3;
  RunShape shape;
  shape.capacity = std::max<int64_t>(capacity, 1);
  shape.live_copies = 2;
  shape.live_position = f.position();
  require_fits(plan_memory(cfg, shape, 0), uint64_t{256} << 20, "fuzz restore");
  const StateOnlyBackend backend;
  std::unique_ptr<State> s = restore_state_file(f, backend, f.model_fingerprint(), capacity);
  if (s->position() != f.position()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::vector<uint8_t> bytes(data + 1, data + size);
  if ((data[0] & 1) == 0) {
    fuzz::accepts([&] {
      StateFile f = StateFile::parse(InputBytes::from_buffer("fuzz", std::move(bytes)), StateCheck::kFull, 1);
      use(f);
    });
    return 0;
  }
  fuzz::accepts([&] {
    SafetensorsFile st = SafetensorsFile::parse(InputBytes::from_buffer("fuzz", std::move(bytes)));
    HostSnapshot snap;
    snap.pos = data[0] >> 1;
    snap.capacity = snap.pos + 1;
    for (const TensorView& t : st.tensors()) {
      if (t.dtype != DType::kF32 || t.numel > (1u << 16)) continue;
      snap.classes.push_back(CacheClass::f32(t.name, t.shape, tensor_to_f32(t)));
    }
    const std::string file = serialize_state_file(snap, {std::string(32, 'a'), "fuzz"}, {});
    StateFile f = StateFile::parse(InputBytes::from_buffer("fuzz", std::vector<uint8_t>(file.begin(), file.end())),
                                   StateCheck::kFull, 1);
    if (f.classes().size() != snap.classes.size()) __builtin_trap();  // the writer's output must read back
    use(f);
  });
  return 0;
}
