// Class hashes of a state computed while its bytes are still arriving (a streamed export: D2H
// ranges landing in host memory). Each class has its own XXH3-128 stream, started with the class's
// prefix (name, dtype, shape, byte count: exactly class_hash() of class_hash.h, so the file format's
// hash is unchanged); the ranges of one class are fed in order, and different classes are hashed
// on different worker threads at the same time. A class is never split across threads (a stream
// hash is sequential), so the parallelism is across classes: with the largest classes landing first
// (CudaTrunkComponent::export_stream) the hashing finishes shortly after the last byte lands.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/hash.h"
#include "engine/state_class.h"

namespace memra {

class StreamHasher {
 public:
  // `base` is where the classes lie end to end (layout order); threads 0: one per core, at most 16.
  // Classes marked in `hashed_elsewhere` (hashed where their bytes live) are not hashed: their
  // ranges may land or not, and finish() leaves their entries zero.
  StreamHasher(const std::vector<ClassLayout>& layout, const uint8_t* base, int threads = 0,
               const std::vector<bool>& hashed_elsewhere = {});
  ~StreamHasher();
  StreamHasher(const StreamHasher&) = delete;
  StreamHasher& operator=(const StreamHasher&) = delete;

  // [offset, offset + bytes) of the classes now holds its final bytes (a ChunkFn). Ranges of one
  // class must come in order; a range may span several classes.
  void land(size_t offset, size_t bytes);
  // Waits for every class to be hashed; throws Error unless every byte was landed exactly once.
  std::vector<Hash128> finish();

 private:
  struct Piece {
    size_t offset, bytes;
  };
  struct Class {
    std::unique_ptr<Hasher> hasher;  // null when hashed elsewhere
    bool elsewhere = false;
    size_t begin = 0, end = 0, next = 0;  // next: the first byte not yet queued
    std::deque<Piece> pending;
    bool busy = false;                   // a worker holds it
  };
  void work();

  const uint8_t* base_;
  std::vector<Class> classes_;
  std::vector<size_t> starts_;
  std::mutex mu_;
  std::condition_variable cv_, idle_;
  std::deque<size_t> ready_;  // classes with pending pieces and no worker
  size_t in_progress_ = 0;
  bool stop_ = false;
  bool misordered_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace memra
