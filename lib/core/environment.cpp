// memra_environment: a walk over environ.
#include "core/environment.h"

#include <unistd.h>

#include <cstring>

extern char** environ;

namespace memra {

namespace {

std::string printable(const char* p, size_t n) {
  std::string s(p, n);
  for (char& c : s)
    if (c < 0x20 || c > 0x7e) c = '?';
  return s;
}

}  // namespace

std::map<std::string, std::string> memra_environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const char* entry = *e;
    if (std::strncmp(entry, "MEMRA_", 6) != 0) continue;
    const char* eq = std::strchr(entry, '=');
    if (!eq) continue;
    out[printable(entry, static_cast<size_t>(eq - entry))] = printable(eq + 1, std::strlen(eq + 1));
  }
  return out;
}

}  // namespace memra
