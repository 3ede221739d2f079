// memra-emu's racecheck (racecheck.cpp): what the scheduler and the emulated intrinsics call.
#pragma once
#include <cstddef>

namespace memra::emu {

struct Block;
void racecheck_begin(const void* kernel);  // a launch starts
long racecheck_end();                      // the launch's hazards (each already reported)
void racecheck_block_done(Block& b);       // a block's shadow is dropped
// Accesses the instrumentation cannot see (the emulated ldmatrix's and cp.async's copies).
void shadow_read(const void* p, size_t n);
void shadow_write(const void* p, size_t n);

}  // namespace memra::emu
