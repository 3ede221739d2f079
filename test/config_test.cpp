// config.json parsing: both fixture configs, their upstream-form equivalents parse to the same
// geometry, and each bad field is an Error that names it.
#include <catch2/catch.hpp>

#include "format/json_guard.h"
#include "loader_test_util.h"
#include "model/config.h"

using namespace loader_test;
using memra::LayerKind;
using memra::MlpKind;
using memra::ModelConfig;
using nlohmann::json;

namespace {

json fixture_config(const std::string& name) { return memra::read_json_file(fixture(name) + "/config.json"); }

void require_same(const ModelConfig& a, const ModelConfig& b) {
  CHECK(a.geometry_json() == b.geometry_json());
  CHECK(a.geometry_json().dump() == b.geometry_json().dump());
  CHECK(a.max_position_embeddings == b.max_position_embeddings);
  CHECK(a.num_nextn_predict_layers == b.num_nextn_predict_layers);
  CHECK(a.tie_word_embeddings == b.tie_word_embeddings);
}

// Parsing `j` must fail with an Error naming `field`.
void require_bad(const json& j, const std::string& field) {
  INFO("expected an error naming " << field);
  require_error([&] { ModelConfig::parse(j); }, {field});
}

}  // namespace

TEST_CASE("loader config: tiny-a (transformers form) parses to the documented geometry", "[cpu][loader]") {
  ModelConfig c = ModelConfig::load(fixture("tiny-a"));
  CHECK(c.source_form == "transformers");
  CHECK(c.vocab_size == 512);
  CHECK(c.hidden_size == 128);
  CHECK(c.num_hidden_layers == 4);
  CHECK(c.num_attention_heads == 4);
  CHECK(c.head_dim == 64);
  CHECK(c.qk_rope_head_dim == 16);
  CHECK(c.q_lora_rank == 64);
  CHECK(c.o_groups == 2);
  CHECK(c.o_lora_rank == 32);
  CHECK(c.sliding_window == 16);
  CHECK(c.layer_types == std::vector<LayerKind>{LayerKind::kSliding, LayerKind::kCSA, LayerKind::kHCA, LayerKind::kCSA});
  CHECK(c.mlp_layer_types == std::vector<MlpKind>{MlpKind::kHash, MlpKind::kLearned, MlpKind::kLearned, MlpKind::kLearned});
  CHECK(c.csa_rate == 4);
  CHECK(c.hca_rate == 16);
  CHECK(c.compress_ratio(0) == 0);
  CHECK(c.compress_ratio(2) == 16);
  CHECK(c.n_routed_experts == 8);
  CHECK(c.num_experts_per_tok == 2);
  CHECK(c.moe_intermediate_size == 64);
  CHECK(c.scoring_func == "sqrtsoftplus");
  CHECK(c.routed_scaling_factor == 1.5);
  CHECK(c.swiglu_limit == 10.0);
  CHECK(c.hc_mult == 4);
  CHECK(c.hc_sinkhorn_iters == 20);
  CHECK(c.index_n_heads == 4);
  CHECK(c.index_head_dim == 32);
  CHECK(c.index_topk == 4);
  CHECK(c.rope_main.type == "default");
  CHECK(c.rope_main.theta == 10000.0);
  CHECK(c.rope_compress.type == "default");
  CHECK(c.rope_compress.theta == 160000.0);
  CHECK(&c.rope_for(0) == &c.rope_main);
  CHECK(&c.rope_for(1) == &c.rope_compress);
  CHECK(c.max_position_embeddings == 4096);

  json g = c.geometry_json();
  for (const char* key :
       {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
        "qk_rope_head_dim", "q_lora_rank", "o_groups", "o_lora_rank", "sliding_window", "layer_types", "compress_rates",
        "mlp_layer_types", "n_routed_experts", "num_experts_per_tok", "n_shared_experts", "moe_intermediate_size",
        "scoring_func", "norm_topk_prob", "routed_scaling_factor", "swiglu_limit", "hc_mult", "hc_sinkhorn_iters",
        "hc_eps", "index_n_heads", "index_head_dim", "index_topk", "rope_theta", "compress_rope_theta", "rms_norm_eps",
        "rope_parameters"})
    CHECK(g.contains(key));
  CHECK(g.size() == 32);
  CHECK(g["layer_types"][2] == "heavily_compressed_attention");
  CHECK(g["compress_rates"]["heavily_compressed_attention"] == 16);
  CHECK(g["rope_parameters"]["main"] == json({{"rope_type", "default"}, {"rope_theta", 10000.0}}));
}

TEST_CASE("loader config: tiny-b (yarn on compressed layers) parses", "[cpu][loader]") {
  ModelConfig c = ModelConfig::load(fixture("tiny-b"));
  CHECK(c.layer_types == std::vector<LayerKind>{LayerKind::kHCA, LayerKind::kSliding, LayerKind::kCSA, LayerKind::kHCA,
                                                LayerKind::kCSA});
  CHECK(c.hca_rate == 8);
  CHECK(c.qk_rope_head_dim == 16);
  CHECK(c.mlp_layer_types[1] == MlpKind::kHash);
  CHECK(c.mlp_layer_types[2] == MlpKind::kLearned);
  CHECK(c.scoring_func == "sigmoid");
  CHECK(c.rope_compress.type == "yarn");
  CHECK(c.rope_compress.factor == 4.0);
  CHECK(c.rope_compress.original_max_position_embeddings == 256);
  CHECK(c.rope_compress.beta_fast == 32.0);
  CHECK(c.rope_compress.beta_slow == 1.0);
  CHECK(c.rope_compress.attention_factor == 1.0);
  json y = c.geometry_json()["rope_parameters"]["compress"];
  CHECK(y["rope_type"] == "yarn");
  CHECK(y["original_max_position_embeddings"] == 256);
  CHECK(y["attention_factor"] == 1.0);
}

TEST_CASE("loader config: upstream form parses to the same geometry as the transformers form", "[cpu][loader]") {
  SECTION("tiny-a: compress_ratios with the trailing MTP entry, one hash layer") {
    ModelConfig hf = ModelConfig::parse(fixture_config("tiny-a"));
    json up = to_upstream(fixture_config("tiny-a"), {0, 4, 16, 4, 0}, 1);
    ModelConfig u = ModelConfig::parse(up);
    CHECK(u.source_form == "upstream");
    require_same(hf, u);
    SECTION("ratio 1 also means sliding, and L entries are accepted") {
      up["compress_ratios"] = {1, 4, 16, 4};
      require_same(hf, ModelConfig::parse(up));
    }
    SECTION("HF names are accepted in the upstream form too") {
      up["hidden_size"] = 128;
      require_same(hf, ModelConfig::parse(up));
      up["hidden_size"] = 256;
      require_bad(up, "dim");
    }
    SECTION("ModelConfig::load reads the folder's config.json") {
      TempDir dir;
      write_bytes(dir.file("config.json"), up.dump(1));
      require_same(hf, ModelConfig::load(dir.path.string()));
    }
  }
  SECTION("tiny-b: flat rope_scaling yarn becomes the compress rope") {
    ModelConfig hf = ModelConfig::parse(fixture_config("tiny-b"));
    json up = to_upstream(fixture_config("tiny-b"), {8, 0, 4, 8, 4, 0}, 2);
    REQUIRE(up.contains("rope_scaling"));
    require_same(hf, ModelConfig::parse(up));
    SECTION("attention_factor 1.0 is implied in the flat form; other values are refused") {
      up["rope_scaling"]["attention_factor"] = 1.277;
      require_bad(up, "rope_scaling.attention_factor");
      up["rope_scaling"].erase("attention_factor");
      up["rope_scaling"]["mscale"] = 0.707;
      require_bad(up, "mscale");
    }
    SECTION("differing HCA ratios cannot be one hca_rate") {
      up["compress_ratios"] = {8, 0, 4, 16, 4};
      require_bad(up, "compress_ratios[3]");
    }
  }
}

TEST_CASE("loader config: bad fields are errors naming the field", "[cpu][loader]") {
  const json a = fixture_config("tiny-a");
  auto with = [&](const std::string& key, json value) {
    json j = a;
    j[key] = std::move(value);
    return j;
  };
  auto without = [&](const std::string& key) {
    json j = a;
    j.erase(key);
    return j;
  };
  require_bad(json::array(), "top level");
  require_bad(without("hidden_size"), "hidden_size");
  require_bad(with("hidden_size", -1), "hidden_size");
  require_bad(with("hidden_size", 0), "hidden_size");
  require_bad(with("hidden_size", "128"), "hidden_size");
  require_bad(with("hidden_size", 128.5), "hidden_size");
  require_bad(with("head_dim", int64_t{1} << 40), "head_dim");
  {
    json j = with("vocab_size", 1 << 24);
    j["hidden_size"] = 256;  // V·D = 2^32 elements
    require_bad(j, "embed.weight");
  }
  require_bad(with("num_key_value_heads", 2), "num_key_value_heads");
  require_bad(with("layer_types", json::array({"sliding_attention"})), "layer_types");
  require_bad(with("layer_types", json::array({"sliding_attention", "full_attention", "sliding_attention",
                                               "sliding_attention"})),
              "layer_types[1]");
  require_bad(with("layer_types", 5), "layer_types");
  require_bad(with("mlp_layer_types", json::array({"moe", "moe", "dense", "moe"})), "mlp_layer_types[2]");
  require_bad(with("mlp_layer_types", json::array({"moe"})), "mlp_layer_types");
  require_bad(with("compress_rates", {{"compressed_sparse_attention", 0}, {"heavily_compressed_attention", 16}}),
              "compressed_sparse_attention");
  require_bad(with("compress_rates", {{"bogus", 3}}), "compress_rates.bogus");
  require_bad(with("o_groups", 3), "o_groups");
  require_bad(with("num_experts_per_tok", 9), "num_experts_per_tok");
  require_bad(with("hc_mult", 0), "hc_mult");
  require_bad(with("index_topk", 0), "index_topk");
  require_bad(with("scoring_func", "relu"), "scoring_func");
  // Refused at load (not at forward): softmax scoring has no oracle, the model has one shared expert.
  require_bad(with("scoring_func", "softmax"), "scoring_func");
  require_error([&] { ModelConfig::parse(with("scoring_func", "softmax")); }, {"'softmax' is refused", "transformers"});
  require_bad(with("n_shared_experts", 0), "n_shared_experts");
  require_error([&] { ModelConfig::parse(with("n_shared_experts", 0)); }, {"n_shared_experts = 0 is refused"});
  require_bad(with("n_shared_experts", 2), "n_shared_experts");
  require_bad(with("norm_topk_prob", "yes"), "norm_topk_prob");
  require_bad(with("model_type", "llama"), "model_type");
  {
    json j = a;
    j["partial_rotary_factor"] = 0.3;  // 64·0.3 = 19.2
    j.erase("qk_rope_head_dim");
    require_bad(j, "partial_rotary_factor");
    j["partial_rotary_factor"] = 15.0 / 64.0;  // 15: odd
    require_bad(j, "qk_rope_head_dim");
  }
  require_bad(with("qk_rope_head_dim", 32), "qk_rope_head_dim");  // disagrees with 0.25·64
  {
    json j = without("layer_types");
    require_bad(j, "layer_types");
  }
  {
    json j = a;
    j["rope_parameters"]["compress"] = {{"rope_type", "yarn"}, {"rope_theta", 160000.0}, {"factor", 16.0},
                                        {"original_max_position_embeddings", 256}};
    require_bad(j, "rope_parameters.compress.attention_factor");  // nested yarn needs an explicit 1.0
    j["rope_parameters"]["compress"]["attention_factor"] = 1.277;
    require_bad(j, "rope_parameters.compress.attention_factor");
    j["rope_parameters"]["compress"]["attention_factor"] = 1.0;
    CHECK(ModelConfig::parse(j).rope_compress.factor == 16.0);
    j["rope_parameters"]["compress"].erase("factor");
    require_bad(j, "rope_parameters.compress.factor");
    j["rope_parameters"]["compress"]["rope_type"] = "llama3";
    require_bad(j, "rope_parameters.compress.rope_type");
  }
  {
    json u = to_upstream(a, {0, 4, 16, 4, 0}, 1);
    u["compress_ratios"] = {0, 4, 16};
    require_bad(u, "compress_ratios");
    u["compress_ratios"] = {0, -4, 16, 4};
    require_bad(u, "compress_ratios[1]");
    u["compress_ratios"] = {0, 4, 16, 4};
    u["num_hash_layers"] = 5;
    require_bad(u, "num_hash_layers");
    u["num_hash_layers"] = 1;
    u["n_activated_experts"] = 0;
    require_bad(u, "num_experts_per_tok");
  }
  SECTION("config.json that is not UTF-8 or not JSON") {
    TempDir dir;
    write_bytes(dir.file("config.json"), "{\"vocab_size\": \"\xff\"}");
    require_error([&] { ModelConfig::load(dir.path.string()); }, {"config.json", "UTF-8"});
    write_bytes(dir.file("config.json"), "{\"vocab_size\": ");
    require_error([&] { ModelConfig::load(dir.path.string()); }, {"config.json", "not valid JSON"});
    write_bytes(dir.file("config.json"), "{\"vocab_size\": 1, \"vocab_size\": 2}");
    require_error([&] { ModelConfig::load(dir.path.string()); }, {"duplicate", "vocab_size"});
    TempDir empty;
    require_error([&] { ModelConfig::load(empty.path.string()); }, {"no config.json"});
  }
}
