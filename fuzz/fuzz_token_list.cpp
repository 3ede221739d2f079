// libFuzzer target: token lists (text ids or a 1-D .npy), in memory and as a stream through a
// pipe: both readers must give the same list or both refuse, and neither may pass the limit.
#include "format/token_list.h"
#include "fuzz_common.h"

using namespace memra;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  TokenListLimits limits;
  limits.max_tokens = 1000;
  std::vector<int32_t> a, b;
  const bool whole = fuzz::accepts([&] { a = parse_token_bytes(data, size, "fuzz", limits); });
  fuzz::PipeInput pipe(data, size);
  if (!pipe.ok()) return 0;
  const bool stream = fuzz::accepts([&] {
    StdinReader in(pipe.read_fd);
    b = read_token_stream(in, "fuzz", limits);
  });
  if (whole != stream || a != b || a.size() > 1000) __builtin_trap();
  return 0;
}
