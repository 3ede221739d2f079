// libFuzzer target: hash manifests (model and state: one parser), and checking one against a
// fixed list of names and hashes, in text and JSON.
#include "fuzz_common.h"
#include "model/hash_manifest.h"

using namespace memra;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::accepts([&] {
    const auto entries = parse_manifest(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.xxh");
    std::vector<std::pair<std::string, Hash128>> actual = {
        {"embed.weight", Hash128{1, 2}}, {"layers.0.window", Hash128{3, 4}}, {"model", Hash128{5, 6}}};
    const ManifestCheck c = check_manifest_items(actual, entries);
    if (c.ok + c.mismatch + c.missing + c.unlisted != c.items.size()) __builtin_trap();
    c.text("model", true);
    c.to_json().dump();
  });
  return 0;
}
