// The CUDA backend's host-side logic, checked without a GPU (runs in CI):
//  - the device state's classes (trunk_specs) equal the CPU trunk's (trunk_layout) at every position
//    0…300 and a few large ones, for every bundled checkpoint geometry;
//  - a round plan's closings and visible-entry counts equal a brute-force count per position;
//  - the layer split covers every layer once, contiguously, in device order;
//  - the kernels' limits accept the bundled checkpoints;
//  - the packed-weight decoders the kernels run (packed_decode.h, compiled here for the host) give
//    lib/format/quant.h's values bit for bit: every e8m0 byte, every FP8 code and FP4 nibble in
//    every position of a lane step, at scales from 2^-127 to 2^127 and NaN;
//  - the A/B switch readers (ab_switch.h): on unless "0", a count only when positive, a choice only
//    when its text is exactly one of the named values.
#include <cmath>
#include <set>

#include "format/quant.h"
#include "packed_decode.h"

#include "ab_switch.h"

#include "cuda_backend.h"
#include "device_state.h"
#include "harness.h"
#include "model/config.h"
#include "shard.h"

namespace memra::cuda::test {

namespace {

bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0; }

void check_switches(Report& rep) {
  constexpr const char* kVar = "MEMRA_TEST_AB_SWITCH";
  struct Case {
    const char* value;  // null: unset
    bool on;
    int count;
    int zero_or_count;
    bool one;
  };
  const Case cases[] = {{nullptr, true, 7, 7, false}, {"0", false, 7, 0, false}, {"1", true, 1, 1, true},
                        {"00", true, 7, 7, false},    {"", true, 7, 7, false},   {"-3", true, 7, 7, false},
                        {"x", true, 7, 7, false},     {"32", true, 32, 32, false}, {"1 ", true, 1, 1, false}};
  int bad = 0;
  for (const Case& c : cases) {
    if (c.value) setenv(kVar, c.value, 1);
    else unsetenv(kVar);
    bad += switch_on(kVar) != c.on || switch_count(kVar, 7) != c.count || switch_zero_or_count(kVar, 7) != c.zero_or_count ||
           switch_one(kVar) != c.one;
  }
  unsetenv(kVar);
  rep.add("A/B switch readers (on unless \"0\", positive counts, \"0\" or a count, exactly \"1\")", bad == 0,
          std::to_string(bad) + " of 9 cases wrong");
  // switch_choice: exactly one of the choices' decimal texts, else the fallback (-1 here).
  struct Choice {
    const char* value;
    int want;
  };
  const Choice choices[] = {{nullptr, -1}, {"0", 0}, {"4", 4}, {"8", 8}, {"2", -1}, {"04", -1},
                            {"4x", -1},    {"", -1}, {" 4", -1}, {"-1", -1}, {"16", -1}};
  int wrong = 0;
  for (const Choice& c : choices) {
    if (c.value) setenv(kVar, c.value, 1);
    else unsetenv(kVar);
    wrong += switch_choice(kVar, {0, 4, 8}, -1) != c.want;
  }
  unsetenv(kVar);
  rep.add("A/B switch choice (exactly one of the named values, else the fallback)", wrong == 0,
          std::to_string(wrong) + " of 11 cases wrong");
}

void check_packed_decode(Report& rep) {
  int64_t checked = 0, bad = 0;
  std::string first;
  auto expect = [&](float got, float want, const std::string& what) {
    ++checked;
    if (same_value(got, want)) return;
    if (bad++ == 0) first = " first: " + what + " gave " + fmt("%.9g", got) + " want " + fmt("%.9g", want);
  };
  for (uint32_t e = 0; e < 256; ++e) expect(e8m0_f32(e), e8m0_to_f32(static_cast<uint8_t>(e)), "e8m0 " + std::to_string(e));
  for (uint32_t s : {0u, 1u, 2u, 100u, 117u, 121u, 127u, 128u, 133u, 200u, 253u, 254u, 255u}) {
    const float scale = e8m0_f32(s), cpu_scale = e8m0_to_f32(static_cast<uint8_t>(s));
    const std::string at = " scale byte " + std::to_string(s);
    for (uint32_t c = 0; c < 256; ++c) {
      const float want = e4m3_to_f32(static_cast<uint8_t>(c)) * cpu_scale;
      const uint8_t byte = static_cast<uint8_t>(c);
      expect(fp8_at(&byte, 0, scale), want, "fp8 code " + std::to_string(c) + at);
      for (int j = 0; j < 8; ++j) {  // code c at position j of an 8-byte step, the others 0x38 (1.0)
        uint8_t step[8];
        std::memset(step, 0x38, 8);
        step[j] = byte;
        uint32_t lo, hi;
        std::memcpy(&lo, step, 4);
        std::memcpy(&hi, step + 4, 4);
        float out[8];
        fp8x8_f32(lo, hi, scale, out);
        for (int i = 0; i < 8; ++i)
          expect(out[i], i == j ? want : 1.0f * cpu_scale, "fp8 code " + std::to_string(c) + " at " + std::to_string(j) + at);
      }
    }
    for (uint32_t n = 0; n < 16; ++n) {
      const float want = e2m1_to_f32(static_cast<uint8_t>(n)) * cpu_scale;
      for (int j = 0; j < 8; ++j) {  // nibble n at position j of a 4-byte step, the others 2 (1.0)
        uint8_t step[4];
        std::memset(step, 0x22, 4);
        step[j / 2] = static_cast<uint8_t>(j % 2 ? (0x02 | (n << 4)) : (0x20 | n));
        uint32_t v;
        std::memcpy(&v, step, 4);
        float out[8];
        fp4x8_f32(v, scale, out);
        for (int i = 0; i < 8; ++i)
          expect(out[i], i == j ? want : 1.0f * cpu_scale, "fp4 nibble " + std::to_string(n) + " at " + std::to_string(j) + at);
        expect(fp4_at(step, j, scale), want, "fp4_at nibble " + std::to_string(n) + " at " + std::to_string(j) + at);
      }
    }
  }
  rep.add("packed decoders == lib/format/quant.h (bits)", bad == 0,
          std::to_string(checked - bad) + "/" + std::to_string(checked) + " values equal" + first);
}

}  // namespace

int run_host(const std::vector<std::string>& models) {
  Report rep;
  check_packed_decode(rep);
  check_switches(rep);
  for (const std::string& dir : models) {
    const std::string tag = " [" + dir.substr(dir.find_last_of('/') + 1) + "]";
    try {
      const ModelConfig cfg = ModelConfig::load(dir);
      int checked = 0;
      std::vector<int64_t> positions;
      for (int64_t p = 0; p <= 300; ++p) positions.push_back(p);
      for (int64_t p : {1000, 4095, 4096, 65537, 1000003}) positions.push_back(p);
      for (int64_t p : positions) {
        trunk_specs(cfg, p);  // throws when it disagrees with trunk_layout
        ++checked;
      }
      rep.add("device classes == cpu trunk_layout" + tag, checked == static_cast<int>(positions.size()),
              std::to_string(checked) + " positions");

      // closings: a round of sequences at assorted positions against a per-position count
      RoundPlan plan;
      const std::vector<std::pair<int32_t, int32_t>> seqs = {{0, 1}, {0, 64}, {3, 1}, {7, 30}, {15, 2}, {31, 100}};
      for (auto [pos0, T] : seqs) plan_add_sequence(plan, cfg, pos0, std::vector<int32_t>(T, 2));
      std::set<std::pair<int32_t, int32_t>> want_csa, want_hca, got_csa, got_hca;
      int vis_csa = 0, vis_hca = 0;
      for (size_t s = 0; s < seqs.size(); ++s)
        for (int32_t t = 0; t < seqs[s].second; ++t) {
          const int32_t p = seqs[s].first + t;
          if ((p + 1) % cfg.csa_rate == 0) want_csa.insert({static_cast<int32_t>(s), (p + 1) / static_cast<int32_t>(cfg.csa_rate) - 1});
          if ((p + 1) % cfg.hca_rate == 0) want_hca.insert({static_cast<int32_t>(s), (p + 1) / static_cast<int32_t>(cfg.hca_rate) - 1});
          vis_csa = std::max<int>(vis_csa, (p + 1) / cfg.csa_rate);
          vis_hca = std::max<int>(vis_hca, (p + 1) / cfg.hca_rate);
        }
      for (const Closing& c : plan.closings_csa) got_csa.insert({c.seq, c.entry});
      for (const Closing& c : plan.closings_hca) got_hca.insert({c.seq, c.entry});
      bool rows_ok = plan.rows() == 198;
      for (size_t s = 0; s < seqs.size(); ++s) rows_ok = rows_ok && plan.seqs[s].pos0 == seqs[s].first && plan.seqs[s].T == seqs[s].second;
      rep.add("round plan closings and visible counts" + tag,
              got_csa == want_csa && got_hca == want_hca && plan.closings_csa.size() == want_csa.size() &&
                  plan.closings_hca.size() == want_hca.size() && vis_csa == plan.max_visible_csa &&
                  vis_hca == plan.max_visible_hca && rows_ok,
              std::to_string(want_csa.size()) + " CSA and " + std::to_string(want_hca.size()) + " HCA closings");

      bool split_ok = true;
      for (int S = 1; S <= cfg.num_hidden_layers; ++S) {
        std::vector<int> devs(S);
        for (int i = 0; i < S; ++i) devs[i] = i;
        const Placement p = split_layers(devs, cfg.num_hidden_layers);
        std::set<int> used;
        for (size_t l = 0; l < p.layer_shard.size(); ++l) {
          used.insert(p.layer_shard[l]);
          if (l > 0 && p.layer_shard[l] < p.layer_shard[l - 1]) split_ok = false;
        }
        split_ok = split_ok && static_cast<int>(used.size()) == S && p.layer_shard.size() == static_cast<size_t>(cfg.num_hidden_layers);
      }
      rep.add("layer split over 1..L devices" + tag, split_ok, split_ok ? "contiguous, every device used" : "BAD");
      check_supported(cfg);
      rep.add("kernel limits accept the geometry" + tag, true, "");
    } catch (const std::exception& e) {
      rep.add("host checks" + tag, false, std::string("threw: ") + e.what());
    }
  }
  rep.table("CUDA backend host logic (no GPU needed)");
  return rep.all_pass() ? 0 : 1;
}

}  // namespace memra::cuda::test
