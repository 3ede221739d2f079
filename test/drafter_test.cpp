// Drafters on the CPU: config parsing (both families, hostile and unsupported fields named), weight
// loading against the expected-tensor table, manifest-first drafter parity on the committed dumps
// (ALL PASS; REFUSED on a wrong or missing harvest and on disagreeing geometry; FAIL on a value),
// the DSpark ring and DFlash context semantics (chunking and rollback are bit-exact; only the window
// is read), the Markov tie rule, and taps from the trunk's CPU trace against the oracle's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/hash.h"
#include "drafter/dflash_forward.h"
#include "drafter/drafter_weights.h"
#include "drafter/dspark_forward.h"
#include "drafter/markov.h"
#include "drafter/taps.h"
#include "engine/engine.h"
#include "format/json_guard.h"
#include "loader_test_util.h"
#include "parity/drafter_parity.h"

using namespace memra;
using loader_test::read_bytes;
using loader_test::require_error;
using loader_test::TempDir;
using loader_test::write_bytes;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string drafter_dir(const std::string& name) {
  fs::path p = fs::path(MEMRA_FIXTURES) / "drafters" / name;
  INFO("committed drafter fixture " << p.string() << " is missing");
  REQUIRE(fs::is_directory(p));
  return p.string();
}

json read_json(const std::string& path) { return parse_json_guarded(read_bytes(path), path); }

void copy_tree(const std::string& from, const std::string& to) {
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

// A copy of a committed dump whose manifest went through `edit`.
std::string edited_dump(const TempDir& tmp, const std::string& dump, const std::function<void(json&)>& edit) {
  const std::string out = tmp.file("dump-" + std::to_string(std::random_device{}()));
  fs::create_directories(out);
  copy_tree(dump, out);
  json m = read_json(out + "/manifest.json");
  edit(m);
  write_bytes(out + "/manifest.json", m.dump(1));
  return out;
}

// Adds `delta` to value `index` of F32 array `name` in a dump copy (delta 0: an I32 array, whose value
// becomes `int_value`, or 0 ↔ 1 when that is -1); rehash=true updates the manifest's xxh3.
std::string perturbed_dump(const TempDir& tmp, const std::string& dump, const std::string& name, size_t index,
                           float delta, bool rehash, int32_t int_value = -1) {
  const std::string out = tmp.file("perturbed-" + std::to_string(std::random_device{}()));
  fs::create_directories(out);
  copy_tree(dump, out);
  std::string bytes = read_bytes(out + "/arrays.safetensors");
  size_t off = 0, nbytes = 0;
  {
    SafetensorsFile f = SafetensorsFile::open(out + "/arrays.safetensors");
    const TensorView& t = f.get(name);
    off = static_cast<size_t>(t.data - f.bytes().data());
    nbytes = t.nbytes;
  }
  if (delta != 0.0f) {
    float v;
    std::memcpy(&v, bytes.data() + off + 4 * index, 4);
    v += delta;
    std::memcpy(bytes.data() + off + 4 * index, &v, 4);
  } else {  // an I32 array: replace the value
    int32_t v;
    std::memcpy(&v, bytes.data() + off + 4 * index, 4);
    v = int_value >= 0 ? int_value : (v == 0 ? 1 : 0);
    std::memcpy(bytes.data() + off + 4 * index, &v, 4);
  }
  write_bytes(out + "/arrays.safetensors", bytes);
  if (rehash) {
    json m = read_json(out + "/manifest.json");
    m["arrays"][name]["xxh3"] = xxh3_128(bytes.data() + off, nbytes).hex();
    write_bytes(out + "/manifest.json", m.dump(1));
  }
  return out;
}

const StageResult* stage(const DrafterParityRun& run, const std::string& name) {
  for (const auto& s : run.stages)
    if (s.name == name) return &s;
  return nullptr;
}

bool reasons_mention(const DrafterParityRun& run, const std::string& needle) {
  for (const auto& r : run.validation.reasons)
    if (r.find(needle) != std::string::npos) return true;
  return false;
}

// Parses a mutated copy of a fixture's config.json.
DrafterConfig parse_mutated(const std::string& name, const std::function<void(json&)>& edit) {
  json j = read_json(drafter_dir(name) + "/config.json");
  edit(j);
  return DrafterConfig::parse(j);
}

}  // namespace

TEST_CASE("drafter config: both committed drafters parse with the fields the oracle wrote", "[drafter][cpu]") {
  DrafterConfig s = DrafterConfig::load(drafter_dir("tiny-dspark"));
  CHECK(s.family == DrafterFamily::kDspark);
  CHECK(s.block_size == 8);
  CHECK(s.tap_layer_inputs == std::vector<int64_t>{1, 2, 3});
  CHECK(s.sliding_window == 12);
  CHECK(s.markov_rank == 32);
  CHECK(s.harvest == Harvest::kDspark);
  CHECK(s.confidence_input == "prenorm");
  CHECK(s.layer_sliding == std::vector<bool>{true, true});
  DrafterConfig f = DrafterConfig::load(drafter_dir("tiny-dflash"));
  CHECK(f.family == DrafterFamily::kDflash);
  CHECK(f.target_layer_ids == std::vector<int64_t>{0, 1, 2});
  CHECK(f.tap_layer_inputs == std::vector<int64_t>{1, 2, 3});  // HF "output of layer id" = input of id + 1
  CHECK(!f.harvest.has_value());                             // as z-lab exports: the dump names it
  CHECK(f.layer_sliding == std::vector<bool>{false, true});
  CHECK(f.layer_causal == std::vector<bool>{false, true});   // the dflash package: sliding layers are causal
  CHECK(f.num_key_value_heads == 2);
  CHECK(f.confidence_input == "final");
}

TEST_CASE("drafter config: hostile, inconsistent and unsupported fields are one-line errors naming the field",
          "[drafter][cpu]") {
  auto dspark = [](std::function<void(json&)> edit, std::initializer_list<std::string> needles) {
    require_error([&] { parse_mutated("tiny-dspark", edit); }, needles);
  };
  auto dflash = [](std::function<void(json&)> edit, std::initializer_list<std::string> needles) {
    require_error([&] { parse_mutated("tiny-dflash", edit); }, needles);
  };
  dspark([](json& j) { j["block_size"] = "8"; }, {"block_size", "integer"});
  dspark([](json& j) { j["dflash_config"]["block_size"] = 4; }, {"block_size", "disagrees"});
  dspark([](json& j) { j["dspark_noise_token_id"] = 7; }, {"dspark_noise_token_id", "disagrees"});
  dspark([](json& j) { j["dflash_config"]["mask_token_id"] = 512; }, {"mask_token_id", "out of range"});
  dspark([](json& j) { j["architectures"] = {"LlamaForCausalLM"}; j["model_type"] = "llama"; }, {"architectures"});
  dspark([](json& j) { j["dflash_config"]["kv_fake_quant"] = true; }, {"kv_fake_quant"});
  dspark([](json& j) { j["harvest"] = "sideways"; }, {"harvest", "dflash"});
  dspark([](json& j) { j["dflash_config"]["target_layer_ids"] = json::array(); }, {"target_layer_ids"});
  dspark([](json& j) { j["num_key_value_heads"] = 2; }, {"num_key_value_heads"});
  dspark([](json& j) { j["o_groups"] = 3; }, {"o_groups"});
  dspark([](json& j) { j["dflash_config"]["markov_rank"] = 0; }, {"confidence_head_with_markov"});
  dspark([](json& j) { j["moe_intermediate_size"] = 1 << 20; j["n_routed_experts"] = 4096; }, {"2^31"});
  dspark([](json& j) { j["scoring_func"] = "relu"; }, {"scoring_func"});
  dspark([](json& j) { j.erase("sliding_window"); }, {"sliding_window", "missing"});
  dflash([](json& j) { j["rope_parameters"]["rope_type"] = "yarn"; }, {"rope_type"});
  dflash([](json& j) { j["attention_bias"] = true; }, {"attention_bias"});
  dflash([](json& j) { j["layer_types"] = {"full_attention"}; }, {"layer_types"});
  dflash([](json& j) { j["final_logit_softcapping"] = 30.0; }, {"final_logit_softcapping"});
  dflash([](json& j) { j["num_key_value_heads"] = 3; }, {"num_key_value_heads"});
  require_error([] { DrafterConfig::parse(json::array()); }, {"not a JSON object"});
  // Without target_layer_ids the dflash package spreads the taps over [1, T-3].
  DrafterConfig d = parse_mutated("tiny-dflash", [](json& j) {
    j["dflash_config"].erase("target_layer_ids");
    j["num_target_layers"] = 36;
    j["num_hidden_layers"] = 5;
    j["layer_types"] = json::array({"full_attention", "full_attention", "full_attention", "full_attention", "full_attention"});
  });
  CHECK(d.target_layer_ids == std::vector<int64_t>{1, 9, 17, 25, 33});
}

TEST_CASE("drafter weights: the committed drafters load; a checkpoint that disagrees with its config is named",
          "[drafter][cpu]") {
  for (const char* name : {"tiny-dspark", "tiny-dflash"}) {
    DrafterWeights a = DrafterWeights::load(drafter_dir(name)), b = DrafterWeights::load(drafter_dir(name));
    CHECK(a.fingerprint() == b.fingerprint());
    CHECK(a.tensors().size() == expected_drafter_tensors(a.config(), a.has(drafter_head_prefix(a.config()) + "confidence_head.proj.bias")).size());
  }
  const std::string src = drafter_dir("tiny-dspark");
  auto variant = [&](const std::function<void(SafetensorsWriter&, const SafetensorsFile&)> fill,
                     const std::function<void(json&)> edit_config) {
    TempDir dir;
    json cfg = read_json(src + "/config.json");
    edit_config(cfg);
    write_bytes(dir.file("config.json"), cfg.dump());
    SafetensorsFile f = SafetensorsFile::open(src + "/model.safetensors");
    SafetensorsWriter w;
    fill(w, f);
    write_bytes(dir.file("model.safetensors"), w.serialize());
    DrafterWeights::load(dir.path.string());
  };
  auto copy_except = [](const std::string& skip) {
    return [skip](SafetensorsWriter& w, const SafetensorsFile& f) {
      for (const auto& t : f.tensors())
        if (t.name != skip) w.add(t.name, t.dtype, t.shape, t.data, t.nbytes);
    };
  };
  auto same = [](json&) {};
  require_error([&] { variant(copy_except("mtp.1.attn.attn_sink"), same); }, {"mtp.1.attn.attn_sink", "missing"});
  require_error([&] {
    variant([&](SafetensorsWriter& w, const SafetensorsFile& f) {
      copy_except("")(w, f);
      float z = 0;
      w.add("mtp.1.confidence_head.proj.bias", DType::kF32, {1}, &z, 4);
    }, same);
  }, {"confidence_head_bias", "mtp.1.confidence_head.proj.bias"});
  require_error([&] {
    variant([&](SafetensorsWriter& w, const SafetensorsFile& f) {
      copy_except("")(w, f);
      float z = 0;
      w.add("mtp.2.norm.weight", DType::kF32, {1}, &z, 4);
    }, same);
  }, {"mtp.2.norm.weight", "extra"});
  require_error([&] { variant(copy_except(""), [](json& j) { j["sliding_window"] = 12; j["head_dim"] = 16; }); },
                {"has shape", "config predicts"});
}

TEST_CASE("drafter parity: the committed dumps of both families ALL PASS, with and without the trunk",
          "[drafter][cpu][parity]") {
  const Model trunk = Model::load(std::string(MEMRA_FIXTURES) + "/tiny");
  struct Case {
    const char* drafter;
    const char* dump;
    Harvest harvest;
  };
  for (const Case& c : {Case{"tiny-dspark", "dump-synthetic", Harvest::kDspark}, Case{"tiny-dspark", "dump-trunk", Harvest::kDspark},
                        Case{"tiny-dflash", "dump-synthetic", Harvest::kDspark}, Case{"tiny-dflash", "dump-trunk", Harvest::kDflash}}) {
    INFO(c.drafter << "/" << c.dump);
    DrafterWeights w = DrafterWeights::load(drafter_dir(c.drafter));
    const std::string dump = drafter_dir(c.drafter) + "/" + c.dump;
    for (const Model* t : {static_cast<const Model*>(nullptr), &trunk}) {
      DrafterParityRun run = run_drafter_parity(w, dump, t);
      for (const auto& s : run.stages) INFO(s.line());
      for (const auto& s : run.stages) CHECK(s.pass);
      CHECK(run.result == "PASS");
      CHECK(run.validation.harvest == c.harvest);
      for (const char* name : {"ctx_features", "final", "markov_tokens", "markov_logits", "draft_tokens", "confidence"})
        CHECK(stage(run, name) != nullptr);
      CHECK((stage(run, "draft_logits") != nullptr) == (t != nullptr));
      const StageResult* tokens = stage(run, "markov_tokens");
      CHECK(tokens->rows == harvest_drafts(c.harvest, 8));
    }
  }
}

TEST_CASE("drafter parity: REFUSED on a wrong or missing harvest and on any disagreeing geometry field",
          "[drafter][cpu][parity]") {
  TempDir tmp;
  DrafterWeights dspark = DrafterWeights::load(drafter_dir("tiny-dspark"));
  DrafterWeights dflash = DrafterWeights::load(drafter_dir("tiny-dflash"));
  const std::string sdump = drafter_dir("tiny-dspark") + "/dump-synthetic";
  const std::string fdump = drafter_dir("tiny-dflash") + "/dump-trunk";
  auto refused = [&](const DrafterWeights& w, const std::string& dump, const std::function<void(json&)>& edit,
                     const std::string& needle) {
    DrafterParityRun run = run_drafter_parity(w, edited_dump(tmp, dump, edit), nullptr);
    INFO("expected REFUSED naming '" << needle << "'");
    for (const auto& r : run.validation.reasons) INFO(r);
    CHECK(run.result == "REFUSED");
    CHECK(reasons_mention(run, needle));
    CHECK(run.stages.empty());
  };
  // Harvest: missing for a Markov export, disagreeing with the config, unknown.
  refused(dspark, sdump, [](json& m) { m["geometry"].erase("harvest"); }, "no 'harvest'");
  refused(dflash, fdump, [](json& m) { m["geometry"].erase("harvest"); }, "no 'harvest'");
  refused(dspark, sdump, [](json& m) { m["geometry"]["harvest"] = "dflash"; }, "config says dspark");
  refused(dflash, fdump, [](json& m) { m["geometry"]["harvest"] = "shifted"; }, "not a known convention");
  // Geometry: every field is compared, including those that never touch a byte.
  refused(dspark, sdump, [](json& m) { m["geometry"]["block_size"] = 7; }, "block_size");
  refused(dspark, sdump, [](json& m) { m["geometry"]["rope_theta"] = 1e6; }, "rope_theta");
  refused(dspark, sdump, [](json& m) { m["geometry"]["qk_rope_head_dim"] = 8; }, "qk_rope_head_dim");
  refused(dflash, fdump, [](json& m) { m["geometry"]["layer_sliding"] = {true, true}; }, "layer_sliding");
  refused(dflash, fdump, [](json& m) { m["geometry"]["layer_causal"] = {false, false}; }, "layer_causal");
  refused(dflash, fdump, [](json& m) { m["geometry"]["sliding_window"] = 16; }, "sliding_window");
  refused(dflash, fdump, [](json& m) { m["geometry"]["markov_vocab"] = 256; }, "markov_vocab");
  refused(dflash, fdump, [](json& m) { m["geometry"]["confidence"]["bias"] = false; }, "confidence.bias");
  refused(dspark, sdump, [](json& m) { m["geometry"]["target_layer_ids"] = {0, 1, 2}; }, "target_layer_ids");
  refused(dspark, sdump, [](json& m) { m["geometry"].erase("head_dim"); }, "lacks required geometry field 'head_dim'");
  // ctx comes from the manifest; a lying ctx is caught by the lengths the config predicts.
  refused(dspark, sdump, [](json& m) { m["geometry"].erase("ctx"); }, "'ctx'");
  refused(dspark, sdump, [](json& m) { m["geometry"]["ctx"] = 19; }, "array 'taps'");
  refused(dspark, sdump, [](json& m) { m["arrays"]["base_logits"]["shape"] = {7, 512}; }, "base_logits");
  // The wrong family's dump disagrees on the family field first.
  refused(dspark, fdump, [](json&) {}, "family");
  // Absent optional fields are reported, not read as agreement; the run still passes.
  DrafterParityRun run = run_drafter_parity(dspark, edited_dump(tmp, sdump, [](json& m) {
    m["geometry"].erase("sliding_window");
    m["geometry"].erase("markov_rank");
  }), nullptr);
  CHECK(run.result == "PASS");
  int absent = 0;
  for (const auto& g : run.validation.geometry) absent += g.status == "absent";
  CHECK(absent == 2);
  // Bytes that do not match the manifest's hash are REFUSED.
  DrafterParityRun h = run_drafter_parity(dspark, perturbed_dump(tmp, sdump, "final", 3, 0.5f, false), nullptr);
  CHECK(h.result == "REFUSED");
  CHECK(reasons_mention(h, "xxh3"));
  // A block id outside the vocabulary (consistent hash) is an error before any gather.
  const std::string odd = perturbed_dump(tmp, sdump, "block_ids", 3, 0.0f, true, 100000);
  require_error([&] { run_drafter_parity(dspark, odd, nullptr); }, {"block id 100000", "vocabulary"});
  // A trunk dump is not a drafter dump.
  require_error([] { DrafterDump::open(std::string(MEMRA_FIXTURES) + "/tiny/dump"); }, {"memra.drafter-dump"});
}

TEST_CASE("drafter parity: a value past the tolerance or a different token is a FAIL naming the stage",
          "[drafter][cpu][parity]") {
  TempDir tmp;
  DrafterWeights w = DrafterWeights::load(drafter_dir("tiny-dspark"));
  const std::string dump = drafter_dir("tiny-dspark") + "/dump-trunk";
  struct Case {
    const char* array;
    float delta;  // 0: flip an integer
    const char* failing;
  };
  for (const Case& c : {Case{"ctx_features", 0.01f, "ctx_features"}, Case{"stage.1.ring", 0.01f, "stage.1.ring"},
                        Case{"stage.0.hidden", 0.01f, "stage.0.hidden"}, Case{"final", 0.01f, "final"},
                        Case{"markov_logits", 0.01f, "markov_logits"}, Case{"confidence", 0.01f, "confidence"},
                        Case{"markov_tokens", 0.0f, "markov_tokens"}, Case{"draft_tokens", 0.0f, "draft_tokens"}}) {
    INFO(c.array);
    DrafterParityRun run = run_drafter_parity(w, perturbed_dump(tmp, dump, c.array, 5 % (c.delta == 0 ? 8 : 64), c.delta, true), nullptr);
    CHECK(run.result == "FAIL");
    const StageResult* s = stage(run, c.failing);
    REQUIRE(s != nullptr);
    CHECK(!s->pass);
    int failing = 0;
    for (const auto& st : run.stages) failing += !st.pass;
    CHECK(failing == 1);
  }
}

TEST_CASE("dspark rings: chunked appends are bit-exact and the block reads only the window", "[drafter][cpu]") {
  DrafterWeights dw = DrafterWeights::load(drafter_dir("tiny-dspark"));
  const DrafterConfig& c = dw.config();
  DrafterDump dump = DrafterDump::open(drafter_dir("tiny-dspark") + "/dump-trunk");
  const std::vector<float> taps = dump.f32("taps"), emb = dump.f32("block_embeddings");
  const int64_t ctx = 40, D = c.hidden_size, W = *c.sliding_window, b = c.block_size;
  DsparkWeights w(dw);
  std::vector<float> main_x(ctx * D);
  dspark_main_x(w, taps.data(), ctx, main_x.data());
  DsparkRings all = make_dspark_rings(c), one = make_dspark_rings(c), other = make_dspark_rings(c);
  dspark_ring_append(w, all, main_x.data(), ctx);
  for (int64_t t = 0; t < ctx; ++t) dspark_ring_append(w, one, main_x.data() + t * D, 1);
  CHECK(all.ring == one.ring);
  // The rings' classes (each stage's window in position order) rebuild the same rings.
  std::vector<std::vector<float>> windows;
  for (int64_t s = 0; s < c.num_layers; ++s) windows.push_back(dspark_ring_window(c, all, s));
  DsparkRings rebuilt = dspark_rings_from_windows(c, ctx, windows);
  CHECK(rebuilt.pos == all.pos);
  CHECK(rebuilt.ring == all.ring);
  windows[1].pop_back();
  require_error([&] { dspark_rings_from_windows(c, ctx, windows); }, {"stage 1 window"});
  // Positions before p-W never reach the block: replace them and the output keeps its bits.
  std::vector<float> changed = main_x;
  for (int64_t i = 0; i < (ctx - W) * D; ++i) changed[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  dspark_ring_append(w, other, changed.data(), ctx);
  DsparkBlock a = dspark_block(w, all, emb.data(), b), o = dspark_block(w, one, emb.data(), b),
              x = dspark_block(w, other, emb.data(), b);
  CHECK(a.final == o.final);
  CHECK(a.final == x.final);
  // ... while the newest window position does change it.
  changed = main_x;
  changed[(ctx - 1) * D] += 0.5f;
  DsparkRings last = make_dspark_rings(c);
  dspark_ring_append(w, last, changed.data(), ctx);
  CHECK(dspark_block(w, last, emb.data(), b).final != a.final);
}

TEST_CASE("dflash context: truncate then re-append equals a straight append (rollback)", "[drafter][cpu]") {
  DrafterWeights dw = DrafterWeights::load(drafter_dir("tiny-dflash"));
  const DrafterConfig& c = dw.config();
  DrafterDump dump = DrafterDump::open(drafter_dir("tiny-dflash") + "/dump-trunk");
  const std::vector<float> taps = dump.f32("taps"), emb = dump.f32("block_embeddings");
  const int64_t ctx = 40, D = c.hidden_size, b = c.block_size;
  DflashWeights w(dw);
  std::vector<float> feats(ctx * D);
  dflash_ctx_features(w, taps.data(), ctx, feats.data());
  DflashContext straight = make_dflash_context(c), rolled = make_dflash_context(c);
  dflash_context_append(w, straight, feats.data(), ctx);
  dflash_context_append(w, rolled, feats.data(), ctx);
  dflash_context_truncate(c, rolled, 25);
  dflash_context_append(w, rolled, feats.data() + 25 * D, ctx - 25);
  CHECK(straight.k == rolled.k);
  CHECK(straight.v == rolled.v);
  CHECK(dflash_block(w, straight, emb.data(), b).final == dflash_block(w, rolled, emb.data(), b).final);
  require_error([&] { dflash_context_truncate(c, rolled, ctx + 1); }, {"truncate"});
}

TEST_CASE("markov chain: greedy from the anchor, ties to the lower index", "[drafter][cpu]") {
  // V = 4, r = 1: bias[v] = w2[v]·w1[prev].
  const std::vector<float> w1 = {1, 0, 2, -1}, w2 = {0.5f, 0.5f, 0, 1};
  DrafterHeads h;
  h.vocab = 4;
  h.rank = 1;
  h.w1 = w1.data();
  h.w2 = w2.data();
  // Row 0 from anchor 0: base 0 + bias {0.5, 0.5, 0, 1} → 3; row 1 from 3: bias {-0.5,-0.5,0,-1} + base
  // {0.5, 0.5, 0, 0} → tie 0/1 → 0; row 2 from 0: base {1, 1, 0, 0} + {0.5, 0.5, 0, 1} → tie → 0.
  const std::vector<float> base = {0, 0, 0, 0, 0.5f, 0.5f, 0, 0, 1, 1, 0, 0};
  MarkovChain m = markov_chain(h, base, 3, 0);
  CHECK(m.tokens == std::vector<int32_t>{3, 0, 0});
  CHECK(m.logits[3] == 1.0f);
  CHECK(argmax_rows(std::vector<float>{2, 5, 5, 1}, 1, 4) == std::vector<int32_t>{1});
  require_error([&] { markov_chain(h, base, 3, 4); }, {"vocabulary"});
}

TEST_CASE("taps: the trunk's CPU trace gives the oracle's taps (mean over hc streams of a layer's input)",
          "[drafter][cpu]") {
  const Model trunk = Model::load(std::string(MEMRA_FIXTURES) + "/tiny");
  auto backend = make_backend("cpu", trunk);
  for (const char* name : {"tiny-dspark", "tiny-dflash"}) {
    INFO(name);
    DrafterConfig c = DrafterConfig::load(drafter_dir(name));
    DrafterDump dump = DrafterDump::open(drafter_dir(name) + "/dump-trunk");
    std::vector<int64_t> ids = dump.ints("tokens");
    std::vector<int32_t> tokens(ids.begin(), ids.end());
    auto state = backend->new_state(static_cast<int64_t>(tokens.size()));
    ForwardTrace trace;
    const SequenceStep step{state.get(), tokens, nullptr, &trace};
    backend->forward(std::span<const SequenceStep>(&step, 1));
    std::vector<float> got = taps_from_trace(c, trace, static_cast<int64_t>(tokens.size()), trunk.config().hc_mult);
    StageResult r = compare_values("taps", got, dump.f32("taps"), 1e-5);
    INFO(r.line());
    CHECK(r.pass);
    // tap_arrays names exactly what taps_from_trace reads: a trace holding only those gives the same taps
    ForwardTrace only;
    only.only = tap_arrays(c);
    REQUIRE_FALSE(only.only.empty());
    for (const std::string& a : only.only) only.arrays[a] = trace.arrays.at(a);
    CHECK(taps_from_trace(c, only, static_cast<int64_t>(tokens.size()), trunk.config().hc_mult) == got);
    for (int64_t j : c.tap_layer_inputs)
      if (j > 0) CHECK(std::count(only.only.begin(), only.only.end(), "hidden." + std::to_string(j - 1)) == 1);
  }
}
