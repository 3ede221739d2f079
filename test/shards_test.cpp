// A V4-Flash-shaped folder at small size: models/tiny-fp4 spread over 40 shards (round robin, so
// FP4/FP8 weights and their scales sit in different shards) with model.safetensors.index.json.
// It loads (headers only) as the same model, every shard is read in parallel, and `memra load`
// reports a missing, truncated, swapped or altered shard by name.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>

#include "format/safetensors.h"
#include "loader_test_util.h"
#include "model/hash_manifest.h"
#include "model/model.h"

using namespace loader_test;
using namespace memra;

namespace {

const std::string kSrc = std::string(MEMRA_FIXTURES) + "/tiny-fp4";
constexpr int kShards = 40;

std::string shard_name(int i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", i + 1, kShards);
  return buf;
}

// Writes the 40-shard copy of tiny-fp4 into `dir`; returns tensor name → shard index.
std::map<std::string, int> write_shards(const TempDir& dir) {
  SafetensorsFile src = SafetensorsFile::open(kSrc + "/model.safetensors");
  std::vector<SafetensorsWriter> writers(kShards);
  std::map<std::string, int> where;
  nlohmann::json map = nlohmann::json::object();
  int i = 0;
  for (const auto& t : src.tensors()) {
    const int s = i++ % kShards;
    writers[s].add(t.name, t.dtype, t.shape, t.data, t.nbytes);
    where[t.name] = s;
    map[t.name] = shard_name(s);
  }
  for (int s = 0; s < kShards; ++s) writers[s].write(dir.file(shard_name(s)));
  write_bytes(dir.file("config.json"), read_bytes(kSrc + "/config.json"));
  write_bytes(dir.file("model.safetensors.index.json"),
              nlohmann::json({{"metadata", {{"total_size", 0}}}, {"weight_map", map}}).dump(1));
  return where;
}

int run_memra(const std::string& args, const std::string& out_path) {
  std::string cmd = std::string("'") + MEMRA_BINARY + "' " + args + " > '" + out_path + "' 2>&1";
  int st = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(st));
  return WEXITSTATUS(st);
}

}  // namespace

TEST_CASE("shards: a 40-shard folder loads lazily as the same model and is read in parallel", "[cpu][loader][shards]") {
  TempDir dir;
  write_shards(dir);
  const std::string d = dir.path.string();
  size_t opened = 0, total = 0;
  LoadProgress progress;
  progress.on_shard = [&](size_t done, size_t all) {
    CHECK(done == opened + 1);
    opened = done;
    total = all;
  };
  Model m = Model::load(d, progress);
  CHECK(opened == kShards);
  CHECK(total == kShards);
  CHECK(m.files().size() == kShards);
  // Weights and their scales are in different shards, and still pair up.
  const WeightTensor& w = m.tensor("layers.1.ffn.experts.2.w3.weight");
  CHECK(w.view.format == WeightFormat::kFp4Block);
  CHECK(w.file != w.scale_file);

  uint64_t last = 0, calls = 0;
  HashOptions ho;
  ho.threads = 8;
  ho.on_bytes = [&](uint64_t done, uint64_t all) {
    CHECK(done >= last);
    CHECK(all == m.stored_bytes());
    last = done;
    ++calls;
  };
  HashStats st = m.hash_all(ho);
  CHECK(st.threads == 8);
  CHECK(st.bytes == m.stored_bytes());
  CHECK(last == m.stored_bytes());
  CHECK(calls >= 1);
  CHECK(m.hash_all(ho).bytes == 0);  // once

  Model one = Model::load(kSrc);
  CHECK(m.fingerprint() == one.fingerprint());
  for (size_t i = 0; i < one.tensors().size(); ++i) CHECK(m.hash(i) == one.hash(i));
  CHECK(m.unused_tensors().size() == one.unused_tensors().size());
}

TEST_CASE("shards: memra load names a missing, truncated, swapped or altered shard", "[cpu][loader][shards]") {
  TempDir dir;
  std::map<std::string, int> where = write_shards(dir);
  const std::string d = dir.path.string(), out = dir.file("out.txt"),
                    man = dir.path.parent_path().string() + "/" + dir.path.filename().string() + ".manifest";
  REQUIRE(run_memra("load '" + d + "' --write-manifest '" + man + "' --threads 4", out) == 0);
  const std::string ok_text = read_bytes(out);
  CHECK(ok_text.find("40 shards") != std::string::npos);
  CHECK(ok_text.find("GB/s, 4 threads") != std::string::npos);
  REQUIRE(run_memra("load '" + d + "' --check '" + man + "'", out) == 0);
  CHECK(read_bytes(out).find("check PASS") != std::string::npos);

  SECTION("altered: one byte of a tensor in shard 17 flips") {
    const std::string victim = shard_name(16);
    std::string bytes = read_bytes(dir.file(victim));
    bytes[bytes.size() - 3] ^= 0x40;  // inside the last tensor's data
    write_bytes(dir.file(victim), bytes);
    CHECK(run_memra("load '" + d + "' --check '" + man + "'", out) == 1);
    const std::string text = read_bytes(out);
    INFO(text);
    CHECK(text.find("ALTERED   " + victim) != std::string::npos);
    CHECK(text.find("check FAIL") != std::string::npos);
    CHECK(run_memra("load '" + d + "' --check '" + man + "' --json", out) == 1);
    nlohmann::json j = nlohmann::json::parse(read_bytes(out));
    CHECK(j["check"]["altered_files"].size() == 1);
    CHECK(j["check"]["altered_files"].contains(victim));
  }
  SECTION("missing: shard 23 is gone") {
    std::filesystem::remove(dir.file(shard_name(22)));
    CHECK(run_memra("load '" + d + "'", out) == 2);
    const std::string text = read_bytes(out);
    CHECK(text.find("memra: error:") != std::string::npos);
    CHECK(text.find(shard_name(22)) != std::string::npos);
    CHECK(text.find("does not exist") != std::string::npos);
  }
  SECTION("truncated: shard 5 lost its tail") {
    std::string bytes = read_bytes(dir.file(shard_name(4)));
    write_bytes(dir.file(shard_name(4)), bytes.substr(0, bytes.size() - 100));
    CHECK(run_memra("load '" + d + "'", out) == 2);
    CHECK(read_bytes(out).find(shard_name(4)) != std::string::npos);
  }
  SECTION("swapped: shard 9 holds shard 10's tensors") {
    write_bytes(dir.file(shard_name(8)), read_bytes(dir.file(shard_name(9))));
    CHECK(run_memra("load '" + d + "'", out) == 2);
    CHECK(read_bytes(out).find(shard_name(8)) != std::string::npos);
  }
  std::filesystem::remove(man);
}
