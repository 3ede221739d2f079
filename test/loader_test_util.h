// Shared helpers of the loader tests: a temp folder that removes itself, file writing, the fixture
// folder (a missing fixture is a test failure, never a skip), and "this throws memra::Error naming X".
#pragma once
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace loader_test {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("memra-loader-test-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The starter fixtures: test/fixtures/NAME inside the repository (test/fixtures/README.md).
inline std::string fixture(const std::string& name) {
  fs::path p = fs::path(MEMRA_SOURCE_DIR) / "test" / "fixtures" / name;
  INFO("fixture folder " << p.string() << " is missing: the loader tests need the starter fixtures");
  REQUIRE(fs::is_directory(p));
  return p.string();
}

// Runs `fn`, which must throw memra::Error whose message contains every one of `needles`.
template <typename Fn>
void require_error(Fn&& fn, std::initializer_list<std::string> needles, int exit_code = memra::kExitError) {
  try {
    fn();
    FAIL("expected memra::Error mentioning '" << *needles.begin() << "', nothing was thrown");
  } catch (const memra::Error& e) {
    std::string what = e.what();
    INFO("error message: " << what);
    for (const auto& n : needles) CHECK(what.find(n) != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
    CHECK(e.exit_code() == exit_code);
  }
}

// The upstream (DeepSeek inference) spelling of a transformers-form config.
inline nlohmann::json to_upstream(nlohmann::json hf, const std::vector<int>& ratios, int n_hash) {
  const std::pair<const char*, const char*> renames[] = {
      {"hidden_size", "dim"},         {"num_hidden_layers", "n_layers"},  {"num_attention_heads", "n_heads"},
      {"sliding_window", "window_size"}, {"num_experts_per_tok", "n_activated_experts"},
      {"moe_intermediate_size", "moe_inter_dim"}, {"scoring_func", "score_func"},
      {"routed_scaling_factor", "route_scale"}, {"rms_norm_eps", "norm_eps"}};
  for (const auto& [from, to] : renames) {
    hf[to] = hf[from];
    hf.erase(from);
  }
  nlohmann::json compress = hf["rope_parameters"]["compress"];
  for (const char* k : {"layer_types", "compress_rates", "mlp_layer_types", "partial_rotary_factor", "rope_parameters"})
    hf.erase(k);
  hf["compress_ratios"] = ratios;
  hf["num_hash_layers"] = n_hash;
  if (compress["rope_type"] == "yarn") {
    nlohmann::json flat = {{"type", "yarn"}, {"factor", compress["factor"]},
                 {"original_max_position_embeddings", compress["original_max_position_embeddings"]}};
    hf["rope_scaling"] = flat;
  } else {
    hf["rope_scaling"] = nullptr;  // stated: no YaRN (a missing rope_scaling is refused)
  }
  return hf;
}

}  // namespace loader_test
