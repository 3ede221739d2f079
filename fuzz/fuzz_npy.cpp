// libFuzzer target: the .npy reader (preamble, header dict, dtype, shape, data size) and the f32
// writer, which must read back bit-identically.
#include <cstring>

#include "format/npy.h"
#include "fuzz_common.h"

using namespace memra;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::accepts([&] {
    NpyArray a = parse_npy(data, size, "fuzz.npy");
    if (a.numel > (1u << 16)) return;
    fuzz::accepts([&] { npy_to_ids(a, "fuzz.npy"); });
    fuzz::accepts([&] {
      const std::vector<float> v = npy_to_f32(a, "fuzz.npy");
      const std::string again = serialize_npy_f32(v.data(), a.shape);
      const NpyArray b = parse_npy(reinterpret_cast<const uint8_t*>(again.data()), again.size(), "again.npy");
      if (b.shape != a.shape || npy_to_f32(b, "again.npy").size() != v.size()) __builtin_trap();
      if (!v.empty() && std::memcmp(npy_to_f32(b, "again.npy").data(), v.data(), v.size() * 4) != 0) __builtin_trap();
    });
  });
  return 0;
}
