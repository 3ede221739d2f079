// libFuzzer target: config.json (guarded JSON, both config forms, every bound), then what is
// derived from a config: the expected tensor table, the decode-state layout and the memory plan.
#include "engine/decode_state.h"
#include "engine/memory_plan.h"
#include "fuzz_common.h"
#include "model/model.h"

using namespace memra;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::accepts([&] {
    const nlohmann::json j = parse_json_guarded(std::string_view(reinterpret_cast<const char*>(data), size), "config.json");
    const ModelConfig c = ModelConfig::parse(j);
    c.geometry_json().dump();
    if (expected_tensors(c).empty()) __builtin_trap();
    for (int64_t pos : {int64_t{0}, int64_t{1}, int64_t{129}}) trunk_layout(c, pos);
    RunShape shape;
    shape.capacity = 4096;
    shape.chunk = 64;
    shape.live_copies = 2;
    plan_memory(c, shape, 0);
    const int64_t fits = largest_fitting(c, 0, uint64_t{64} << 20, 1, int64_t{1} << 40, [](int64_t n) {
      RunShape s;
      s.capacity = s.chunk = n;
      return s;
    });
    if (fits >= 1 && decode_state_bytes(c, fits) > (uint64_t{64} << 20)) __builtin_trap();
  });
  return 0;
}
