// libFuzzer target: quantised checkpoint loading (model/model.cpp with format/quant): the input is
// a safetensors HEADER (JSON) for models/tiny-fp4's config.json (FP8 block weights, packed FP4
// experts, e8m0 scales). The target writes it as model.safetensors with a fixed pseudo-random
// payload as long as the header's largest data_offsets end (at most 8 MiB), loads the folder, and
// decodes the first and last row of every weight: dtypes, shapes, scale pairing and block
// geometry are what gets mutated. Seed: the fixture's own header (tools/fuzz/make-seeds.sh).
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "engine/memory_plan.h"
#include "fuzz_common.h"
#include "model/model.h"

using namespace memra;

namespace {

constexpr uint64_t kMaxPayload = 8u << 20;

// A model folder with the fixture's config.json; model.safetensors is rewritten for every input.
const std::string& model_dir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    const std::filesystem::path d =
        std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / ("memra-fuzz-quant-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::filesystem::copy_file(std::string(MEMRA_FIXTURES) + "/tiny-fp4/config.json", d / "config.json",
                               std::filesystem::copy_options::overwrite_existing);
    return d.string();
  }();
  return dir;
}

const std::vector<uint8_t>& payload_pattern() {
  static const std::vector<uint8_t> p = [] {
    std::vector<uint8_t> v(kMaxPayload);
    uint32_t x = 0x9e3779b9u;  // xorshift: every byte value, FP8/e8m0 NaN codes included
    for (auto& b : v) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      b = static_cast<uint8_t>(x);
    }
    return v;
  }();
  return p;
}

// The largest data_offsets end the header names (0 when it does not parse; load then says why).
uint64_t data_end(std::string_view header) {
  uint64_t end = 0;
  fuzz::accepts([&] {
    const nlohmann::json j = parse_json_guarded(header, "header", true);
    if (!j.is_object()) return;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it->is_object() || !it->contains("data_offsets")) continue;
      const nlohmann::json& off = (*it)["data_offsets"];
      if (off.is_array() && off.size() == 2 && off[1].is_number_unsigned())
        end = std::max(end, off[1].get<uint64_t>());
    }
  });
  return end;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view header(reinterpret_cast<const char*>(data), size);
  const uint64_t end = std::min(data_end(header), kMaxPayload);
  const std::string path = model_dir() + "/model.safetensors";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return 0;
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(size) >> (8 * i));
  bool ok = ::write(fd, len, 8) == 8 && ::write(fd, data, size) == static_cast<ssize_t>(size);
  ok = ok && ::write(fd, payload_pattern().data(), end) == static_cast<ssize_t>(end);
  ::close(fd);
  if (!ok) return 0;
  fuzz::accepts([&] {
    const Model model = Model::load(model_dir());
    std::vector<float> row;
    for (const WeightTensor& w : model.tensors()) {
      if (w.role != TensorRole::kFloat || w.view.cols > (1 << 16)) continue;
      row.resize(static_cast<size_t>(w.view.cols));
      if (w.view.rows < 1) continue;
      w.view.decode_row(0, row.data());
      w.view.decode_row(w.view.rows - 1, row.data());
    }
    model_resident_bytes(model, Device::kCpu);
    model.stored_bytes();
  });
  return 0;
}
