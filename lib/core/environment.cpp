// memra_environment: a walk over environ.
#include "core/environment.h"

#include <cstring>

extern char** environ;

namespace memra {

std::map<std::string, std::string> memra_environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const char* entry = *e;
    if (std::strncmp(entry, "MEMRA_", 6) != 0) continue;
    const char* eq = std::strchr(entry, '=');
    if (!eq) continue;
    out[std::string(entry, eq)] = eq + 1;
  }
  return out;
}

}  // namespace memra
