// The fault table of the `memra_faults` test build (docs/faults.md): one name per planted bug, the
// one the environment variable MEMRA_FAULT selects. Empty in every other build.
#ifdef MEMRA_FAULTS
#include "engine/faults.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "core/error.h"

namespace memra {

namespace {

struct Fault {
  const char* name;
  const char* what;
};

// THE table: docs/faults.md lists the same names with the stage that catches each.
constexpr Fault kFaults[] = {
    {"mhc_transposed", "hc_post applies the mixing matrix C instead of its transpose"},
    {"sinkhorn_short", "one Sinkhorn normalisation iteration too few"},
    {"csa_window_shift", "CSA compressor windows close one position early (overlap window shifted by one)"},
    {"carry_lost", "the CSA carry (previous window's Ca rows) is lost when a window closes in a one-token call"},
    {"tie_higher_index", "top-k ties go to the higher index instead of the lower"},
    {"yarn_on_sliding", "sliding layers use the compressed layers' RoPE table (YaRN, compress_rope_theta)"},
    {"sink_dropped", "the attention sink is left out of the softmax denominator"},
    {"hash_row_off", "hash routing reads tid2eid one row off (token id + 1)"},
    {"route_scale_dropped", "routed expert weights are not multiplied by routed_scaling_factor"},
    {"inverse_rope_skipped", "the attention output is not rotated back by -pos"},
};

const char* selected() {
  static const char* const value = [] {
    const char* env = std::getenv("MEMRA_FAULT");
    if (!env || !*env) return static_cast<const char*>(nullptr);
    for (const Fault& f : kFaults)
      if (std::strcmp(f.name, env) == 0) {
        std::cerr << "memra: fault build: planted fault '" << f.name << "' is active (" << f.what << ")\n";
        return f.name;
      }
    std::string names;
    for (const Fault& f : kFaults) names += std::string(names.empty() ? "" : ", ") + f.name;
    throw Error("MEMRA_FAULT='" + std::string(env) + "' is not a planted fault", "known faults: " + names);
  }();
  return value;
}

}  // namespace

bool fault_active(const char* name) {
  bool known = false;
  for (const Fault& f : kFaults) known = known || std::strcmp(f.name, name) == 0;
  if (!known) throw Error(std::string("internal: fault hook '") + name + "' is not in the fault table");
  const char* s = selected();
  return s && std::strcmp(s, name) == 0;
}

}  // namespace memra
#endif  // MEMRA_FAULTS
