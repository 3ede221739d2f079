// The streamed snapshot path (StateComponent::export_stream / import_stream, StreamHasher,
// stream_snapshot, the StreamedSnapshot state-file writer, the streamed verified restore) against
// the class-by-class path: the same class hashes (the file format's hash is unchanged), the same
// file bytes, the same restored state. Run on the CPU backends' default stream implementations; the
// CUDA trunk's overrides (and its class hashes made on the device) are checked by memra_cuda_test
// (ops group hash, the backend suite, bandwidth) on a GPU and on memra-emu. (Planted: StreamHasher
// without the class prefix, and a state-file writer that took the hashes in reverse order: both
// failed here; reverted.)
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "engine/host_state_backend.h"
#include "state/class_hash.h"
#include "state/snapshot.h"
#include "state/state_file.h"
#include "state/stream_hash.h"
#include "state_test_util.h"

using namespace memra;
using memra::test::synthetic_config;

namespace {

const StateOrigin kOrigin{"00112233445566778899aabbccddeeff", "cpu-f32-exact"};

std::vector<Hash128> hashes_of(const std::vector<CacheClass>& classes) {
  std::vector<ClassBytes> items;
  for (const auto& c : classes) items.push_back({c.name, dtype_name(c.dtype), &c.shape, c.bytes.data(), c.bytes.size()});
  return class_hashes(items, 1);
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("streamed snapshot: class hashes, file bytes and restore equal the class path", "[cpu][state]") {
  const ModelConfig cfg = synthetic_config();
  const HostStateBackend backend(cfg);
  auto state = memra::test::random_backend_state(backend, 41, 60, 3);
  const std::vector<CacheClass> classes = state->export_classes();

  const StreamedSnapshot snap = stream_snapshot(backend, *state, 3);
  REQUIRE(snap.layout.size() == classes.size());
  CHECK(snap.pos == 41);
  CHECK(snap.capacity == 60);
  CHECK(snap.hashes == hashes_of(classes));
  size_t off = 0;
  bool bytes_equal = true;
  for (const auto& c : classes) {
    bytes_equal = bytes_equal && std::memcmp(snap.bytes.data() + off, c.bytes.data(), c.bytes.size()) == 0;
    off += c.bytes.size();
  }
  CHECK(bytes_equal);
  CHECK(off == snap.size());

  const std::string dir = std::filesystem::temp_directory_path() / ("memra_stream_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string a = dir + "/stream.state", b = dir + "/classes.state";
  write_state_file(a, snap, kOrigin);
  write_state_file(b, HostSnapshot{state->position(), state->capacity(), classes}, kOrigin);
  CHECK(read_all(a) == read_all(b));
  CHECK(read_all(a) == serialize_state_file(HostSnapshot{state->position(), state->capacity(), classes}, kOrigin));

  StateFile f = StateFile::open(a);
  auto restored = restore_state_file(f, backend, kOrigin.model_fingerprint, 75);
  CHECK(restored->position() == 41);
  CHECK(restored->capacity() == 75);
  CHECK(classes_bit_equal(restored->export_classes(), classes));
  std::filesystem::remove_all(dir);

  SECTION("restore_stream refuses a layout that is not the state's") {
    std::vector<ClassLayout> layout = snap.layout;
    std::swap(layout[0], layout[1]);
    CHECK_THROWS_AS(restore_stream(backend, snap.pos, 60, layout, snap.bytes.data(), snap.size()), Error);
    CHECK_THROWS_AS(restore_stream(backend, snap.pos, 40, snap.layout, snap.bytes.data(), snap.size()), Error);
  }
}

TEST_CASE("StreamHasher: classes in any order, pieces in order within a class", "[cpu][state]") {
  const ModelConfig cfg = synthetic_config();
  const HostStateBackend backend(cfg);
  auto state = memra::test::random_backend_state(backend, 37, 40, 9);
  const std::vector<CacheClass> classes = state->export_classes();
  std::vector<ClassLayout> layout;
  std::vector<uint8_t> bytes;
  std::vector<size_t> begin;
  for (const auto& c : classes) {
    layout.push_back(c);
    begin.push_back(bytes.size());
    bytes.insert(bytes.end(), c.bytes.begin(), c.bytes.end());
  }
  begin.push_back(bytes.size());
  SECTION("last class first, each in three pieces") {
    StreamHasher h(layout, bytes.data(), 4);
    for (size_t k = classes.size(); k-- > 0;) {
      const size_t n = begin[k + 1] - begin[k], third = n / 3;
      h.land(begin[k], third);
      h.land(begin[k] + third, third);
      h.land(begin[k] + 2 * third, n - 2 * third);
    }
    CHECK(h.finish() == hashes_of(classes));
  }
  SECTION("one range over everything") {
    StreamHasher h(layout, bytes.data(), 2);
    h.land(0, bytes.size());
    CHECK(h.finish() == hashes_of(classes));
  }
  SECTION("classes hashed elsewhere: skipped whether or not they land, the others hashed") {
    std::vector<bool> elsewhere(classes.size(), false);
    for (size_t k = 0; k < classes.size(); k += 2) elsewhere[k] = true;
    const std::vector<Hash128> want = hashes_of(classes);
    StreamHasher h(layout, bytes.data(), 3, elsewhere);
    for (size_t k = 0; k < classes.size(); ++k)  // every odd class, and every fourth even one, lands
      if (!elsewhere[k] || k % 4 == 0) h.land(begin[k], begin[k + 1] - begin[k]);
    const std::vector<Hash128> got = h.finish();
    REQUIRE(got.size() == classes.size());
    for (size_t k = 0; k < classes.size(); ++k) CHECK(got[k] == (elsewhere[k] ? Hash128{} : want[k]));
    StreamHasher all(layout, bytes.data(), 3, std::vector<bool>(classes.size(), true));  // no worker at all
    CHECK(all.finish() == std::vector<Hash128>(classes.size()));
  }
  SECTION("a class's pieces out of order, or a byte missing, is an error") {
    StreamHasher h(layout, bytes.data(), 2);
    const size_t n = begin[1] - begin[0];
    h.land(begin[0] + n / 2, n - n / 2);
    h.land(begin[0], n / 2);
    h.land(begin[1], bytes.size() - begin[1]);
    CHECK_THROWS_AS(h.finish(), Error);
    StreamHasher h2(layout, bytes.data(), 2);
    h2.land(0, bytes.size() - 1);
    CHECK_THROWS_AS(h2.finish(), Error);
  }
}
