// libFuzzer target: the safetensors reader (header JSON, dtypes, shapes, offsets) and the
// header-first stream reader, which must accept exactly what the in-memory parser accepts.
#include "fuzz_common.h"
#include "format/safetensors.h"

using namespace memra;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> names;
  const bool whole = fuzz::accepts([&] {
    SafetensorsFile f = SafetensorsFile::parse(InputBytes::from_buffer("fuzz", std::vector<uint8_t>(data, data + size)));
    for (const TensorView& t : f.tensors()) {
      names.push_back(t.name);
      if (t.numel > (1u << 16)) continue;
      fuzz::accepts([&] { tensor_to_f32(t); });
      fuzz::accepts([&] { tensor_to_i64(t); });
    }
    f.metadata();
  });
  fuzz::PipeInput pipe(data, size);
  if (!pipe.ok()) return 0;
  std::vector<std::string> streamed;
  const bool stream = fuzz::accepts([&] {
    StdinReader in(pipe.read_fd);
    SafetensorsFile f = SafetensorsFile::parse(SafetensorsFile::read_stream(in, "fuzz", 1u << 20));
    for (const TensorView& t : f.tensors()) streamed.push_back(t.name);
  });
  if (whole != stream || names != streamed) __builtin_trap();  // the stream reader read something else
  return 0;
}
