// Class hashes of a streamed state (stream_hash.h).
#include "state/stream_hash.h"

#include <algorithm>

#include "core/error.h"
#include "state/class_hash.h"

namespace memra {

StreamHasher::StreamHasher(const std::vector<ClassLayout>& layout, const uint8_t* base, int threads,
                           const std::vector<bool>& hashed_elsewhere)
    : base_(base) {
  size_t offset = 0, mine = 0;
  classes_.resize(layout.size());
  for (size_t k = 0; k < layout.size(); ++k) {
    const ClassLayout& l = layout[k];
    Class& c = classes_[k];
    c.begin = c.next = offset;
    c.end = offset + l.nbytes();
    starts_.push_back(offset);
    offset = c.end;
    c.elsewhere = k < hashed_elsewhere.size() && hashed_elsewhere[k];
    if (c.elsewhere) continue;
    c.hasher = std::make_unique<Hasher>();
    c.hasher->update(class_hash_prefix({l.name, dtype_name(l.dtype), &l.shape, nullptr, l.nbytes()}));
    ++mine;
  }
  // Default: up to 16, leaving two cores to the thread that drives the copies and to the driver
  // (16 hashers on a 16-core host measured 61-69% of the copy bandwidth, 78-83% on 32 cores).
  if (threads <= 0) threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 3u, 18u)) - 2;
  threads = std::min<int>(threads, static_cast<int>(mine));
  for (int t = 0; t < threads; ++t) workers_.emplace_back([this] { work(); });
}

StreamHasher::~StreamHasher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void StreamHasher::land(size_t offset, size_t bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  // The classes the range touches: from the last class starting at or before offset.
  size_t k = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin());
  k = k == 0 ? 0 : k - 1;
  const size_t end = offset + bytes;
  bool woke = false;
  for (; k < classes_.size() && classes_[k].begin < end; ++k) {
    Class& c = classes_[k];
    const size_t a = std::max(offset, c.begin), b = std::min(end, c.end);
    if (a >= b || c.elsewhere) continue;
    if (a != c.next) {  // out of order within a class, or landed twice
      misordered_ = true;
      continue;
    }
    c.next = b;
    c.pending.push_back({a, b - a});
    if (!c.busy && c.pending.size() == 1) {
      ready_.push_back(k);
      woke = true;
    }
  }
  lock.unlock();
  if (woke) cv_.notify_all();
}

void StreamHasher::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !ready_.empty(); });
    if (ready_.empty()) return;  // stop_
    const size_t k = ready_.front();
    ready_.pop_front();
    Class& c = classes_[k];
    c.busy = true;
    ++in_progress_;
    while (!c.pending.empty()) {
      const Piece p = c.pending.front();
      c.pending.pop_front();
      lock.unlock();
      c.hasher->update(base_ + p.offset, p.bytes);
      lock.lock();
    }
    c.busy = false;
    --in_progress_;
    idle_.notify_all();
  }
}

std::vector<Hash128> StreamHasher::finish() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return ready_.empty() && in_progress_ == 0; });
  if (misordered_) throw Error("internal: a streamed state range arrived out of order or twice");
  std::vector<Hash128> out;
  for (const Class& c : classes_) {
    if (c.elsewhere) {
      out.emplace_back();
      continue;
    }
    if (c.next != c.end)
      throw Error("internal: a streamed state export ended with " + std::to_string(c.end - c.next) + " bytes of a class missing");
    out.push_back(c.hasher->digest());
  }
  return out;
}

}  // namespace memra
