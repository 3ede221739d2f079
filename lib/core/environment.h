// The MEMRA_* variables of this process's environment: the settings and A/B switches a run was
// made under (kernels/README.md lists the CUDA backend's). `memra bench` records them with its
// results, so two result files say how their runs differed.
#pragma once
#include <map>
#include <string>

namespace memra {

// Every variable whose name starts with MEMRA_, by name; a byte of a name or value outside printable
// ASCII reads as '?' (the map goes into JSON, which takes UTF-8 only).
std::map<std::string, std::string> memra_environment();

}  // namespace memra
