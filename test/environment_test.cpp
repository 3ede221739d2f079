// memra_environment (core/environment.h): the MEMRA_* variables set in this process, nothing else,
// their values as set; printable() (format/json_guard.h), which memra bench passes them through
// into its JSON, escapes their control and non-UTF-8 bytes.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "core/environment.h"
#include "format/json_guard.h"

TEST_CASE("memra_environment lists the MEMRA_ variables as set", "[cpu]") {
  setenv("MEMRA_TEST_ENV_SWITCH", "0", 1);
  setenv("MEMRA_TEST_ENV_BYTES", "a\tb\xff", 1);
  setenv("NOT_MEMRA_TEST_ENV", "1", 1);
  const auto env = memra::memra_environment();
  unsetenv("MEMRA_TEST_ENV_SWITCH");
  unsetenv("MEMRA_TEST_ENV_BYTES");
  unsetenv("NOT_MEMRA_TEST_ENV");
  REQUIRE(env.count("MEMRA_TEST_ENV_SWITCH") == 1);
  CHECK(env.at("MEMRA_TEST_ENV_SWITCH") == "0");
  CHECK(env.at("MEMRA_TEST_ENV_BYTES") == "a\tb\xff");
  CHECK(memra::printable(env.at("MEMRA_TEST_ENV_BYTES")) == "a\\x09b\\xff");
  CHECK(env.count("NOT_MEMRA_TEST_ENV") == 0);
  for (const auto& [name, value] : env) CHECK(name.rfind("MEMRA_", 0) == 0);
  CHECK(memra::memra_environment().count("MEMRA_TEST_ENV_SWITCH") == 0);  // unset: gone
}
