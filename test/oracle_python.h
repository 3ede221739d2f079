// The oracle venv's python for tests that compute reference numbers independently (torch's
// float8 dtypes, the `tokenizers` library). Absent venv → the caller reports itself skipped.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace oracle_test {

// ${MEMRA_VENV:-$HOME/.cache/memra/venv}/bin/python, or "" when it is not there.
inline std::string venv_python() {
  std::string venv;
  if (const char* v = std::getenv("MEMRA_VENV"); v && *v)
    venv = v;
  else if (const char* h = std::getenv("HOME"); h && *h)
    venv = std::string(h) + "/.cache/memra/venv";
  std::string py = venv + "/bin/python";
  std::error_code ec;
  return !venv.empty() && std::filesystem::exists(py, ec) ? py : std::string();
}

// Runs `python -c SCRIPT` and returns its stdout; `ok` is false when it exits non-zero.
inline std::string run_python(const std::string& python, const std::string& script, bool* ok) {
  std::string cmd = "'" + python + "' -c '" + script + "' 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    *ok = false;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *ok = ::pclose(p) == 0;
  return out;
}

}  // namespace oracle_test
