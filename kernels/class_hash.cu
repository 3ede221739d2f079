// class_hash() (lib/state/class_hash.h) of the state's classes, made on the device that holds them:
// XXH3-128 with the default secret over prefix ‖ bytes, the long-input path (more than 240 bytes;
// shorter streams stay on the host). A snapshot then copies the bytes to the host and never reads
// them there again: with the host hashing each byte as its DMA lands, host memory carried every byte
// twice, and the snapshot read 75-86% of the pinned copy depending on the VM's memory bandwidth
// (bench/NOTES.md, runs 181-182).
//
// XXH3's long path, as xxHash 0.8's scalar code writes it (the hashes are frozen by its spec):
// eight u64 accumulators; each 1024-byte block adds 16 stripes of 64 bytes (stripe n, lane i:
// acc[i] += word(i ^ 1) + lo32(k) · hi32(k), k = word(i) ^ secret64(8n + 8i)) and then scrambles
// them (acc ^= acc >> 47; acc ^= secret64(128 + 8i); acc *= PRIME32_1); then the last partial
// block's stripes, the stream's last 64 bytes with secret64(121 + 8i), and two merges of the
// accumulators into the 128-bit digest. Additions commute, so a block's 16 stripes can be summed
// by any threads in any order; the scrambles cannot, so the blocks are chained in order by eight
// threads (one per accumulator).
//
// One block of 256 threads per class: thread (slot, i) sums lane i of 4 of a tile's 128 blocks
// into shared memory, then threads 0-7 chain the tile's 128 blocks. A class is read once from HBM
// at ~25 GB/s a class (the chain: ~40 cycles a 1 KB block), all classes at once.
//   grid n_classes   block 256
#include "common.cuh"
#include "launch.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kLanes = 8;                  // XXH3's accumulators
constexpr int kSlots = kBlock / kLanes;    // blocks summed side by side
constexpr int kPasses = 4;                 // of kSlots each: a tile
constexpr int kTile = kSlots * kPasses;    // 1 KB blocks a tile
constexpr uint64_t kBlockBytes = 1024, kStripeBytes = 64;
constexpr uint64_t kPrime32_1 = 0x9E3779B1u, kPrime32_2 = 0x85EBCA77u, kPrime32_3 = 0xC2B2AE3Du;
constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ull, kPrime64_2 = 0xC2B2AE3D27D4EB4Full,
                   kPrime64_3 = 0x165667B19E3779F9ull, kPrime64_4 = 0x85EBCA77C2B2AE63ull,
                   kPrime64_5 = 0x27D4EB2F165667C5ull;

// The class's hashed stream, prefix ‖ part 0 ‖ part 1, read 8 bytes at any offset. Each region is
// read only inside its bounds (compute-sanitizer's memcheck, memra-emu's guard pages): an aligned
// word, or two aligned words shifted together where both lie in the region, else byte by byte.
struct Stream {
  const uint8_t* ptr[3];
  uint64_t end[3];  // where each region ends in the stream

  __device__ explicit Stream(const HashClassDev& c) {
    ptr[0] = c.prefix, ptr[1] = c.part[0], ptr[2] = c.part[1];
    end[0] = c.prefix_bytes, end[1] = end[0] + c.part_bytes[0], end[2] = end[1] + c.part_bytes[1];
  }
  __device__ uint64_t length() const { return end[2]; }

  __device__ uint8_t byte(uint64_t p) const {
    const int r = p < end[0] ? 0 : p < end[1] ? 1 : 2;
    return ptr[r][p - (r ? end[r - 1] : 0)];
  }
  __device__ uint64_t word(uint64_t p) const {
    const int r = p < end[0] ? 0 : p < end[1] ? 1 : 2;
    const uint64_t begin = r ? end[r - 1] : 0;
    if (p + 8 <= end[r]) {
      const uint8_t* q = ptr[r] + (p - begin);
      const uintptr_t a = reinterpret_cast<uintptr_t>(q) & ~uintptr_t{7};
      const int shift = static_cast<int>(reinterpret_cast<uintptr_t>(q) & 7) * 8;
      if (shift == 0) return *reinterpret_cast<const uint64_t*>(a);
      if (a >= reinterpret_cast<uintptr_t>(ptr[r]) && a + 16 <= reinterpret_cast<uintptr_t>(ptr[r]) + (end[r] - begin)) {
        const uint64_t lo = *reinterpret_cast<const uint64_t*>(a), hi = *reinterpret_cast<const uint64_t*>(a + 8);
        return (lo >> shift) | (hi << (64 - shift));
      }
    }
    uint64_t v = 0;  // little-endian, across regions or at an edge
    for (int k = 0; k < 8; ++k) v |= static_cast<uint64_t>(byte(p + k)) << (8 * k);
    return v;
  }
  // Accumulator i's share of the stripe at p (XXH3_accumulate_512's two adds into acc[i]).
  __device__ uint64_t stripe(uint64_t p, int i, uint64_t key) const {
    const uint64_t k = word(p + 8 * i) ^ key;
    return word(p + 8 * (i ^ 1)) + (k & 0xFFFFFFFFu) * (k >> 32);
  }
};

__device__ __forceinline__ uint64_t scramble(uint64_t acc, uint64_t key) {
  acc ^= acc >> 47;
  acc ^= key;
  return acc * kPrime32_1;
}

// The 128-bit product's halves xor-ed (XXH3_mul128_fold64), by 32-bit parts: the same on nvcc and
// on the host compiler (memra-emu).
__device__ __forceinline__ uint64_t mul128_fold64(uint64_t a, uint64_t b) {
  const uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
  const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const uint64_t mid = (p00 >> 32) + (p10 & 0xFFFFFFFFu) + p01;
  const uint64_t hi = p11 + (p10 >> 32) + (mid >> 32), lo = (mid << 32) | (p00 & 0xFFFFFFFFu);
  return hi ^ lo;
}

__device__ uint64_t merge(const uint64_t* acc, const uint64_t* key, uint64_t start) {
  uint64_t r = start;
  for (int j = 0; j < 4; ++j) r += mul128_fold64(acc[2 * j] ^ key[2 * j], acc[2 * j + 1] ^ key[2 * j + 1]);
  r ^= r >> 37;  // XXH3_avalanche
  r *= 0x165667919E3779F9ull;
  return r ^ (r >> 32);
}

__global__ void __launch_bounds__(kBlock) class_hash_kernel(const HashClassDev* classes, Xxh3Keys keys, uint64_t* out) {
  pdl_begin();
  __shared__ uint64_t sums[kTile][kLanes];
  __shared__ uint64_t final_acc[kLanes];
  const Stream s(classes[blockIdx.x]);
  const uint64_t len = s.length(), blocks = (len - 1) / kBlockBytes;
  const int i = threadIdx.x % kLanes, slot = threadIdx.x / kLanes;
  const uint64_t init[kLanes] = {kPrime32_3, kPrime64_1, kPrime64_2, kPrime64_3, kPrime64_4, kPrime32_2, kPrime64_5, kPrime32_1};
  uint64_t acc = init[i];  // threads 0-7 carry the chain
  for (uint64_t b0 = 0; b0 < blocks; b0 += kTile) {
    const int n = static_cast<int>(blocks - b0 < kTile ? blocks - b0 : kTile);
#pragma unroll
    for (int u = 0; u < kPasses; ++u) {
      const int t = slot + u * kSlots;
      if (t >= n) break;
      const uint64_t p = (b0 + t) * kBlockBytes;
      uint64_t sum = 0;
#pragma unroll
      for (int st = 0; st < 16; ++st) sum += s.stripe(p + st * kStripeBytes, i, keys.acc[st + i]);
      sums[t][i] = sum;
    }
    __syncthreads();
    if (threadIdx.x < kLanes)
      for (int t = 0; t < n; ++t) acc = scramble(acc + sums[t][i], keys.acc[16 + i]);
    __syncthreads();
  }
  if (threadIdx.x < kLanes) {
    const uint64_t p = blocks * kBlockBytes;  // the last partial block, then the last stripe
    const int stripes = static_cast<int>(((len - 1) - p) / kStripeBytes);
    for (int st = 0; st < stripes; ++st) acc += s.stripe(p + st * kStripeBytes, i, keys.acc[st + i]);
    acc += s.stripe(len - kStripeBytes, i, keys.last[i]);
    final_acc[i] = acc;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = merge(final_acc, keys.merge_high, ~(len * kPrime64_2));
    out[2 * blockIdx.x + 1] = merge(final_acc, keys.merge_low, len * kPrime64_1);
  }
}

uint64_t read_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= static_cast<uint64_t>(p[k]) << (8 * k);
  return v;
}

}  // namespace

Xxh3Keys xxh3_keys(const uint8_t* secret) {
  Xxh3Keys k;
  for (int w = 0; w < 24; ++w) k.acc[w] = read_le64(secret + 8 * w);
  for (int i = 0; i < 8; ++i) {
    k.last[i] = read_le64(secret + 192 - 64 - 7 + 8 * i);        // XXH_SECRET_LASTACC_START
    k.merge_low[i] = read_le64(secret + 11 + 8 * i);             // XXH_SECRET_MERGEACCS_START
    k.merge_high[i] = read_le64(secret + 192 - 64 - 11 + 8 * i);
  }
  return k;
}

cudaError_t class_hashes_device(const HashClassDev* classes, int n, const Xxh3Keys& keys, uint64_t* out, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return launch(class_hash_kernel, dim3(n), dim3(kBlock), 0, stream, classes, keys, out);
}

}  // namespace memra::cuda
