// Planted faults for mutation testing (docs/faults.md): each MEMRA_FAULT("name") marks one site
// where a known porting bug can be switched on, to prove that parity catches it. Only the
// `memra_faults` test build defines MEMRA_FAULTS; in the release `memra` every hook is the
// constant false and compiles away, so no fault code or name is in the shipped binary.
#pragma once

#ifdef MEMRA_FAULTS
namespace memra {
// True when the environment variable MEMRA_FAULT names this fault. Throws Error for a name that
// is not in the fault table (lib/engine/faults.cpp), so a typo never tests nothing.
bool fault_active(const char* name);
}  // namespace memra
#define MEMRA_FAULT(name) (::memra::fault_active(name))
#else
#define MEMRA_FAULT(name) false
#endif
