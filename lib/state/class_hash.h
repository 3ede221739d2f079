// The hashes a state file carries (docs/state-format.md): XXH3-128 of one class over (name, dtype,
// shape, bytes); the whole-state hash over the class hashes in file order; the metadata hash over
// every other metadata key and value. Class hashing runs on several threads for big states.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/hash.h"

namespace memra {

// One class as bytes: what class_hash() covers.
struct ClassBytes {
  std::string_view name;
  std::string_view dtype;  // safetensors spelling, "F32"
  const std::vector<int64_t>* shape = nullptr;
  const void* data = nullptr;
  size_t nbytes = 0;
};

// XXH3-128 of u64 len(name) ‖ name ‖ u64 len(dtype) ‖ dtype ‖ u64 rank ‖ u64 dims… ‖ u64 nbytes ‖ bytes
// (every u64 little-endian).
Hash128 class_hash(const ClassBytes& item);
// What class_hash() covers before the bytes (everything up to and including u64 nbytes): for a
// hash of the same stream made where the bytes live (the CUDA trunk's classes, on their device).
std::string class_hash_prefix(const ClassBytes& item);

// class_hash() of every item, on up to `threads` threads (0: one per core, at most 16); small
// totals stay on the calling thread. Items are claimed largest first.
std::vector<Hash128> class_hashes(const std::vector<ClassBytes>& items, int threads = 0);

// XXH3-128 of the class hashes' canonical 16-byte big-endian digests, concatenated in file order.
Hash128 state_hash(const std::vector<Hash128>& hashes);

// The metadata key that holds the metadata hash (it is not part of what it covers).
inline constexpr const char* kMetadataHashKey = "hash.metadata";

// XXH3-128 over every metadata entry except kMetadataHashKey, in byte order of the keys:
// u64 len(key) ‖ key ‖ u64 len(value) ‖ value.
Hash128 metadata_hash(const std::map<std::string, std::string>& metadata);

}  // namespace memra
