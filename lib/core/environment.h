// The MEMRA_* variables of this process's environment: the settings and A/B switches a run was
// made under (kernels/README.md lists the CUDA backend's). `memra bench` records them with its
// results, so two result files say how their runs differed.
#pragma once
#include <map>
#include <string>

namespace memra {

// Every variable whose name starts with MEMRA_, by name, names and values as set (raw bytes: a
// caller that writes them into JSON or a message passes them through printable(), format/json_guard.h).
std::map<std::string, std::string> memra_environment();

}  // namespace memra
