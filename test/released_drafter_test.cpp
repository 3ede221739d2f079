// A released checkpoint's own DSpark drafter (models/tiny-dspark-released: models/tiny quantised in
// the released layout, with tiny-dspark-trained as FP8/FP4/BF16 mtp.* tensors and dspark_* fields):
// the config maps to the separate drafter's geometry, every tensor decodes bit-equal to the oracle's
// dequantisation (dequant.json), the released Markov spelling maps onto ours, and a folder with no,
// a partial or an altered drafter is refused naming the field or tensor.
#include "drafter/released_drafter.h"

#include <catch2/catch.hpp>
#include <functional>
#include <map>

#include "core/hash.h"
#include "drafter/drafter.h"
#include "format/json_guard.h"
#include "format/safetensors.h"
#include "loader_test_util.h"
#include "model/model.h"

using namespace memra;
using loader_test::require_error;
using loader_test::TempDir;
using loader_test::write_bytes;
using nlohmann::json;

namespace {

const std::string kFixture = std::string(MEMRA_FIXTURES) + "/tiny-dspark-released";

struct Item {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

std::vector<Item> fixture_items() {
  SafetensorsFile f = SafetensorsFile::open(kFixture + "/model.safetensors");
  std::vector<Item> items;
  for (const auto& t : f.tensors())
    items.push_back({t.name, t.dtype, t.shape, std::string(reinterpret_cast<const char*>(t.data), t.nbytes)});
  return items;
}

// The fixture with its tensors edited by `edit_items` and its config.json by `edit_config`, loaded as
// a drafter.
void load_variant(const std::function<void(std::vector<Item>&)>& edit_items, const std::function<void(json&)>& edit_config) {
  TempDir dir;
  json cfg = read_json_file(kFixture + "/config.json");
  edit_config(cfg);
  write_bytes(dir.file("config.json"), cfg.dump(1));
  std::vector<Item> items = fixture_items();
  edit_items(items);
  SafetensorsWriter w;
  for (const auto& it : items) w.add(it.name, it.dtype, it.shape, it.bytes.data(), it.bytes.size());
  w.write(dir.file("model.safetensors"));
  DrafterWeights::load(dir.path.string());
}

void no_items(std::vector<Item>&) {}
void no_config(json&) {}

std::function<void(std::vector<Item>&)> erase(std::initializer_list<std::string> names) {
  std::vector<std::string> n(names);
  return [n](std::vector<Item>& items) {
    for (const auto& name : n) {
      auto it = std::find_if(items.begin(), items.end(), [&](const Item& i) { return i.name == name; });
      REQUIRE(it != items.end());
      items.erase(it);
    }
  };
}

std::function<void(std::vector<Item>&)> rename_item(const std::string& from, const std::string& to) {
  return [from, to](std::vector<Item>& items) {
    for (auto& it : items)
      if (it.name == from) it.name = to;
  };
}

}  // namespace

TEST_CASE("released drafter: the fixture's own DSpark drafter maps to the separate drafter, dequantised bit-equal",
          "[drafter][released][cpu]") {
  REQUIRE(is_trunk_folder(kFixture));
  CHECK(!is_trunk_folder(std::string(MEMRA_FIXTURES) + "/drafters/tiny-dspark-trained"));
  const DrafterWeights own = DrafterWeights::load(kFixture);
  const DrafterWeights separate = DrafterWeights::load(std::string(MEMRA_FIXTURES) + "/drafters/tiny-dspark-trained");
  const DrafterConfig& c = own.config();
  // The trunk's fields plus dspark_* give exactly the separate drafter's geometry (heads 2 x 32,
  // q_lora 32, window 12, 4 experts: dspark_ overrides; the rest: the trunk's).
  CHECK(c.geometry_json() == separate.config().geometry_json());
  CHECK(c.harvest == Harvest::kDspark);
  CHECK(c.confidence);
  CHECK(c.confidence_bias == std::optional<bool>(false));
  CHECK(own.dir() == kFixture);
  CHECK(own.fingerprint() != separate.fingerprint());  // other bytes: quantised
  CHECK(own.tensors().size() == separate.tensors().size());

  // Every tensor decodes to the f32 bytes torch computed from the same codes and scales.
  const json want = read_json_file(kFixture + "/dequant.json")["tensors"];
  std::map<std::string, int> formats;
  for (const auto& t : own.tensors()) {
    INFO(t.name);
    REQUIRE(want.contains(t.name));
    CHECK(xxh3_128(t.values.data(), t.values.size() * sizeof(float)).hex() == want[t.name]["xxh3"]);
    ++formats[t.format];
  }
  CHECK(formats["F8_E4M3*E8M0[128x128]"] > 0);  // main_proj, attention projections, shared experts
  CHECK(formats["F4_E2M1x2*E8M0[1x32]"] == 2 * 4 * 3);  // routed experts
  CHECK(formats["BF16"] > 0);                   // norms, router, Markov and confidence heads
  CHECK(formats["F32"] > 0);                    // hc, sinks, router bias

  // The released spelling of the Markov head (markov_head.embed / .head) loads as markov_w1 / w2.
  TempDir dir;
  write_bytes(dir.file("config.json"), read_json_file(kFixture + "/config.json").dump());
  std::vector<Item> items = fixture_items();
  rename_item("mtp.1.markov_head.markov_w1.weight", "mtp.1.markov_head.embed.weight")(items);
  rename_item("mtp.1.markov_head.markov_w2.weight", "mtp.1.markov_head.head.weight")(items);
  SafetensorsWriter w;
  for (const auto& it : items) w.add(it.name, it.dtype, it.shape, it.bytes.data(), it.bytes.size());
  w.write(dir.file("model.safetensors"));
  const DrafterWeights renamed = DrafterWeights::load(dir.path.string());
  CHECK(renamed.fingerprint() == own.fingerprint());
  CHECK(renamed.tensors()[renamed.tensors().size() - 2].values == own.tensors()[own.tensors().size() - 2].values);

  // It pairs with the trunk of its folder.
  const Model trunk = Model::load(kFixture);
  Drafter drafter(own, trunk);
  CHECK(drafter.shape().block_size == 8);
}

TEST_CASE("released drafter: no, a partial or an altered drafter is refused naming the field or tensor",
          "[drafter][released][cpu]") {
  // No drafter declared: the folders without dspark_* fields (the plain trunk; tiny-fp4's MTP block).
  for (const char* m : {"tiny", "tiny-fp4"})
    require_error([&] { DrafterWeights::load(std::string(MEMRA_FIXTURES) + "/" + m); },
                  {"declares no DSpark drafter", "dspark_block_size"});
  require_error([] { load_variant(no_items, [](json& j) { j.erase("dspark_block_size"); }); },
                {"declares no DSpark drafter"});
  // Fields.
  require_error([] { load_variant(no_items, [](json& j) { j.erase("dspark_target_layer_ids"); }); },
                {"dspark_target_layer_ids", "missing"});
  require_error([] { load_variant(no_items, [](json& j) { j.erase("dspark_noise_token_id"); }); },
                {"dspark_noise_token_id", "missing"});
  require_error([] { load_variant(no_items, [](json& j) { j["dspark_target_layer_ids"] = {1, 2, 4}; }); },
                {"dspark_target_layer_ids", "layer 4"});
  require_error(
      [] {
        load_variant(no_items, [](json& j) {
          j["num_nextn_predict_layers"] = 0;
          j["compress_ratios"].erase(5);
        });
      },
      {"num_nextn_predict_layers"});
  require_error([] { load_variant(no_items, [](json& j) { j["compress_ratios"][5] = 4; }); },
                {"compress_ratios[5]", "sliding window"});
  // One trailing compress_ratios entry per stage at most (4 layers + 2 stages).
  require_error([] { load_variant(no_items, [](json& j) { j["compress_ratios"].push_back(0); }); },
                {"compress_ratios", "7 entries", "at most 2"});
  require_error([] { load_variant(no_items, [](json& j) { j["dspark_head_dim"] = 0; }); },
                {"DSpark drafter", "head_dim", "out of range"});
  require_error([] { load_variant(no_items, [](json& j) { j["dspark_noise_token_id"] = 512; }); },
                {"DSpark drafter", "dspark_noise_token_id"});
  // Stage geometry from the trunk where no override is given: 4 heads of 64 do not fit the tensors.
  require_error([] { load_variant(no_items, [](json& j) { j.erase("dspark_num_attention_heads"); }); },
                {"mtp.0.attn.wq_b.weight", "has shape [64, 32]", "predicts [128, 32]"});
  // Tensors: missing (a quantised one with its scale; the Markov head names its released spelling).
  require_error([] { load_variant(erase({"mtp.1.attn.wq_a.weight", "mtp.1.attn.wq_a.scale"}), no_config); },
                {"drafter tensor mtp.1.attn.wq_a.weight is missing"});
  require_error([] { load_variant(erase({"mtp.1.markov_head.markov_w2.weight"}), no_config); },
                {"mtp.1.markov_head.markov_w2.weight", "mtp.1.markov_head.head.weight", "missing"});
  require_error([] { load_variant(erase({"mtp.1.hc_head_fn"}), no_config); }, {"mtp.1.hc_head_fn", "missing"});
  // ... a quantised weight without its scale, a scale of the wrong shape (the model loader's checks).
  require_error([] { load_variant(erase({"mtp.0.main_proj.scale"}), no_config); },
                {"mtp.0.main_proj.weight", "no scale"});
  require_error(
      [] {
        load_variant(
            [](std::vector<Item>& items) {
              for (auto& it : items)
                if (it.name == "mtp.0.ffn.experts.2.w1.scale") {
                  it.shape = {16, 3};
                  it.bytes.resize(48);
                }
            },
            no_config);
      },
      {"mtp.0.ffn.experts.2.w1.scale", "[16, 4]"});
  // ... extra, doubly named, of a wrong shape or dtype.
  require_error(
      [] {
        load_variant(
            [](std::vector<Item>& items) { items.push_back({"mtp.1.extra.weight", DType::kF32, {2}, std::string(8, '\0')}); },
            no_config);
      },
      {"mtp.1.extra.weight", "extra tensor"});
  require_error(
      [] {
        load_variant(
            [](std::vector<Item>& items) {
              for (const auto& it : std::vector<Item>(items))
                if (it.name == "mtp.1.markov_head.markov_w1.weight") items.push_back({"mtp.1.markov_head.embed.weight", it.dtype, it.shape, it.bytes});
            },
            no_config);
      },
      {"mtp.1.markov_head.markov_w1.weight", "mtp.1.markov_head.embed.weight", "both name"});
  require_error(
      [] {
        load_variant(
            [](std::vector<Item>& items) {
              for (auto& it : items)
                if (it.name == "mtp.0.main_norm.weight") {
                  it.shape = {64};
                  it.bytes.resize(128);
                }
            },
            no_config);
      },
      {"mtp.0.main_norm.weight", "has shape [64]", "predicts [128]"});
  require_error(
      [] {
        load_variant(
            [](std::vector<Item>& items) {
              for (auto& it : items)
                if (it.name == "mtp.0.attn_norm.weight") {
                  it.dtype = DType::kI16;
                }
            },
            no_config);
      },
      {"mtp.0.attn_norm.weight", "I16", "float weight"});
}
