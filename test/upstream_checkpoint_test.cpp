// The same checkpoint in both spellings that exist — transformers' save_pretrained names and
// config, and DeepSeek's upstream names (`layers.N.attn.kv_norm.weight`, `embed.weight`,
// `hc_head_fn`, …) with an upstream config.json — is the same model: equal fingerprint, equal
// per-tensor hashes and bit-identical logits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>

#include "engine/cpu_backends.h"
#include "engine/engine.h"
#include "format/json_guard.h"
#include "format/safetensors.h"
#include "loader_test_util.h"
#include "model/model.h"

using namespace loader_test;
using namespace memra;

TEST_CASE("loader model: upstream names and config load as the same model", "[cpu][loader]") {
  const std::string hf_dir = std::string(MEMRA_FIXTURES) + "/tiny";
  const Model hf = Model::load(hf_dir);
  TempDir dir;
  // config.json in the upstream form: S,C(4),H(16),C(4) + a trailing MTP entry, one hash layer.
  nlohmann::json up = to_upstream(read_json_file(hf_dir + "/config.json"), {0, 4, 16, 4, 0}, 1);
  write_bytes(dir.file("config.json"), up.dump(1));
  // Every tensor's stored bytes under its canonical upstream name, in a shuffled order.
  std::vector<const WeightTensor*> order;
  for (const auto& w : hf.tensors()) order.push_back(&w);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  std::map<std::string, SafetensorsFile> files;
  SafetensorsWriter writer;
  for (const WeightTensor* w : order) {
    auto it = files.find(w->file);
    if (it == files.end()) it = files.emplace(w->file, SafetensorsFile::open(hf_dir + "/" + w->file)).first;
    const TensorView& t = it->second.get(w->stored_name);
    writer.add(w->name, t.dtype, t.shape, t.data, t.nbytes);
  }
  writer.write(dir.file("model.safetensors"));

  const Model upstream = Model::load(dir.path.string());
  CHECK(upstream.config().source_form == "upstream");
  CHECK(upstream.fingerprint() == hf.fingerprint());
  REQUIRE(upstream.tensors().size() == hf.tensors().size());
  for (size_t i = 0; i < hf.tensors().size(); ++i) {
    CHECK(upstream.tensors()[i].name == hf.tensors()[i].name);
    CHECK(upstream.hash(i) == hf.hash(i));
  }
  CHECK(upstream.tensor("layers.1.attn.kv_norm.weight").stored_name == "layers.1.attn.kv_norm.weight");
  CHECK(hf.tensor("layers.1.attn.kv_norm.weight").stored_name == "model.layers.1.attn.norm.weight");

  std::vector<int32_t> tokens(90);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(2 + (i * 53) % 500);
  auto a = make_cpu_backend(hf), b = make_cpu_backend(upstream);
  auto sa = a->new_state(90), sb = b->new_state(90);
  std::vector<float> la, lb;
  prefill(*a, *sa, tokens, 0, &la);
  prefill(*b, *sb, tokens, 0, &lb);
  REQUIRE(la.size() == lb.size());
  CHECK(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)) == 0);
}
