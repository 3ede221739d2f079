// libFuzzer target: the tokenizer (lib/text). The first byte picks what the rest is:
//   even  a tokenizer.json (guarded JSON, pre-tokenizer regexes compiled by PCRE2, BPE vocab and
//         merges, added tokens, post-processor); a loaded one then encodes and decodes a sample;
//   odd   text for models/tiny's tokenizer: encode (any bytes, via utf8_lossy) must give ids inside
//         the vocabulary and, when no added token matched, decode back to the same text; the bytes
//         are also decoded as little-endian int32 ids (unknown ids are skipped, never read).
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "fuzz_common.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

using namespace memra;

namespace {

const Tokenizer& fixture() {
  static const Tokenizer t = Tokenizer::load(std::string(MEMRA_FIXTURES) + "/tiny/tokenizer.json");
  return t;
}

// A file the json mode rewrites on every input (Tokenizer::load reads a path).
const std::string& scratch_path() {
  static const std::string p = [] {
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir && *dir ? dir : "/tmp") + "/memra-fuzz-tokenizer-" + std::to_string(::getpid()) + ".json";
    return path;
  }();
  return p;
}

void check_ids(const Tokenizer& t, const std::vector<int32_t>& ids) {
  for (int32_t id : ids)
    if (id < 0 || id >= t.id_limit()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    const std::string& path = scratch_path();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return 0;
    const bool written = ::write(fd, rest.data(), rest.size()) == static_cast<ssize_t>(rest.size());
    ::close(fd);
    if (!written) return 0;
    fuzz::accepts([&] {
      const Tokenizer t = Tokenizer::load(path);
      for (std::string_view sample : {"Hello, world! 123 \xe4\xbd\xa0\xe5\xa5\xbd", "  \n\t x"}) {
        const std::vector<int32_t> ids = t.encode(sample, true);
        check_ids(t, ids);
        t.decode(ids, false);
      }
    });
    ::unlink(path.c_str());
    return 0;
  }
  const Tokenizer& t = fixture();
  const std::string text = utf8_lossy(rest);
  fuzz::accepts([&] {
    const std::vector<int32_t> ids = t.encode(text, false);
    check_ids(t, ids);
    bool added = false;
    for (int32_t id : ids)
      for (const AddedToken& a : t.added_tokens()) added = added || a.id == id;
    if (!added && t.decode(ids, false) != text) __builtin_trap();  // byte-level BPE is lossless
  });
  std::vector<int32_t> raw(rest.size() / 4);
  if (!raw.empty()) std::memcpy(raw.data(), rest.data(), raw.size() * 4);
  fuzz::accepts([&] {
    size_t unknown = 0;
    t.decode(raw, true, &unknown);
    t.decode(raw, false);
  });
  return 0;
}
