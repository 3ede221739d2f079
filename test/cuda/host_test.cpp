// The CUDA backend's host-side logic, checked without a GPU (runs in CI):
//  - the device state's classes (trunk_specs) equal the CPU trunk's (trunk_layout) at every position
//    0…300 and a few large ones, for every bundled checkpoint geometry;
//  - a round plan's closings and visible-entry counts equal a brute-force count per position;
//  - the layer split covers every layer once, contiguously, in device order;
//  - the kernels' limits accept the bundled checkpoints.
#include <set>

#include "cuda_backend.h"
#include "device_state.h"
#include "harness.h"
#include "model/config.h"
#include "shard.h"

namespace memra::cuda::test {

int run_host(const std::vector<std::string>& models) {
  Report rep;
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
