// mmap-backed input, bounded stdin, temp+fsync+rename output, the output rules.
#include "core/file_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include "core/error.h"
#include "core/hash.h"
#include "core/machine.h"

namespace memra {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::atomic<uint64_t> g_stdin_limit{0};  // 0: not set, use the default share

constexpr const char* kTempTag = ".memra-tmp.";

// 8 hex digits naming this host, so a folder shared between hosts never loses a live writer's
// temp file to another host's stale-file cleanup.
const std::string& host_tag() {
  static const std::string tag = [] {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0) std::strcpy(name, "unknown");
    return xxh3_128(name, std::strlen(name)).hex().substr(0, 8);
  }();
  return tag;
}

struct FileId {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  mode_t mode = 0;
  dev_t rdev = 0;
};

FileId id_of_fd(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return {};
  return {true, st.st_dev, st.st_ino, st.st_mode, st.st_rdev};
}

FileId id_of_path(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {true, st.st_dev, st.st_ino, st.st_mode, st.st_rdev};
}

bool same(const FileId& a, const FileId& b) { return a.exists && b.exists && a.dev == b.dev && a.ino == b.ino; }

// /dev/null takes any number of writers: never "the same file" as anything.
bool is_null_device(const FileId& id) { return id.exists && S_ISCHR(id.mode) && id.rdev == makedev(1, 3); }

std::string resolved(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  return ec ? path : p.string();
}

}  // namespace

void set_stdin_limit(uint64_t bytes) { g_stdin_limit = bytes; }
uint64_t stdin_limit() {
  const uint64_t set = g_stdin_limit;
  return set ? set : default_memory_share();
}

StdinReader::~StdinReader() {
  if (owns_ && fd_ >= 0) ::close(fd_);
}

std::unique_ptr<StdinReader> StdinReader::open_stream(const std::string& path) {
  if (path == "-") return std::make_unique<StdinReader>(0);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return nullptr;  // InputBytes says why
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open " + path + ": " + errno_text(), "check the path");
  return std::make_unique<StdinReader>(fd, true);
}

size_t StdinReader::read(std::vector<uint8_t>& out, size_t n) {
  size_t got = 0;
  if (n > 0 && peeked_ >= 0) {
    out.push_back(static_cast<uint8_t>(peeked_));
    peeked_ = -1;
    ++got;
  }
  const size_t start = out.size(), want = n - got;
  out.resize(start + want);
  size_t filled = 0;
  while (filled < want) {
    const ssize_t r = ::read(fd_, out.data() + start + filled, std::min<size_t>(want - filled, 1u << 20));
    if (r < 0) {
      if (errno == EINTR) continue;
      out.resize(start + filled);
      throw Error("cannot read stdin: " + errno_text());
    }
    if (r == 0) break;
    filled += static_cast<size_t>(r);
  }
  out.resize(start + filled);
  consumed_ += got + filled;
  return got + filled;
}

bool StdinReader::at_end() {
  if (peeked_ >= 0) return false;
  unsigned char c;
  for (;;) {
    const ssize_t r = ::read(fd_, &c, 1);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot read stdin: " + errno_text());
    }
    if (r == 0) return true;
    peeked_ = c;
    return false;
  }
}

InputBytes InputBytes::open(const std::string& path, uint64_t max_bytes) {
  InputBytes in;
  in.path_ = path;
  if (path == "-") {
    const uint64_t limit = std::min(max_bytes, stdin_limit());
    StdinReader reader;
    // Read in pieces up to the limit, then one byte more to tell "exactly the limit" from "more".
    while (in.owned_.size() < limit) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(limit - in.owned_.size(), 1u << 20));
      if (reader.read(in.owned_, want) < want) break;
    }
    if (in.owned_.size() >= limit && !reader.at_end())
      throw Error("stdin holds more than " + std::to_string(limit) + " bytes, the most memra reads from it here",
                  limit == max_bytes ? "this input is never that large; check what is piped in"
                                     : "write it to a file and pass the path (files are mapped, not buffered), or raise --max-memory");
    in.data_ = in.owned_.data();
    in.size_ = in.owned_.size();
    return in;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open " + path + ": " + errno_text(), "check the path");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error("cannot stat " + path + ": " + errno_text());
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(path + " is a directory, expected a file");
  }
  if (!S_ISREG(st.st_mode)) {  // a pipe or device given by name: read it like stdin, bounded
    StdinReader reader(fd);
    const uint64_t limit = std::min(max_bytes, stdin_limit());
    while (in.owned_.size() < limit) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(limit - in.owned_.size(), 1u << 20));
      size_t got = 0;
      try {
        got = reader.read(in.owned_, want);
      } catch (const Error&) {
        ::close(fd);
        throw Error("cannot read " + path + ": " + errno_text());
      }
      if (got < want) break;
    }
    const bool more = in.owned_.size() >= limit && !reader.at_end();
    ::close(fd);
    if (more) throw Error(path + " gives more than " + std::to_string(limit) + " bytes, the most memra reads from it here");
    in.data_ = in.owned_.data();
    in.size_ = in.owned_.size();
    return in;
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw Error(path + " is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                " allowed here");
  }
  in.size_ = static_cast<size_t>(st.st_size);
  if (in.size_ > 0) {
    void* m = ::mmap(nullptr, in.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      ::close(fd);
      throw Error("cannot map " + path + ": " + errno_text());
    }
    in.map_ = m;
    in.data_ = static_cast<const uint8_t*>(m);
  }
  ::close(fd);
  return in;
}

InputBytes InputBytes::from_buffer(std::string path, std::vector<uint8_t> bytes) {
  InputBytes in;
  in.path_ = std::move(path);
  in.owned_ = std::move(bytes);
  in.data_ = in.owned_.data();
  in.size_ = in.owned_.size();
  return in;
}

InputBytes::InputBytes(InputBytes&& o) noexcept { *this = std::move(o); }
InputBytes& InputBytes::operator=(InputBytes&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, size_);
    path_ = std::move(o.path_);
    owned_ = std::move(o.owned_);
    map_ = o.map_;
    size_ = o.size_;
    data_ = map_ ? static_cast<const uint8_t*>(map_) : owned_.data();
    o.map_ = nullptr;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}
InputBytes::~InputBytes() {
  if (map_) ::munmap(map_, size_);
}

std::string temp_file_name(const std::string& final_name, uint64_t random) {
  char rnd[17];
  std::snprintf(rnd, sizeof rnd, "%016llx", static_cast<unsigned long long>(random));
  // Long names are cut so the temp name stays within NAME_MAX (255).
  return "." + final_name.substr(0, 160) + kTempTag + std::to_string(::getpid()) + "." + host_tag() + "." + rnd;
}

bool is_stale_temp_name(const std::string& name) {
  const size_t at = name.rfind(kTempTag);
  if (name.empty() || name[0] != '.' || at == std::string::npos) return false;
  // PID.HOST.RANDOM
  const std::string rest = name.substr(at + std::strlen(kTempTag));
  const size_t d1 = rest.find('.'), d2 = d1 == std::string::npos ? d1 : rest.find('.', d1 + 1);
  if (d2 == std::string::npos) return false;
  const std::string pid = rest.substr(0, d1), host = rest.substr(d1 + 1, d2 - d1 - 1);
  if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) return false;
  if (host != host_tag()) return false;
  const pid_t p = static_cast<pid_t>(std::stol(pid));
  if (p <= 0) return false;
  return ::kill(p, 0) != 0 && errno == ESRCH;  // no such process: its writer died
}

int remove_stale_temps(const std::filesystem::path& dir) {
  int removed = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir.empty() ? "." : dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(kTempTag) == std::string::npos || !is_stale_temp_name(name)) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (::unlink(it->path().c_str()) == 0) ++removed;
  }
  return removed;
}

AtomicWriter::AtomicWriter(const std::string& path) : path_(path), target_(path) {
  if (path == "-") {
    fd_ = 1;
    in_place_ = true;
    return;
  }
  std::filesystem::path p(path);
  if (p.filename().empty()) throw Error("output path '" + path + "' names no file");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw Error("output " + path + " is a directory", "give a file path");
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      // Written in place: a rename would replace the device or pipe with a regular file.
      fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd_ < 0) throw Error("cannot open " + path + " for writing: " + errno_text());
      in_place_ = true;
      return;
    }
    if (!S_ISREG(st.st_mode))
      throw Error("output " + path + " is a block device or socket", "memra writes regular files, character devices and pipes");
    // A symlink to a file: replace the file it points to, keep the link.
    std::error_code ec;
    const auto real = std::filesystem::canonical(p, ec);
    if (!ec) target_ = real.string();
  }
  const std::filesystem::path target(target_);
  remove_stale_temps(target.parent_path());
  std::random_device rd;
  const uint64_t random = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  temp_path_ = (target.parent_path() / temp_file_name(target.filename().string(), random)).string();
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create " + path + ": " + errno_text(), "check that the folder exists and is writable");
  if (::stat(target_.c_str(), &st) == 0) ::fchmod(fd_, st.st_mode & 07777);  // the replaced file's permissions
}

AtomicWriter::~AtomicWriter() {
  if (fd_ > 1) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicWriter::write(const void* data, size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, std::min<size_t>(size, 1u << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE && fd_ == 1) throw BrokenPipe();
      throw Error("cannot write " + (fd_ == 1 ? std::string("stdout") : path_) + ": " + errno_text());
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicWriter::write_at(uint64_t offset, const void* data, size_t size) {
  if (in_place_) throw Error("cannot rewrite bytes already sent to " + (fd_ == 1 ? std::string("stdout") : path_));
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    ssize_t n = ::pwrite(fd_, p, std::min<size_t>(size, 1u << 30), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot write " + path_ + ": " + errno_text());
    }
    p += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
}

void AtomicWriter::commit() {
  if (fd_ == 1) {
    committed_ = true;
    return;
  }
  if (in_place_) {  // a device or pipe: nothing to sync or rename, but a failing close is an error
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw Error("cannot write " + path_ + ": " + errno_text());
    committed_ = true;
    return;
  }
  if (::fsync(fd_) != 0) throw Error("cannot sync " + path_ + ": " + errno_text());
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw Error("cannot write " + path_ + ": " + errno_text());
  if (::rename(temp_path_.c_str(), target_.c_str()) != 0)
    throw Error("cannot rename into " + path_ + ": " + errno_text());
  committed_ = true;
  std::string dir = std::filesystem::path(target_).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicWriter w(path);
  w.write(bytes);
  w.commit();
}

std::string read_text_file(const std::string& path, size_t max_bytes) {
  InputBytes in = InputBytes::open(path, max_bytes);
  return std::string(reinterpret_cast<const char*>(in.data()), in.size());
}

void check_outputs(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  const std::string hint = "give each output its own file, not one the command reads or writes elsewhere";
  const FileId out_id = id_of_fd(1), in_id = id_of_fd(0);
  auto show = [](const NamedPath& p) { return p.what + " " + (p.path == "-" ? std::string("-") : p.path); };
  const NamedPath* stdin_user = nullptr;
  for (const auto& in : inputs) {
    if (in.path.empty()) continue;
    if (in.path == "-") {
      if (stdin_user) throw Error(show(*stdin_user) + " and " + show(in) + " cannot both be stdin", "read one of them from a file");
      stdin_user = &in;
      continue;
    }
    const FileId id = id_of_path(in.path);
    if (id.exists && S_ISREG(id.mode) && same(id, out_id))
      throw Error(show(in) + " is also this command's stdout (a shell redirection emptied it before memra started)",
                  "redirect stdout to another file");
  }
  const NamedPath* stdout_user = nullptr;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& o = outputs[i];
    if (o.path.empty()) continue;
    if (o.path == "-") {
      if (stdout_user)
        throw Error(show(*stdout_user) + " and " + show(o) + " cannot both be stdout (two artifacts would interleave)",
                    "write one of them to a file");
      stdout_user = &o;
      continue;
    }
    const FileId id = id_of_path(o.path);
    if (is_null_device(id)) continue;
    if (id.exists && !S_ISREG(id.mode) && same(id, out_id))
      throw Error(show(o) + " is this command's stdout", "write - instead, so the report moves to stderr");
    for (const auto& in : inputs) {
      if (in.path.empty()) continue;
      const bool hit = in.path == "-" ? same(id, in_id) : (same(id, id_of_path(in.path)) || resolved(in.path) == resolved(o.path));
      if (hit) throw Error(show(o) + " would overwrite " + show(in) + ", an input of this command", hint);
    }
    for (size_t j = 0; j < i; ++j) {
      const NamedPath& p = outputs[j];
      if (p.path.empty() || p.path == "-") continue;
      if (same(id, id_of_path(p.path)) || resolved(p.path) == resolved(o.path))
        throw Error(show(o) + " and " + show(p) + " are the same file (one artifact would replace the other)", hint);
    }
  }
}

}  // namespace memra
