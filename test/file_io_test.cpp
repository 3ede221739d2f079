// Output rules and atomic writes (core/file_io.h): special files written in place, never replaced;
// write errors are Errors; the replaced file's permissions and symlinks survive; temp files carry a
// recognisable name and the next write into the folder removes the ones whose writer died;
// check_outputs refuses an output that is an input or another output, and two stdout artifacts.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "core/error.h"
#include "core/file_io.h"
#include "loader_test_util.h"

using namespace memra;
using loader_test::read_bytes;
using loader_test::require_error;
using loader_test::TempDir;
using loader_test::write_bytes;
namespace fs = std::filesystem;

namespace {

// The PID of a process that has exited and been reaped: no process has it (until reuse).
pid_t dead_pid() {
  const pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  int status = 0;
  ::waitpid(p, &status, 0);
  return p;
}

std::string temps_in(const fs::path& dir) {
  std::string out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".memra-tmp.") != std::string::npos) out += e.path().filename().string() + " ";
  return out;
}

}  // namespace

TEST_CASE("atomic writes: temp files are named for memra, and a dead writer's are removed by the next write", "[cpu][hardening]") {
  TempDir dir;
  const std::string name = temp_file_name("out.st", 0x1234);
  CHECK(name.rfind(".out.st.memra-tmp." + std::to_string(::getpid()) + ".", 0) == 0);
  CHECK_FALSE(is_stale_temp_name(name));  // this process is alive
  // What kill -9 leaves: a temp file of a process that no longer runs (same host, same user).
  std::string stale = temp_file_name("a.st", 1);
  const std::string own_pid = std::to_string(::getpid());
  stale.replace(stale.find(own_pid), own_pid.size(), std::to_string(dead_pid()));
  CHECK(is_stale_temp_name(stale));
  write_bytes(dir.file(stale), std::string(4096, 'x'));
  const std::string live = temp_file_name("b.st", 2);  // a concurrent writer: this process
  write_bytes(dir.file(live), "y");
  std::string other_host = stale;
  const size_t at = other_host.find(".memra-tmp.") + 11;
  const size_t host_at = other_host.find('.', at) + 1;
  other_host.replace(host_at, 8, "00000000");  // another host sharing the folder: never touched
  write_bytes(dir.file(other_host), "z");
  write_bytes(dir.file(".unrelated.tmp.123"), "keep");

  write_file_atomic(dir.file("result.txt"), "hello");
  CHECK(read_bytes(dir.file("result.txt")) == "hello");
  CHECK_FALSE(fs::exists(dir.file(stale)));
  CHECK(fs::exists(dir.file(live)));
  CHECK(fs::exists(dir.file(other_host)));
  CHECK(fs::exists(dir.file(".unrelated.tmp.123")));
  SECTION("an uncommitted writer leaves no temp file") {
    { AtomicWriter w(dir.file("never.txt")); w.write("abc"); }
    CHECK_FALSE(fs::exists(dir.file("never.txt")));
    CHECK(temps_in(dir.path).find("never.txt") == std::string::npos);
  }
}

TEST_CASE("atomic writes: character devices and FIFOs are written in place, never replaced", "[cpu][hardening]") {
  SECTION("/dev/null stays the null device") {
    AtomicWriter w("/dev/null");
    CHECK_FALSE(w.seekable());
    CHECK(w.temp_path().empty());
    w.write("discarded");
    w.commit();
    struct stat st {};
    REQUIRE(::stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
  }
  SECTION("a FIFO keeps being a FIFO and its reader gets the bytes") {
    TempDir dir;
    const std::string fifo = dir.file("pipe");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::string got;
    std::thread reader([&] { got = read_bytes(fifo); });
    {
      AtomicWriter w(fifo);
      w.write("through the pipe");
      w.commit();
    }
    reader.join();
    CHECK(got == "through the pipe");
    struct stat st {};
    REQUIRE(::lstat(fifo.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
    CHECK(temps_in(dir.path).empty());
  }
  SECTION("write errors are Errors: /dev/full") {
    require_error([] { write_file_atomic("/dev/full", std::string(1 << 16, 'x')); }, {"/dev/full", "No space"});
  }
  SECTION("a directory is refused") {
    TempDir dir;
    require_error([&] { AtomicWriter w(dir.path.string()); }, {"is a directory"});
  }
}

TEST_CASE("atomic writes: a replaced file keeps its permissions, a symlink keeps pointing at it", "[cpu][hardening]") {
  TempDir dir;
  write_bytes(dir.file("secret"), "old");
  fs::permissions(dir.file("secret"), fs::perms::owner_read | fs::perms::owner_write);
  fs::create_symlink("secret", dir.file("link"));
  write_file_atomic(dir.file("link"), "new");
  CHECK(fs::is_symlink(dir.file("link")));
  CHECK(read_bytes(dir.file("secret")) == "new");
  CHECK((fs::status(dir.file("secret")).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
}

TEST_CASE("output rules: an output is never an input, another output, or a second stdout artifact", "[cpu][hardening]") {
  TempDir dir;
  write_bytes(dir.file("in.txt"), "1 2 3");
  const std::string in = dir.file("in.txt"), other = dir.file("out.st");
  require_error([&] { check_outputs({{"--tokens", in}}, {{"-o", in}}); }, {"-o", "would overwrite --tokens"});
  // The same file under another spelling.
  const std::string dotted = (dir.path / "." / "in.txt").string();
  require_error([&] { check_outputs({{"--tokens", in}}, {{"-o", dotted}}); }, {"would overwrite"});
  require_error([&] { check_outputs({}, {{"-o", other}, {"--logits", other}}); }, {"are the same file"});
  require_error([&] { check_outputs({}, {{"-o", other}, {"--logits", (dir.path / "." / "out.st").string()}}); }, {"same file"});
  require_error([&] { check_outputs({}, {{"-o", "-"}, {"--logits", "-"}}); }, {"cannot both be stdout"});
  require_error([&] { check_outputs({{"STATE", "-"}, {"--tokens", "-"}}, {}); }, {"cannot both be stdin"});
  CHECK_NOTHROW(check_outputs({{"--tokens", in}}, {{"-o", other}, {"--logits", dir.file("l.npy")}, {"x", ""}}));
  CHECK_NOTHROW(check_outputs({}, {{"-o", "/dev/null"}, {"--logits", "/dev/null"}}));  // the null device takes both
}

TEST_CASE("inputs: a file larger than allowed is refused before it is read", "[cpu][hardening]") {
  TempDir dir;
  write_bytes(dir.file("big"), std::string(1000, 'a'));
  require_error([&] { InputBytes::open(dir.file("big"), 999); }, {"1000 bytes", "999"});
  CHECK(InputBytes::open(dir.file("big"), 1000).size() == 1000);
  require_error([&] { read_text_file(dir.file("big"), 10); }, {"big"});
}
