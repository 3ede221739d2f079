// memra-emu's stand-in for <cooperative_groups.h>: thread-block clusters are not emulated (the
// emulated device reports none, so the kernels that need them are never chosen); their code
// compiles, and a launch that reached one would stop at once with a message.
#pragma once
#include <cstdio>
#include <cstdlib>

namespace cooperative_groups {

struct cluster_group {
  [[noreturn]] static void unsupported() {
    std::fprintf(stderr, "memra-emu: error: a thread-block cluster kernel ran; clusters are not emulated\n");
    std::abort();
  }
  unsigned block_rank() const { unsupported(); }
  void sync() const { unsupported(); }
  template <typename T>
  T* map_shared_rank(T*, unsigned) const {
    unsupported();
  }
};
inline cluster_group this_cluster() { return {}; }

}  // namespace cooperative_groups
