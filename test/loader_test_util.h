// Shared helpers of the loader tests: a temp folder that removes itself, file writing, the fixture
// folder (a missing fixture is a test failure, never a skip), and "this throws memra::Error naming X".
#pragma once
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "core/error.h"

namespace loader_test {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("memra-loader-test-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The starter fixtures live next to the repository (MEMRA_SOURCE_DIR/../shared/fixtures).
inline std::string fixture(const std::string& name) {
  fs::path p = fs::path(MEMRA_SOURCE_DIR) / ".." / "shared" / "fixtures" / name;
  INFO("fixture folder " << p.string() << " is missing: the loader tests need the starter fixtures");
  REQUIRE(fs::is_directory(p));
  return p.string();
}

// Runs `fn`, which must throw memra::Error whose message contains every one of `needles`.
template <typename Fn>
void require_error(Fn&& fn, std::initializer_list<std::string> needles, int exit_code = memra::kExitError) {
  try {
    fn();
    FAIL("expected memra::Error mentioning '" << *needles.begin() << "', nothing was thrown");
  } catch (const memra::Error& e) {
    std::string what = e.what();
    INFO("error message: " << what);
    for (const auto& n : needles) CHECK(what.find(n) != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
    CHECK(e.exit_code() == exit_code);
  }
}

}  // namespace loader_test
