// mmap-backed input and temp+fsync+rename output.
#include "core/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "core/error.h"

namespace memra {

static std::string errno_text() { return std::strerror(errno); }

InputBytes InputBytes::open(const std::string& path) {
  InputBytes in;
  in.path_ = path;
  if (path == "-") {
    uint8_t buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw Error("cannot read stdin: " + errno_text());
      }
      if (n == 0) break;
      in.owned_.insert(in.owned_.end(), buf, buf + n);
    }
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

AtomicWriter::AtomicWriter(const std::string& path) : path_(path) {
  if (path == "-") {
    fd_ = 1;
    return;
  }
  std::random_device rd;
  std::filesystem::path p(path);
  std::string name = p.filename().string();
  if (name.empty()) throw Error("output path '" + path + "' names no file");
  temp_path_ = (p.parent_path() / ("." + name + ".tmp." + std::to_string(rd()))).string();
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create " + path + ": " + errno_text(), "check that the folder exists and is writable");
}

AtomicWriter::~AtomicWriter() {
  if (fd_ > 1) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicWriter::write(const void* data, size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE && fd_ == 1) throw BrokenPipe();
      throw Error("cannot write " + path_ + ": " + errno_text());
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicWriter::write_at(uint64_t offset, const void* data, size_t size) {
  if (fd_ == 1) throw Error("cannot rewrite bytes already sent to stdout");
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
  if (::fsync(fd_) != 0) throw Error("cannot sync " + path_ + ": " + errno_text());
  ::close(fd_);
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    throw Error("cannot rename into " + path_ + ": " + errno_text());
  committed_ = true;
  std::string dir = std::filesystem::path(path_).parent_path().string();
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
  InputBytes in = InputBytes::open(path);
  if (in.size() > max_bytes)
    throw Error(path + " is " + std::to_string(in.size()) + " bytes, more than the " +
                std::to_string(max_bytes) + " allowed for a text file");
  return std::string(reinterpret_cast<const char*>(in.data()), in.size());
}

}  // namespace memra
