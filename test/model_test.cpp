// Model loading: both fixtures load under canonical names with stable hashes and fingerprint; a
// checkpoint that disagrees with its config (missing, extra, mis-shaped, mistyped tensors, tid2eid
// out of range, broken shard index) is an Error naming the tensor or file. Also the hash manifest.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "format/safetensors.h"
#include "loader_test_util.h"
#include "model/hash_manifest.h"
#include "model/model.h"

using namespace loader_test;
using memra::DType;
using memra::Model;

namespace {

struct Item {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

std::vector<Item> read_items(const std::string& path) {
  memra::SafetensorsFile f = memra::SafetensorsFile::open(path);
  std::vector<Item> items;
  for (const auto& t : f.tensors())
    items.push_back({t.name, t.dtype, t.shape, std::string(reinterpret_cast<const char*>(t.data), t.nbytes)});
  return items;
}

std::string serialize(const std::vector<Item>& items) {
  memra::SafetensorsWriter w;
  for (const auto& it : items) w.add(it.name, it.dtype, it.shape, it.bytes.data(), it.bytes.size());
  return w.serialize();
}

// Copies fixture `name` into `dir` with its tensors passed through `mutate`.
void make_variant(const std::string& name, const TempDir& dir, const std::function<void(std::vector<Item>&)>& mutate) {
  std::string src = fixture(name);
  write_bytes(dir.file("config.json"), read_bytes(src + "/config.json"));
  std::vector<Item> items = read_items(src + "/model.safetensors");
  mutate(items);
  write_bytes(dir.file("model.safetensors"), serialize(items));
}

Item& find_item(std::vector<Item>& items, const std::string& name) {
  for (auto& it : items)
    if (it.name == name) return it;
  FAIL("fixture has no tensor " << name);
  throw 0;
}

}  // namespace

TEST_CASE("loader model: tiny-a loads with canonical names, f32, stable fingerprint", "[cpu][loader]") {
  Model m = Model::load(fixture("tiny-a"));
  auto specs = memra::expected_tensors(m.config());
  REQUIRE(m.tensors().size() == specs.size());
  CHECK(m.tensors().size() == 210);
  for (size_t i = 0; i < specs.size(); ++i) {
    CHECK(m.tensors()[i].name == specs[i].name);
    CHECK(m.tensors()[i].shape == specs[i].shape);
  }
  CHECK(m.weight_precision() == "f32");
  CHECK(m.tensor("embed.weight").stored_name == "model.embed_tokens.weight");
  CHECK(m.tensor("head.weight").stored_name == "head.weight");
  CHECK(m.tensor("hc_head_fn").stored_name == "model.hc_head.hc_fn");
  CHECK(m.tensor("layers.1.attn.kv_norm.weight").stored_name == "model.layers.1.attn.norm.weight");
  CHECK(m.tensor("layers.1.attn.wq_b.weight").shape == std::vector<int64_t>{256, 64});
  CHECK(m.tensor("layers.2.attn.compressor.ape").shape == std::vector<int64_t>{16, 64});
  CHECK(m.tensor("embed.weight").file == "model.safetensors");
  CHECK(m.weight("embed.weight").rows == 512);
  CHECK(m.weight("embed.weight").cols == 128);
  const auto& tid = m.tensor("layers.0.ffn.gate.tid2eid");
  CHECK(tid.ids.size() == 512 * 2);
  require_error([&] { m.f32("layers.0.ffn.gate.tid2eid"); }, {"layers.0.ffn.gate.tid2eid", "ids"});
  for (int64_t v : tid.ids) CHECK((v >= 0 && v < 8));
  // Hash of the stored bytes, checked against Python's xxhash for this fixture.
  CHECK(m.hash("layers.0.attn.wq_a.weight").hex() == "a05971474792287357e1bc759712a693");
  require_error([&] { m.tensor("layers.9.nothing"); }, {"layers.9.nothing"});

  Model again = Model::load(fixture("tiny-a"));
  CHECK(again.fingerprint() == m.fingerprint());
  Model b = Model::load(fixture("tiny-b"));
  CHECK(b.fingerprint() != m.fingerprint());
}

TEST_CASE("loader model: tiny-b loads as bf16 with two hash layers", "[cpu][loader]") {
  Model m = Model::load(fixture("tiny-b"));
  CHECK(m.weight_precision() == "bf16");
  CHECK(m.tensors().size() == memra::expected_tensors(m.config()).size());
  CHECK(m.tensor("layers.1.ffn.gate.tid2eid").ids.size() == 600 * 2);
  CHECK(m.tensor("layers.0.attn.compressor.ape").shape == std::vector<int64_t>{8, 32});
  // bf16 widening: the first value equals the top half of its f32 bits.
  memra::SafetensorsFile f = memra::SafetensorsFile::open(fixture("tiny-b") + "/model.safetensors");
  const auto& raw = f.get("model.norm.weight");
  uint32_t bits = static_cast<uint32_t>(raw.data[0] | (raw.data[1] << 8)) << 16;
  float expect;
  std::memcpy(&expect, &bits, 4);
  CHECK(m.f32("norm.weight")[0] == expect);
}

TEST_CASE("loader model: the fingerprint covers every stored byte", "[cpu][loader]") {
  Model a = Model::load(fixture("tiny-a"));
  TempDir dir;
  make_variant("tiny-a", dir, [](std::vector<Item>& items) { find_item(items, "model.norm.weight").bytes[5] ^= 1; });
  Model b = Model::load(dir.path.string());
  CHECK(b.fingerprint() != a.fingerprint());
  CHECK(b.hash("norm.weight") != a.hash("norm.weight"));
  CHECK(b.hash("embed.weight") == a.hash("embed.weight"));
  SECTION("canonical stored names give the same fingerprint as transformers names") {
    TempDir canon;
    make_variant("tiny-a", canon, [](std::vector<Item>& items) {
      for (auto& it : items) {
        if (it.name == "model.embed_tokens.weight") it.name = "embed.weight";
        else if (it.name.rfind("model.hc_head.hc_", 0) == 0) it.name = "hc_head_" + it.name.substr(17);
        else if (it.name.rfind("model.", 0) == 0) it.name = it.name.substr(6);
        auto pos = it.name.find(".attn.norm.weight");
        if (pos != std::string::npos) it.name = it.name.substr(0, pos) + ".attn.kv_norm.weight";
      }
    });
    CHECK(Model::load(canon.path.string()).fingerprint() == a.fingerprint());
  }
}

TEST_CASE("loader model: checkpoints that disagree with config.json are rejected", "[cpu][loader]") {
  TempDir dir;
  const std::string d = dir.path.string();
  SECTION("missing tensor") {
    make_variant("tiny-a", dir, [](std::vector<Item>& items) {
      items.erase(std::find_if(items.begin(), items.end(), [](const Item& i) { return i.name == "model.layers.3.attn.indexer.wq_b.weight"; }));
    });
    require_error([&] { Model::load(d); }, {"layers.3.attn.indexer.wq_b.weight", "missing", "[128, 64]"});
  }
  SECTION("extra tensor") {
    make_variant("tiny-a", dir, [](std::vector<Item>& items) {
      items.push_back({"model.layers.0.attn.indexer.wq_b.weight", DType::kF32, {2}, std::string(8, '\0')});
    });
    require_error([&] { Model::load(d); }, {"model.layers.0.attn.indexer.wq_b.weight", "extra"});
  }
  SECTION("two spellings of one tensor") {
    make_variant("tiny-a", dir, [](std::vector<Item>& items) {
      Item copy = find_item(items, "model.norm.weight");
      copy.name = "norm.weight";
      items.push_back(copy);
    });
    require_error([&] { Model::load(d); }, {"norm.weight", "both"});
  }
  SECTION("mis-shaped tensor") {
    make_variant("tiny-a", dir, [](std::vector<Item>& items) { find_item(items, "model.layers.1.attn.wq_b.weight").shape = {128, 128}; });
    require_error([&] { Model::load(d); }, {"tensor layers.1.attn.wq_b.weight has shape [128, 128], config predicts [256, 64]"});
  }
  SECTION("wrong dtype for a float tensor") {
    make_variant("tiny-a", dir, [](std::vector<Item>& items) { find_item(items, "model.layers.2.ffn_norm.weight").dtype = DType::kI32; });
    require_error([&] { Model::load(d); }, {"layers.2.ffn_norm.weight", "I32"});
  }
  SECTION("wrong dtype for tid2eid") {
    make_variant("tiny-a", dir, [](std::vector<Item>& items) {
      Item& t = find_item(items, "model.layers.0.ffn.gate.tid2eid");
      t.dtype = DType::kF64;  // same byte size as I64
    });
    require_error([&] { Model::load(d); }, {"layers.0.ffn.gate.tid2eid", "F64", "I64"});
  }
  SECTION("tid2eid stored as I32 is accepted") {
    make_variant("tiny-a", dir, [](std::vector<Item>& items) {
      Item& t = find_item(items, "model.layers.0.ffn.gate.tid2eid");
      std::string narrow;
      for (size_t i = 0; i < t.bytes.size(); i += 8) narrow += t.bytes.substr(i, 4);  // little-endian low half
      t.dtype = DType::kI32;
      t.bytes = narrow;
    });
    Model m = Model::load(d);
    CHECK(m.tensor("layers.0.ffn.gate.tid2eid").ids == Model::load(fixture("tiny-a")).tensor("layers.0.ffn.gate.tid2eid").ids);
  }
  SECTION("tid2eid out of range") {
    for (int64_t bad : {int64_t{8}, int64_t{-1}}) {
      make_variant("tiny-a", dir, [bad](std::vector<Item>& items) {
        std::memcpy(&find_item(items, "model.layers.0.ffn.gate.tid2eid").bytes[8 * 7], &bad, 8);  // row 3, col 1
      });
      require_error([&] { Model::load(d); }, {"layers.0.ffn.gate.tid2eid", std::to_string(bad), "[3, 1]", "[0, 8)"});
    }
  }
  SECTION("no safetensors at all") {
    write_bytes(dir.file("config.json"), read_bytes(fixture("tiny-a") + "/config.json"));
    require_error([&] { Model::load(d); }, {"no model.safetensors"});
  }
}

TEST_CASE("loader model: sharded checkpoints through model.safetensors.index.json", "[cpu][loader]") {
  const std::string src = fixture("tiny-b");
  std::vector<Item> items = read_items(src + "/model.safetensors");
  TempDir dir;
  write_bytes(dir.file("config.json"), read_bytes(src + "/config.json"));
  // Shard 1: embed + the first half of the rest; shard 2: the rest.
  std::vector<Item> s1(items.begin(), items.begin() + items.size() / 2), s2(items.begin() + items.size() / 2, items.end());
  write_bytes(dir.file("model-00001-of-00002.safetensors"), serialize(s1));
  write_bytes(dir.file("model-00002-of-00002.safetensors"), serialize(s2));
  nlohmann::json map = nlohmann::json::object();
  for (const auto& it : s1) map[it.name] = "model-00001-of-00002.safetensors";
  for (const auto& it : s2) map[it.name] = "model-00002-of-00002.safetensors";
  auto write_index = [&](const nlohmann::json& m) {
    write_bytes(dir.file("model.safetensors.index.json"), nlohmann::json({{"metadata", {}}, {"weight_map", m}}).dump());
  };
  write_index(map);
  const std::string d = dir.path.string();

  Model sharded = Model::load(d);
  CHECK(sharded.fingerprint() == Model::load(src).fingerprint());
  bool head_in_first = std::any_of(s1.begin(), s1.end(), [](const Item& i) { return i.name == "head.weight"; });
  CHECK(sharded.tensor("head.weight").file ==
        (head_in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors"));

  SECTION("index naming a missing file") {
    nlohmann::json m = map;
    m["head.weight"] = "model-00003-of-00002.safetensors";
    write_index(m);
    require_error([&] { Model::load(d); }, {"model-00003-of-00002.safetensors", "does not exist"});
  }
  SECTION("index mapping a tensor to a shard that does not hold it") {
    nlohmann::json m = map;
    m["head.weight"] = head_in_first ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
    write_index(m);
    require_error([&] { Model::load(d); }, {"head.weight"});
  }
  SECTION("shard holding a tensor the index does not list") {
    nlohmann::json m = map;
    m.erase("head.weight");
    write_index(m);
    require_error([&] { Model::load(d); }, {"head.weight", "does not map"});
  }
  SECTION("index escaping the model folder") {
    nlohmann::json m = map;
    m["head.weight"] = "../model-00001-of-00002.safetensors";
    write_index(m);
    require_error([&] { Model::load(d); }, {"not a plain file name"});
  }
  SECTION("index without weight_map") {
    write_bytes(dir.file("model.safetensors.index.json"), "{\"metadata\": {}}");
    require_error([&] { Model::load(d); }, {"weight_map"});
  }
}

TEST_CASE("loader model: hash manifest write, parse and check", "[cpu][loader]") {
  Model m = Model::load(fixture("tiny-a"));
  const std::string text = memra::manifest_text(m);
  auto entries = memra::parse_manifest(text, "manifest");
  REQUIRE(entries.size() == m.tensors().size() + 1);
  CHECK(entries.back().name == "model");
  CHECK(entries.back().hash == m.fingerprint());
  CHECK(text.rfind("xxh3-128  " + m.hash(0).hex() + "  embed.weight\n", 0) == 0);

  auto ok = memra::check_manifest(m, entries);
  CHECK(ok.passed());
  CHECK(ok.ok == entries.size());

  SECTION("a changed hash is a MISMATCH naming the tensor") {
    auto e = entries;
    e[3].hash.low ^= 1;
    auto c = memra::check_manifest(m, e);
    CHECK_FALSE(c.passed());
    CHECK(c.mismatch == 1);
    bool named = false;
    for (const auto& it : c.items) named = named || (it.status == "MISMATCH" && it.name == e[3].name);
    CHECK(named);
    CHECK(c.to_json()["mismatch"] == 1);
  }
  SECTION("an entry the model lacks is MISSING, a tensor the manifest lacks is UNLISTED") {
    auto e = entries;
    e.erase(e.begin());
    e.push_back({memra::Hash128{1, 2}, "layers.9.attn.wq_a.weight", 999});
    auto c = memra::check_manifest(m, e);
    CHECK_FALSE(c.passed());
    CHECK(c.missing == 1);
    CHECK(c.unlisted == 1);
    CHECK(c.mismatch == 0);
    auto j = c.to_json();
    CHECK(j["passed"] == false);
    std::set<std::string> statuses;
    for (const auto& it : j["items"]) statuses.insert(it["status"].get<std::string>());
    CHECK(statuses == std::set<std::string>{"OK", "MISSING", "UNLISTED"});
  }
  SECTION("malformed manifests are errors naming the line") {
    require_error([&] { memra::parse_manifest("xxh3-128  abc  embed.weight\n", "m"); }, {"m line 1", "hash"});
    require_error([&] { memra::parse_manifest("md5  " + std::string(32, 'a') + "  x\n", "m"); }, {"line 1", "md5"});
    require_error([&] { memra::parse_manifest("# comment\n\nxxh3-128 " + std::string(32, 'a') + "\n", "m"); }, {"line 3", "fields"});
    std::string dup = "xxh3-128  " + std::string(32, 'a') + "  x\n";
    require_error([&] { memra::parse_manifest(dup + dup, "m"); }, {"line 2", "second time"});
    require_error([&] { memra::parse_manifest("", "m"); }, {"no hash lines"});
    require_error([&] { memra::parse_manifest("xxh3-128  " + std::string(32, 'a') + "  \xff\n", "m"); }, {"UTF-8"});
    CHECK(memra::parse_manifest("# c\r\nxxh3-128\t" + std::string(32, 'A') + "  x\r\n", "m").size() == 1);
  }
}

#ifdef MEMRA_BINARY
#include <sys/wait.h>

namespace {
int run_memra(const std::string& args, const std::string& out_path) {
  std::string cmd = std::string("'") + MEMRA_BINARY + "' " + args + " > '" + out_path + "' 2>&1";
  int st = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(st));
  return WEXITSTATUS(st);
}
}  // namespace

TEST_CASE("loader cli: memra load summary, --json, manifest write and check exit codes", "[cpu][loader]") {
  TempDir dir;
  const std::string a = fixture("tiny-a"), out = dir.file("out.txt"), man = dir.file("a.manifest");
  REQUIRE(run_memra("load '" + a + "'", out) == 0);
  Model m = Model::load(a);
  CHECK(read_bytes(out).find(m.fingerprint().hex()) != std::string::npos);

  REQUIRE(run_memra("load '" + a + "' --json", out) == 0);
  nlohmann::json j = nlohmann::json::parse(read_bytes(out));
  CHECK(j["fingerprint"] == m.fingerprint().hex());
  CHECK(j["weight_precision"] == "f32");
  CHECK(j["geometry"] == m.config().geometry_json());
  CHECK(j["tensors"].size() == m.tensors().size());
  CHECK(j["tensors"][0]["stored_name"] == "model.embed_tokens.weight");
  CHECK(j["model_dir"] == a);

  REQUIRE(run_memra("-q load '" + a + "' --write-manifest '" + man + "'", out) == 0);
  CHECK(read_bytes(man) == memra::manifest_text(m));
  CHECK(run_memra("load '" + a + "' --check '" + man + "'", out) == 0);
  CHECK(read_bytes(out).find("check PASS") != std::string::npos);

  std::string text = read_bytes(man);
  std::string flipped = text;
  flipped[10] = flipped[10] == '0' ? '1' : '0';  // first hash digit of embed.weight
  write_bytes(man, flipped);
  CHECK(run_memra("load '" + a + "' --check '" + man + "'", out) == 1);
  CHECK(read_bytes(out).find("MISMATCH  embed.weight") != std::string::npos);

  write_bytes(man, text + "xxh3-128  " + std::string(32, '0') + "  layers.7.attn.wq_a.weight\n");
  CHECK(run_memra("load '" + a + "' --check '" + man + "' --json", out) == 1);
  nlohmann::json c = nlohmann::json::parse(read_bytes(out))["check"];
  CHECK(c["missing"] == 1);
  CHECK(c["passed"] == false);

  write_bytes(man, "xxh3-128  nothex  embed.weight\n");
  CHECK(run_memra("load '" + a + "' --check '" + man + "'", out) == 2);
  CHECK(read_bytes(out).find("memra: error:") != std::string::npos);
  CHECK(run_memra("load '" + dir.path.string() + "'", out) == 2);
}
#endif
