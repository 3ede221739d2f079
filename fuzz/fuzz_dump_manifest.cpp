// libFuzzer target: a reference dump's manifest.json, validated manifest-first against models/tiny
// (geometry field by field, then every array's shape, dtype and hash) over the tiny dump's arrays.
#include "fuzz_common.h"
#include "parity/dump.h"

using namespace memra;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto arrays = std::make_shared<SafetensorsFile>(
      SafetensorsFile::open(std::string(MEMRA_FIXTURES) + "/tiny/dump/arrays.safetensors"));
  fuzz::accepts([&] {
    nlohmann::json m = parse_json_guarded(std::string_view(reinterpret_cast<const char*>(data), size), "manifest.json");
    ReferenceDump d = ReferenceDump::from_manifest("dump", std::move(m), [](const std::string&) { return arrays; });
    d.compute_dtype();
    DumpValidation v = d.validate(fuzz::tiny_config());
    if (v.refused == v.reasons.empty()) __builtin_trap();
    if (!v.refused)
      for (const auto& a : v.arrays)
        if (a.status == "ok") {
          fuzz::accepts([&] { d.f32(a.name); });
          fuzz::accepts([&] { d.ints(a.name); });
        }
  });
  return 0;
}
