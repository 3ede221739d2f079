// State files: a valid safetensors file whose metadata carries format, version, fingerprint,
// position, capacity, precision class and hashes; written atomically; verified before use. Every
// header bit flip, sampled payload bit flips and every truncation are refused; newer minors are
// read, newer majors refused; a seeded mutation fuzz loop never crashes and never accepts a mutant.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "core/file_io.h"
#include "format/safetensors.h"
#include "state/class_hash.h"
#include "state/state_file.h"
#include "state_test_util.h"

using namespace memra;

namespace {

const StateOrigin kOrigin{"0123456789abcdef0123456789abcdef", "cpu-f32-exact"};

InputBytes bytes_of(const std::string& data) {
  // InputBytes reads files; a temp file per call keeps the parser on its real input path.
  static int counter = 0;
  const std::string path = std::filesystem::temp_directory_path() /
                           ("memra_state_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++ % 4));
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
  }
  InputBytes in = InputBytes::open(path);
  std::filesystem::remove(path);  // the mapping stays valid
  return in;
}

// Result of a parse attempt: 0 accepted, else the Error's exit code.
int try_parse(const std::string& data, StateCheck check = StateCheck::kFull) {
  try {
    StateFile::parse(bytes_of(data), check);
    return 0;
  } catch (const Error& e) {
    return e.exit_code();
  }
}

HostSnapshot sample_snapshot(int64_t pos = 22, uint64_t seed = 5) {
  const ModelConfig cfg = memra::test::synthetic_config();
  return memra::test::snapshot_of(cfg, memra::test::random_state(cfg, pos, 64, seed));
}

// Rewrites a state file with changed metadata / extra tensors, re-deriving the hashes the way a
// writer of that version would (SafetensorsWriter's dump is the canonical header form).
std::string rewrite(const std::string& data, const std::map<std::string, std::string>& set_metadata,
                    const std::vector<std::tuple<std::string, DType, std::vector<int64_t>, std::string>>& extra = {},
                    bool rehash = true) {
  SafetensorsFile f = SafetensorsFile::parse(bytes_of(data));
  SafetensorsWriter w;
  std::map<std::string, std::string> md = f.metadata();
  std::vector<Hash128> hashes;
  for (const auto& t : f.tensors()) {
    w.add(t.name, t.dtype, t.shape, t.data, t.nbytes);
    hashes.push_back(class_hash({t.name, dtype_name(t.dtype), &t.shape, t.data, t.nbytes}));
  }
  for (const auto& [name, dtype, shape, bytes] : extra) {
    w.add(name, dtype, shape, bytes.data(), bytes.size());
    hashes.push_back(class_hash({name, dtype_name(dtype), &shape, bytes.data(), bytes.size()}));
    md["hash." + name] = hashes.back().hex();
  }
  for (const auto& [k, v] : set_metadata) md[k] = v;
  if (rehash) {
    md["hash.state"] = state_hash(hashes).hex();
    md[kMetadataHashKey] = metadata_hash(md).hex();
  }
  for (const auto& [k, v] : md) w.set_metadata(k, v);
  return w.serialize();
}

}  // namespace

TEST_CASE("state file round trip", "[cpu][state]") {
  const HostSnapshot snap = sample_snapshot();
  const std::string path = std::filesystem::temp_directory_path() / ("memra_rt_" + std::to_string(::getpid()) + ".safetensors");
  const StateWriteResult written = write_state_file(path, snap, kOrigin);
  StateFile f = StateFile::open(path);
  std::filesystem::remove(path);

  SECTION("metadata and classes") {
    CHECK(f.payload_verified());
    CHECK(f.version() == "1.0");
    CHECK(f.position() == 22);
    CHECK(f.capacity() == 64);
    CHECK(f.model_fingerprint() == kOrigin.model_fingerprint);
    CHECK(f.precision_class() == "cpu-f32-exact");
    CHECK(f.metadata().at("format") == "memra.state");
    CHECK(f.state_hash() == written.state_hash);
    CHECK(f.file_bytes() == written.file_bytes);
    REQUIRE(f.classes().size() == snap.classes.size());
    for (size_t i = 0; i < snap.classes.size(); ++i) {
      CHECK(f.classes()[i].name == snap.classes[i].name);
      CHECK(f.classes()[i].shape == snap.classes[i].shape);
      CHECK(f.classes()[i].hash == written.class_hashes[i]);
      CHECK(f.metadata().at("hash." + snap.classes[i].name) == written.class_hashes[i].hex());
    }
  }
  SECTION("state hash is the hash of the class digests in order") {
    std::string digests;
    for (const auto& h : written.class_hashes) {
      for (int i = 7; i >= 0; --i) digests.push_back(static_cast<char>(h.high >> (8 * i)));
      for (int i = 7; i >= 0; --i) digests.push_back(static_cast<char>(h.low >> (8 * i)));
    }
    CHECK(written.state_hash == xxh3_128(digests.data(), digests.size()));
  }
  SECTION("host snapshot from the file equals the original, bit for bit") {
    HostSnapshot back = f.to_host();
    CHECK(back.pos == snap.pos);
    CHECK(classes_bit_equal(back.classes, snap.classes));
  }
  SECTION("bytes are deterministic and a plain safetensors file") {
    const std::string a = serialize_state_file(snap, kOrigin), b = serialize_state_file(snap, kOrigin);
    CHECK(a == b);
    CHECK(a.size() == written.file_bytes);
    SafetensorsFile st = SafetensorsFile::parse(bytes_of(a));
    REQUIRE(st.tensors().size() == snap.classes.size());
    CHECK(st.get("last_logits").dtype == DType::kF32);
    CHECK(tensor_to_f32(st.get("layers.1.csa.cmp")) == snap.classes[2].f32_copy());
    CHECK((8 + st.header_size()) % 8 == 0);
  }
  SECTION("hashing threads do not change the hashes") {
    std::vector<ClassBytes> items;
    for (const auto& c : snap.classes) items.push_back({c.name, "F32", &c.shape, c.bytes.data(), c.bytes.size()});
    CHECK(class_hashes(items, 1) == class_hashes(items, 7));
  }
  SECTION("position 0 state (no classes) round trips") {
    const ModelConfig cfg = memra::test::synthetic_config();
    const std::string z = serialize_state_file(memra::test::snapshot_of(cfg, make_decode_state(cfg, 3)), kOrigin);
    StateFile zf = StateFile::parse(bytes_of(z));
    CHECK(zf.classes().empty());
    CHECK(zf.to_host().classes.empty());
  }
}

TEST_CASE("state file writer refuses what it cannot represent", "[cpu][state]") {
  HostSnapshot snap = sample_snapshot();
  CHECK_THROWS_AS(serialize_state_file(snap, {"not-hex", "cpu-f32-exact"}), Error);
  CHECK_THROWS_AS(serialize_state_file(snap, {kOrigin.model_fingerprint, ""}), Error);
  StateWriteOptions reserved;
  reserved.extra_metadata["position"] = "3";
  CHECK_THROWS_AS(serialize_state_file(snap, kOrigin, reserved), Error);
  HostSnapshot bad = snap;
  bad.classes[0].name = "layers 0";
  CHECK_THROWS_AS(serialize_state_file(bad, kOrigin), Error);
  bad = snap;
  bad.classes[1].bytes.pop_back();
  CHECK_THROWS_AS(serialize_state_file(bad, kOrigin), Error);
}

TEST_CASE("state file write is atomic", "[cpu][state]") {
  const std::string dir = std::filesystem::temp_directory_path() / ("memra_atomic_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/s.safetensors";
  write_state_file(path, sample_snapshot(22, 1), kOrigin);
  const std::string before = read_text_file(path);
  // A failing write (a class whose values disagree with its shape) leaves the old file and no temp.
  HostSnapshot bad = sample_snapshot(22, 2);
  bad.classes.back().bytes.pop_back();
  CHECK_THROWS_AS(write_state_file(path, bad, kOrigin), Error);
  CHECK(read_text_file(path) == before);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  CHECK(entries == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("every header bit flip is detected", "[cpu][state][fault]") {
  const std::string good = serialize_state_file(sample_snapshot(13, 9), kOrigin);
  REQUIRE(try_parse(good) == 0);
  SafetensorsFile st = SafetensorsFile::parse(bytes_of(good));
  const size_t header_end = 8 + st.header_size();
  size_t refused = 0, flips = 0;
  for (size_t i = 0; i < header_end; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      ++flips;
      const int code = try_parse(bad);
      if (code != 0) ++refused;
      else FAIL_CHECK("flip of bit " << bit << " of header byte " << i << " was accepted");
    }
  }
  CHECK(refused == flips);
  CHECK(flips == header_end * 8);
}

TEST_CASE("sampled payload bit flips are detected and name the class", "[cpu][state][fault]") {
  const std::string good = serialize_state_file(sample_snapshot(37, 4), kOrigin);
  SafetensorsFile st = SafetensorsFile::parse(bytes_of(good));
  const size_t data_start = 8 + st.header_size();
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<size_t> pick(data_start, good.size() - 1);
  for (int n = 0; n < 600; ++n) {
    const size_t i = n < 8 ? (n < 4 ? data_start + n : good.size() - 1 - (n - 4)) : pick(rng);
    const int bit = static_cast<int>(rng() % 8);
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
    // The header-only check cannot see it; the full check must, naming the class holding byte i.
    CHECK(try_parse(bad, StateCheck::kHeader) == 0);
    std::string owner;
    for (const auto& t : st.tensors())
      if (i - data_start >= t.data_begin && i - data_start < t.data_begin + t.nbytes) owner = t.name;
    try {
      StateFile::parse(bytes_of(bad));
      FAIL_CHECK("payload flip at byte " << i << " was accepted");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitNegative);
      CHECK_THAT(e.what(), Catch::Contains("class " + owner + " hash mismatch"));
    }
  }
}

TEST_CASE("every truncation is refused", "[cpu][state][fault]") {
  const std::string good = serialize_state_file(sample_snapshot(9, 3), kOrigin);
  for (size_t len = 0; len < good.size(); ++len) {
    const int code = try_parse(good.substr(0, len), StateCheck::kHeader);
    if (code == 0) FAIL_CHECK("truncation to " << len << " bytes was accepted");
  }
  SECTION("and so is a trailing byte") { CHECK(try_parse(good + std::string(1, '\0')) == kExitNegative); }
}

TEST_CASE("format versions: a newer minor is read and another major refused", "[cpu][state]") {
  const std::string good = serialize_state_file(sample_snapshot(22, 6), kOrigin);
  SECTION("the rewrite helper reproduces the file exactly") { CHECK(rewrite(good, {}) == good); }
  SECTION("a newer minor with unknown keys and a drafter class is read; the drafter class is verified, and a model without a drafter refuses it by name") {
    const std::string ring(4 * 6, '\x01');
    const std::string newer = rewrite(good, {{"format_version", "1.7"}, {"drafter.kind", "dspark"}},
                                      {{"drafter.ring", DType::kI32, {2, 3}, ring}});
    StateFile f = StateFile::parse(bytes_of(newer));
    CHECK(f.minor_version() == 7);
    CHECK(f.find("drafter.ring") != nullptr);
    CHECK(f.to_host().classes.size() == f.classes().size());
    const ModelConfig cfg = memra::test::synthetic_config();
    try {
      restore_state_file(f, memra::test::HostStateBackend(cfg), kOrigin.model_fingerprint, 64);
      FAIL("a drafter class was accepted by a model without a drafter");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitNegative);
      CHECK_THAT(e.what(), Catch::Contains("drafter.ring"));
    }
    std::string flipped = newer;
    flipped[flipped.size() - 3] ^= 0x10;  // inside drafter.ring
    CHECK_THROWS_WITH(StateFile::parse(bytes_of(flipped)), Catch::Contains("drafter.ring"));
  }
  SECTION("a higher major is refused with exit 2 and a clear message") {
    try {
      StateFile::parse(bytes_of(rewrite(good, {{"format_version", "2.0"}})));
      FAIL("a 2.0 state was accepted");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitError);
      CHECK_THAT(e.what(), Catch::Contains("format version 2.0") && Catch::Contains("reads 1.x"));
      CHECK_THAT(e.hint(), Catch::Contains("newer memra"));
    }
  }
  SECTION("another format name is refused") {
    CHECK(try_parse(rewrite(good, {{"format", "llama.session"}})) == kExitNegative);
  }
  SECTION("a metadata change without re-hashing is refused") {
    CHECK(try_parse(rewrite(good, {{"position", "21"}}, {}, false)) == kExitNegative);
    CHECK(try_parse(rewrite(good, {{"capacity", "99"}}, {}, false)) == kExitNegative);
  }
  SECTION("a re-hashed metadata lie about the position is still caught on restore") {
    const std::string lie = rewrite(good, {{"position", "21"}});
    StateFile f = StateFile::parse(bytes_of(lie));
    const ModelConfig cfg = memra::test::synthetic_config();
    CHECK_THROWS_AS(restore_state_file(f, memra::test::HostStateBackend(cfg), kOrigin.model_fingerprint, 64), Error);
  }
  SECTION("a hash key for a class that is not there is refused") {
    CHECK(try_parse(rewrite(good, {{"hash.layers.9.window", std::string(32, 'a')}})) == kExitNegative);
  }
}

TEST_CASE("seeded mutation fuzz: never crash and always reject or verify the original", "[cpu][state][fuzz]") {
  const std::string good = serialize_state_file(sample_snapshot(19, 11), kOrigin);
  const size_t header_end = 8 + SafetensorsFile::parse(bytes_of(good)).header_size();
  // MEMRA_STATE_FUZZ_RUNS / MEMRA_STATE_FUZZ_SEED widen the run (bench/results/state-fuzz-*.txt).
  const char* env_runs = std::getenv("MEMRA_STATE_FUZZ_RUNS");
  const char* env_seed = std::getenv("MEMRA_STATE_FUZZ_SEED");
  const int runs = env_runs ? std::max(1, std::atoi(env_runs)) : 6000;
  const uint64_t seed = env_seed ? std::strtoull(env_seed, nullptr, 10) : 20261129;
  std::mt19937_64 rng(seed);
  auto any = [&](size_t n) { return n ? static_cast<size_t>(rng() % n) : size_t{0}; };
  int accepted = 0, rejected = 0;
  for (int r = 0; r < runs; ++r) {
    std::string m = good;
    const int ops = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < ops; ++k) {
      // Bias towards the header, where the parser does its work.
      const size_t at = (rng() % 4 != 0) ? any(std::min(m.size(), header_end)) : any(m.size());
      switch (rng() % 9) {
        case 0: if (!m.empty()) m[at % m.size()] ^= static_cast<char>(1 << (rng() % 8)); break;
        case 1: if (!m.empty()) m[at % m.size()] = static_cast<char>(rng()); break;
        case 2: m.insert(std::min(at, m.size()), 1, static_cast<char>(rng())); break;
        case 3: if (!m.empty()) m.erase(at % m.size(), 1 + any(16)); break;
        case 4: m.resize(any(m.size() + 1)); break;
        case 5: {  // header length field
          uint64_t v = rng() % 3 == 0 ? rng() : (header_end - 8 + any(64) - 32);
          if (m.size() >= 8) for (int i = 0; i < 8; ++i) m[i] = static_cast<char>(v >> (8 * i));
          break;
        }
        case 6: {  // duplicate a slice
          if (m.empty()) break;
          const size_t b = at % m.size(), n = 1 + any(std::min<size_t>(64, m.size() - b));
          m.insert(b, m.substr(b, n));
          break;
        }
        case 7: {  // JSON-significant characters
          const char pick[] = {'"', '{', '}', '[', ']', ',', ':', '\\', '0', '9', '-', 'e', ' ', '\0', '\xff'};
          if (!m.empty()) m[at % m.size()] = pick[any(sizeof pick)];
          break;
        }
        default: if (!m.empty()) std::swap(m[at % m.size()], m[any(m.size())]); break;
      }
    }
    const int code = try_parse(m);
    if (code == 0) {
      ++accepted;
      CHECK(m == good);  // only a mutation that changed nothing may verify
    } else {
      ++rejected;
    }
  }
  CHECK(accepted + rejected == runs);
  WARN("state parser fuzz (seed " << seed << "): " << runs << " mutants, " << rejected << " rejected, " << accepted << " identical to the original");
}
