// Machine memory queries (sysconf, /proc/meminfo, cgroup v2 and v1 limit files).
#include "core/machine.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace memra {

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

uint64_t swap_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t value = 0;
  while (in >> key >> value >> unit)
    if (key == "SwapTotal:") return value * 1024;
  return 0;
}

uint64_t cgroup_memory_limit() {
  uint64_t limit = UINT64_MAX;
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string text;  // a number, or "max" (no limit)
    if (!(in >> text) || text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
      continue;
    limit = std::min<uint64_t>(limit, std::stoull(text));
  }
  return limit;
}

uint64_t default_memory_share() {
  uint64_t phys = std::min(physical_memory_bytes(), cgroup_memory_limit());
  if (phys == 0) phys = uint64_t{4} << 30;  // unknown: assume a small machine
  return phys / 4 * 3;
}

}  // namespace memra
