// Owning handles for device and pinned host memory. Allocation failures throw memra::Error (out of
// device memory names the size and what it was for); release never throws.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

namespace memra::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, size_t bytes, const char* what);
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  int device() const { return device_; }
  void release();

 private:
  int device_ = -1;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A grow-only scratch array of T on one device (contents are not kept when it grows).
template <typename T>
class Scratch {
 public:
  T* ensure(int device, size_t count, const char* what) {
    if (count == 0) count = 1;
    if (buf_.bytes() < count * sizeof(T)) {
      buf_.release();
      buf_ = DeviceBuffer(device, count * sizeof(T) + count * sizeof(T) / 4, what);  // 25% headroom
    }
    return buf_.as<T>();
  }
  T* get() const { return buf_.as<T>(); }
  size_t bytes() const { return buf_.bytes(); }

 private:
  DeviceBuffer buf_;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(size_t bytes, const char* what);
  ~PinnedBuffer() { release(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept { *this = std::move(o); }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  uint8_t* get() const { return static_cast<uint8_t*>(ptr_); }
  size_t bytes() const { return bytes_; }
  void ensure(size_t bytes, const char* what);  // grow-only, contents not kept
  void release();

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace memra::cuda
