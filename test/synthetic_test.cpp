// The synthetic value stream (lib/model/synthetic.h) against values bench/transformers_bench.py
// computes in torch (`transformers_bench.py --check-values`, recorded here): memra bench and the
// transformers side build the same weights and prompts from a seed only if these agree. A changed
// constant in either implementation fails here. (Planted: the token stride 0x85ebca6b → 0x85ebca6c;
// every check failed; reverted.)
#include <catch2/catch.hpp>

#include <cmath>

#include "model/synthetic.h"
#include "model/v4_geometry.h"

using namespace memra;

TEST_CASE("synthetic stream matches the torch implementation", "[cpu]") {
  const uint32_t key = synthetic_key("layers.0.attn.wq_a.weight", 1);
  CHECK(key == 45426604u);
  const float scale = static_cast<float>(std::sqrt(3.0 / 4096.0));
  const float want[4] = {0.01251220703125f, 0.023681640625f, 0.00439453125f, -0.002960205078125f};
  for (int i = 0; i < 4; ++i) CHECK(synthetic_value(key, i, scale, 0.0f) == want[i]);
  const int32_t tokens[6] = {1755, 364, 1496, 4, 3731, 3818};
  for (int i = 0; i < 6; ++i) CHECK(synthetic_token("prompt", 1, i, 4096) == tokens[i]);
}

TEST_CASE("V4-Flash geometry: schedule and state bytes per token", "[cpu]") {
  const std::string s = v4_flash_schedule();
  REQUIRE(s.size() == 43);
  CHECK(s.substr(0, 3) == "SSC");
  CHECK(s.back() == 'C');
  int csa = 0, hca = 0;
  for (char c : s) csa += c == 'C', hca += c == 'H';
  CHECK(csa == 21);
  CHECK(hca == 20);
  const ModelConfig c = v4_flash_config("CH", 4096);
  CHECK(c.hidden_size == 4096);
  CHECK(c.head_dim == 512);
  CHECK(c.compress_ratio(0) == 4);
  CHECK(c.compress_ratio(1) == 128);
  CHECK_THROWS(v4_flash_config("CX", 4096));
}
