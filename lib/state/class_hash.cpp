// Class, state and metadata hashes of state files; see class_hash.h for the exact byte streams.
#include "state/class_hash.h"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <string>
#include <thread>

namespace memra {

namespace {
constexpr size_t kParallelMinBytes = 4u << 20;  // below this, threads cost more than they save
}

std::string class_hash_prefix(const ClassBytes& item) {
  std::string p;
  auto u64 = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) p.push_back(static_cast<char>(v >> (8 * i)));
  };
  u64(item.name.size());
  p += item.name;
  u64(item.dtype.size());
  p += item.dtype;
  const size_t rank = item.shape ? item.shape->size() : 0;
  u64(rank);
  for (size_t i = 0; i < rank; ++i) u64(static_cast<uint64_t>((*item.shape)[i]));
  u64(item.nbytes);
  return p;
}

Hash128 class_hash(const ClassBytes& item) {
  Hasher h;
  h.update(class_hash_prefix(item));
  h.update(item.data, item.nbytes);
  return h.digest();
}

std::vector<Hash128> class_hashes(const std::vector<ClassBytes>& items, int threads) {
  std::vector<Hash128> out(items.size());
  size_t total = 0;
  for (const auto& it : items) total += it.nbytes;
  if (threads <= 0) threads = static_cast<int>(std::min(16u, std::max(1u, std::thread::hardware_concurrency())));
  threads = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), items.size()));
  if (threads <= 1 || total < kParallelMinBytes) {
    for (size_t i = 0; i < items.size(); ++i) out[i] = class_hash(items[i]);
    return out;
  }
  // Largest first, so one big class does not start last and leave the other threads idle.
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a].nbytes > items[b].nbytes; });
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < order.size();) out[order[k]] = class_hash(items[order[k]]);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return out;
}

Hash128 state_hash(const std::vector<Hash128>& hashes) {
  Hasher h;
  for (const Hash128& c : hashes) {
    unsigned char b[16];
    for (int i = 0; i < 8; ++i) {
      b[i] = static_cast<unsigned char>(c.high >> (56 - 8 * i));
      b[8 + i] = static_cast<unsigned char>(c.low >> (56 - 8 * i));
    }
    h.update(b, 16);
  }
  return h.digest();
}

Hash128 metadata_hash(const std::map<std::string, std::string>& metadata) {
  Hasher h;
  for (const auto& [key, value] : metadata) {  // std::map: byte order of keys
    if (key == kMetadataHashKey) continue;
    h.update_u64(key.size());
    h.update(key);
    h.update_u64(value.size());
    h.update(value);
  }
  return h.digest();
}

}  // namespace memra
