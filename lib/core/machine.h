// What this machine offers a process: physical memory, swap, and the cgroup's memory limit. The
// memory plan (engine/memory_plan.h) and the stdin buffer limit (core/file_io.h) derive their
// defaults from these.
#pragma once
#include <cstdint>

namespace memra {

uint64_t physical_memory_bytes();  // 0 when unknown
uint64_t swap_bytes();             // SwapTotal, 0 when unknown
uint64_t cgroup_memory_limit();    // UINT64_MAX when there is none

// min(physical memory, cgroup limit) · 3/4: the default share a run may plan for.
uint64_t default_memory_share();

}  // namespace memra
