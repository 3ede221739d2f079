// Quantised checkpoints through the loader: a copy of the bundled tiny model with its attention and
// shared-expert matrices stored FP8 e4m3 (+ ue8m0 128x128 scales) and its routed experts packed FP4
// (+ 1x32 scales) loads with every weight kept packed, decodes to the values the bytes mean, and
// every corrupted scale, shape or dtype variant is refused with a message naming the tensor. The
// mtp.* block (MTP and DSpark parts) is recognised and listed.
#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <map>
#include <random>

#include "core/hash.h"
#include "format/json_guard.h"
#include "format/quant.h"
#include "format/safetensors.h"
#include "loader_test_util.h"
#include "model/model.h"

using namespace loader_test;
using namespace memra;

namespace {

struct Item {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
using Items = std::vector<Item>;

const std::string kTiny = std::string(MEMRA_FIXTURES) + "/tiny";

bool is_fp8_target(const std::string& n) {
  for (const char* s :
       {".attn.wq_a.", ".attn.wq_b.", ".attn.wkv.", ".attn.wo_a.", ".attn.wo_b.", ".indexer.wq_b.", ".shared_experts."})
    if (n.find(s) != std::string::npos) return true;
  return false;
}
bool is_expert(const std::string& n) { return n.find(".ffn.experts.") != std::string::npos; }

std::string scale_name(const std::string& weight) { return weight.substr(0, weight.size() - 7) + ".scale"; }

// The tiny model with FP8 matrices and FP4 experts (random codes, never NaN; scales 2^-3 .. 2^3).
Items quantised_items() {
  memra::SafetensorsFile f = memra::SafetensorsFile::open(kTiny + "/model.safetensors");
  std::mt19937 rng(11);
  Items items;
  for (const auto& t : f.tensors()) {
    const std::string& n = t.name;
    if ((is_fp8_target(n) || is_expert(n)) && t.shape.size() == 2) {
      const int64_t N = t.shape[0], K = t.shape[1];
      if (is_expert(n)) {
        std::string packed(N * K / 2, '\0');
        for (auto& c : packed) c = static_cast<char>(rng() & 0xFF);
        auto ss = block_scale_shape(N, K, 1, 32);
        std::string scale(ss[0] * ss[1], '\0');
        for (auto& c : scale) c = static_cast<char>(124 + rng() % 7);
        items.push_back({n, DType::kI8, {N, K / 2}, packed});
        items.push_back({scale_name(n), DType::kF8E8M0, ss, scale});
      } else {
        std::string codes(N * K, '\0');
        for (auto& c : codes) {
          uint8_t v = static_cast<uint8_t>(rng() & 0xFF);
          if ((v & 0x7F) == 0x7F) v ^= 1;  // no NaN codes
          c = static_cast<char>(v);
        }
        auto ss = block_scale_shape(N, K, 128, 128);
        std::string scale(ss[0] * ss[1], '\0');
        for (auto& c : scale) c = static_cast<char>(124 + rng() % 7);
        items.push_back({n, DType::kF8E4M3, {N, K}, codes});
        items.push_back({scale_name(n), DType::kF8E8M0, ss, scale});
      }
      continue;
    }
    items.push_back({n, t.dtype, t.shape, std::string(reinterpret_cast<const char*>(t.data), t.nbytes)});
  }
  return items;
}

nlohmann::json quantised_config() {
  nlohmann::json c = read_json_file(kTiny + "/config.json");
  c["quantization_config"] = {{"activation_scheme", "dynamic"},
                              {"fmt", "e4m3"},
                              {"quant_method", "fp8"},
                              {"scale_fmt", "ue8m0"},
                              {"weight_block_size", {128, 128}}};
  c["expert_dtype"] = "fp4";
  return c;
}

void write_model(const TempDir& dir, const Items& items, const nlohmann::json& config) {
  write_bytes(dir.file("config.json"), config.dump(1));
  SafetensorsWriter w;
  for (const auto& it : items) w.add(it.name, it.dtype, it.shape, it.bytes.data(), it.bytes.size());
  w.write(dir.file("model.safetensors"));
}

Item& find_item(Items& items, const std::string& name) {
  for (auto& it : items)
    if (it.name == name) return it;
  FAIL("no item " << name);
  throw 0;
}

void erase_item(Items& items, const std::string& name) {
  for (auto it = items.begin(); it != items.end(); ++it)
    if (it->name == name) {
      items.erase(it);
      return;
    }
  FAIL("no item " << name);
}

const std::string kWq = "model.layers.1.attn.wq_b.weight";         // FP8 [256, 64]: scale [2, 1]
const std::string kW2 = "model.layers.2.ffn.experts.3.w2.weight";  // FP4 [128, 16] stored [128, 8]: scale [128, 1]
const std::string kW1 = "model.layers.2.ffn.experts.3.w1.weight";  // FP4 [16, 128] stored [16, 64]: scale [16, 4]

}  // namespace

TEST_CASE("quant loader: FP8 and FP4 weights load packed and decode to what their bytes mean", "[cpu][loader][quant]") {
  TempDir dir;
  Items items = quantised_items();
  write_model(dir, items, quantised_config());
  Model m = Model::load(dir.path.string());
  CHECK(m.config().quantization.fp8);
  CHECK(m.config().quantization.expert_dtype == "fp4");
  CHECK(m.weight_precision() == "mixed");

  const WeightTensor& wq = m.tensor("layers.1.attn.wq_b.weight");
  CHECK(wq.view.format == WeightFormat::kFp8Block);
  CHECK(wq.shape == std::vector<int64_t>{256, 64});
  CHECK(wq.scale_shape == std::vector<int64_t>{2, 1});
  CHECK(wq.format_label() == "F8_E4M3*E8M0[128x128]");
  const Item& wq_codes = find_item(items, kWq);
  const Item& wq_scale = find_item(items, scale_name(kWq));
  std::vector<float> row(64);
  for (int64_t r : {0, 127, 128, 255}) {
    m.weight("layers.1.attn.wq_b.weight").decode_row(r, row.data());
    for (int64_t k = 0; k < 64; ++k) {
      const float want = e4m3_to_f32(static_cast<uint8_t>(wq_codes.bytes[r * 64 + k])) *
                         e8m0_to_f32(static_cast<uint8_t>(wq_scale.bytes[r / 128]));
      REQUIRE(row[k] == want);
    }
  }

  const WeightTensor& w2 = m.tensor("layers.2.ffn.experts.3.w2.weight");
  CHECK(w2.view.format == WeightFormat::kFp4Block);
  CHECK(w2.shape == std::vector<int64_t>{128, 16});
  CHECK(w2.stored_shape == std::vector<int64_t>{128, 8});
  CHECK(w2.format_label() == "F4_E2M1x2*E8M0[1x32]");
  const Item& w1_codes = find_item(items, kW1);
  const Item& w1_scale = find_item(items, scale_name(kW1));
  std::vector<float> r1(128);
  for (int64_t r : {0, 7, 15}) {
    m.weight("layers.2.ffn.experts.3.w1.weight").decode_row(r, r1.data());
    for (int64_t k = 0; k < 128; ++k) {
      const uint8_t byte = static_cast<uint8_t>(w1_codes.bytes[r * 64 + k / 2]);
      const float want = e2m1_to_f32(k % 2 ? byte >> 4 : byte & 0xF) *
                         e8m0_to_f32(static_cast<uint8_t>(w1_scale.bytes[r * 4 + k / 32]));
      REQUIRE(std::memcmp(&r1[k], &want, 4) == 0);
    }
  }
  // f32(): a decoded copy of the packed weight, computed once.
  const float* full = m.f32("layers.2.ffn.experts.3.w1.weight");
  CHECK(full == m.f32("layers.2.ffn.experts.3.w1.weight"));
  CHECK(std::memcmp(full + 15 * 128, r1.data(), 128 * 4) == 0);
  // A plain F32 tensor is served from the mapped file itself when it is aligned, else copied.
  const WeightTensor& norm = m.tensor("norm.weight");
  CHECK(std::memcmp(m.f32("norm.weight"), norm.bytes, norm.nbytes) == 0);
  if (reinterpret_cast<uintptr_t>(norm.bytes) % 4 == 0)
    CHECK(m.f32("norm.weight") == reinterpret_cast<const float*>(norm.bytes));

  SECTION("the hash covers the scale; spellings and I8/U8 do not change the fingerprint") {
    const Hash128 fp = m.fingerprint();
    Items other = items;
    find_item(other, scale_name(kWq)).bytes[1] ^= 1;
    TempDir d2;
    write_model(d2, other, quantised_config());
    Model m2 = Model::load(d2.path.string());
    CHECK(m2.fingerprint() != fp);
    CHECK(m2.hash("layers.1.attn.wq_b.weight") != m.hash("layers.1.attn.wq_b.weight"));
    CHECK(m2.hash("layers.1.attn.wq_a.weight") == m.hash("layers.1.attn.wq_a.weight"));

    other = items;
    find_item(other, scale_name(kWq)).name = kWq.substr(0, kWq.size() - 7) + ".weight_scale_inv";
    find_item(other, kW1).dtype = DType::kU8;
    TempDir d3;
    write_model(d3, other, quantised_config());
    Model m3 = Model::load(d3.path.string());
    CHECK(m3.fingerprint() == fp);
    CHECK(m3.tensor("layers.1.attn.wq_b.weight").scale_name == "model.layers.1.attn.wq_b.weight_scale_inv");
  }
}

TEST_CASE("quant loader: every corrupted scale, shape or dtype is refused naming the tensor", "[cpu][loader][quant]") {
  TempDir dir;
  const std::string d = dir.path.string();
  const Items base = quantised_items();
  const nlohmann::json config = quantised_config();
  auto variant = [&](const std::function<void(Items&, nlohmann::json&)>& mutate,
                     std::initializer_list<std::string> needles) {
    Items items = base;
    nlohmann::json c = config;
    mutate(items, c);
    write_model(dir, items, c);
    require_error([&] { Model::load(d); }, needles);
  };
  const std::string s_wq = scale_name(kWq), s_w2 = scale_name(kW2);

  SECTION("missing scale") {
    variant([&](Items& i, nlohmann::json&) { erase_item(i, s_wq); }, {kWq, "no scale tensor"});
    variant([&](Items& i, nlohmann::json&) { erase_item(i, s_w2); }, {kW2, "no scale tensor"});
  }
  SECTION("scale of the wrong shape") {
    variant([&](Items& i, nlohmann::json&) { find_item(i, s_wq).shape = {1, 2}; }, {s_wq, "[1, 2]", "need [2, 1]"});
    variant(
        [&](Items& i, nlohmann::json&) {
          Item& s = find_item(i, s_wq);
          s.shape = {2, 1, 1};
        },
        {s_wq, "[2, 1, 1]"});
    variant(
        [&](Items& i, nlohmann::json&) {
          Item& s = find_item(i, s_w2);
          s.shape = {64, 2};  // same byte count, wrong layout
        },
        {s_w2, "[64, 2]", "need [128, 1]"});
    variant(
        [&](Items& i, nlohmann::json&) {
          Item& s = find_item(i, scale_name(kW1));
          s.shape = {16, 5};
          s.bytes += std::string(16, '\x7f');
        },
        {scale_name(kW1), "[16, 5]", "need [16, 4]"});
  }
  SECTION("scale of the wrong dtype") {
    variant(
        [&](Items& i, nlohmann::json&) {
          Item& s = find_item(i, s_wq);
          s.dtype = DType::kBF16;
          s.shape = {1, 1};
        },
        {s_wq, "BF16", "F8_E8M0"});
    variant([&](Items& i, nlohmann::json&) { find_item(i, s_w2).dtype = DType::kI8; }, {s_w2, "I8", "F8_E8M0"});
    variant([&](Items& i, nlohmann::json&) { find_item(i, s_w2).dtype = DType::kF8E4M3; }, {s_w2, "F8_E4M3"});
  }
  SECTION("weight of the wrong dtype or packed shape") {
    variant([&](Items& i, nlohmann::json&) { find_item(i, kWq).dtype = DType::kF8E5M2; },
            {"layers.1.attn.wq_b.weight", "F8_E5M2"});
    variant([&](Items& i, nlohmann::json&) { find_item(i, kWq).dtype = DType::kI8; },
            {"layers.1.attn.wq_b.weight", "I8"});
    variant(
        [&](Items& i, nlohmann::json&) {
          Item& w = find_item(i, kW2);
          w.shape = {64, 16};  // [N, K] bytes halved the other way
        },
        {"layers.2.ffn.experts.3.w2.weight", "[64, 16]", "[128, 8]"});
    variant(
        [&](Items& i, nlohmann::json&) {
          Item& w = find_item(i, kW2);
          w.dtype = DType::kF8E4M3;
          w.shape = {128, 8};
        },
        {"layers.2.ffn.experts.3.w2.weight", "F8_E4M3", "expert_dtype fp4"});
    variant(
        [&](Items& i, nlohmann::json&) {
          Item& w = find_item(i, kW2);
          w.dtype = DType::kI16;
          w.shape = {128, 4};
        },
        {"layers.2.ffn.experts.3.w2.weight", "I16"});
    variant(
        [&](Items& i, nlohmann::json&) {
          Item& w = find_item(i, "model.norm.weight");
          w.dtype = DType::kF8E4M3;
          w.shape = {512};
        },
        {"norm.weight", "not a matrix"});
  }
  SECTION("stray and duplicated scales") {
    variant(
        [&](Items& i, nlohmann::json&) {
          i.push_back({"model.layers.0.ffn.gate.scale", DType::kF8E8M0, {1, 1}, std::string(1, '\x7f')});
        },
        {"model.layers.0.ffn.gate.scale", "layers.0.ffn.gate.weight", "not quantised"});
    variant(
        [&](Items& i, nlohmann::json&) {
          i.push_back({"model.layers.0.nothing.scale", DType::kF8E8M0, {1, 1}, std::string(1, '\x7f')});
        },
        {"model.layers.0.nothing.scale", "no quantised weight"});
    variant(
        [&](Items& i, nlohmann::json&) {
          Item copy = find_item(i, s_wq);
          copy.name = kWq.substr(0, kWq.size() - 7) + ".weight_scale_inv";
          i.push_back(copy);
        },
        {"both name the scale of", "layers.1.attn.wq_b.weight"});
  }
  SECTION("config and tensors disagree") {
    variant([&](Items&, nlohmann::json& c) { c.erase("quantization_config"); }, {"F8_E4M3", "quantization_config"});
    variant([&](Items&, nlohmann::json& c) { c.erase("expert_dtype"); }, {"layers.0.ffn.experts.0.w1.weight", "I8"});
    variant(
        [&](Items&, nlohmann::json& c) {
          c["quantization_config"]["weight_block_size"] = {64, 128};
        },
        {"scale tensor", "64x128", "need ["});
  }
  SECTION("config values memra does not read are refused by name") {
    variant([&](Items&, nlohmann::json& c) { c["quantization_config"]["fmt"] = "e5m2"; },
            {"quantization_config.fmt", "e5m2"});
    variant([&](Items&, nlohmann::json& c) { c["quantization_config"].erase("scale_fmt"); },
            {"quantization_config.scale_fmt", "missing"});
    variant([&](Items&, nlohmann::json& c) { c["quantization_config"]["quant_method"] = "awq"; },
            {"quant_method", "awq"});
    variant([&](Items&, nlohmann::json& c) { c["quantization_config"]["weight_block_size"] = {128}; },
            {"weight_block_size"});
    variant(
        [&](Items&, nlohmann::json& c) {
          c["quantization_config"]["weight_block_size"] = {0, 128};
        },
        {"weight_block_size"});
    variant([&](Items&, nlohmann::json& c) { c["expert_dtype"] = "int4"; }, {"expert_dtype", "int4"});
  }
}

TEST_CASE("quant loader: mtp.* (MTP block, DSpark stages and heads) is recognised, listed and checked",
          "[cpu][loader][quant]") {
  TempDir dir;
  Items items = quantised_items();
  nlohmann::json c = quantised_config();
  c["num_nextn_predict_layers"] = 1;
  const std::string e = std::string(128 * 128, '\x38'), s = std::string(1, '\x7f');
  items.push_back({"mtp.0.e_proj.weight", DType::kF8E4M3, {128, 128}, e});
  items.push_back({"mtp.0.e_proj.scale", DType::kF8E8M0, {1, 1}, s});
  items.push_back({"mtp.0.enorm.weight", DType::kBF16, {128}, std::string(256, '\0')});
  items.push_back({"mtp.0.ffn.experts.0.w1.weight", DType::kI8, {16, 64}, std::string(16 * 64, '\x11')});
  items.push_back({"mtp.0.ffn.experts.0.w1.scale", DType::kF8E8M0, {16, 4}, std::string(64, '\x7f')});
  items.push_back({"mtp.0.main_proj.weight", DType::kBF16, {128, 384}, std::string(128 * 384 * 2, '\0')});
  items.push_back({"mtp.0.main_norm.weight", DType::kBF16, {128}, std::string(256, '\0')});
  items.push_back({"mtp.2.markov_head.markov_w1.weight", DType::kBF16, {512, 8}, std::string(512 * 16, '\0')});
  items.push_back({"mtp.2.markov_head.markov_w2.weight", DType::kF32, {512, 8}, std::string(512 * 32, '\0')});
  items.push_back({"mtp.2.confidence_head.weight", DType::kF32, {1, 136}, std::string(136 * 4, '\0')});
  write_model(dir, items, c);
  Model m = Model::load(dir.path.string());
  std::map<std::string, std::string> kinds;
  for (const auto& u : m.unused_tensors()) kinds[u.name] = u.kind;
  CHECK(kinds.size() == 10);
  CHECK(kinds["mtp.0.e_proj.weight"] == "mtp");
  CHECK(kinds["mtp.0.e_proj.scale"] == "mtp");
  CHECK(kinds["mtp.0.main_proj.weight"] == "dspark");
  CHECK(kinds["mtp.0.main_norm.weight"] == "dspark");
  CHECK(kinds["mtp.2.markov_head.markov_w2.weight"] == "dspark");
  CHECK(kinds["mtp.2.confidence_head.weight"] == "dspark");
  // Unused tensors are not part of the main model's fingerprint.
  TempDir plain;
  write_model(plain, quantised_items(), quantised_config());
  CHECK(Model::load(plain.path.string()).fingerprint() == m.fingerprint());

  SECTION("a quantised mtp weight with a bad or missing scale is refused") {
    find_item(items, "mtp.0.e_proj.scale").shape = {1, 1};
    find_item(items, "mtp.0.e_proj.scale").dtype = DType::kF32;
    find_item(items, "mtp.0.e_proj.scale").bytes = std::string(4, '\0');
    write_model(dir, items, c);
    require_error([&] { Model::load(dir.path.string()); }, {"mtp.0.e_proj.scale", "F32"});
    erase_item(items, "mtp.0.e_proj.scale");
    write_model(dir, items, c);
    require_error([&] { Model::load(dir.path.string()); }, {"mtp.0.e_proj.weight", "no scale"});
  }
  SECTION("an mtp scale without its weight is refused") {
    erase_item(items, "mtp.0.ffn.experts.0.w1.weight");
    write_model(dir, items, c);
    require_error([&] { Model::load(dir.path.string()); }, {"mtp.0.ffn.experts.0.w1.scale", "no weight"});
  }
}
