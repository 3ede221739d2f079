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
// One block of 1024 threads per class (one an SM), tiles of 248 blocks, two in shared memory:
// warps 1-31 sum lane i of the next tile's blocks (thread (slot, i), 2 blocks each) while threads
// 0-7 of warp 0 chain the last tile's 248 blocks. A block that lies in one run is summed by
// straight-line aligned loads (Stream::block); the few at a run's edge word by word. A class's
// chain ran at 2.3 GB/s with per-word branches (run 185), ~19 at 512 threads and ~33 at 1024 (run
// 190: a 799 MiB class; the host hashed one class at 7.5-9).
//   grid n_classes   block 1024
#include "common.cuh"
#include "launch.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 1024;                           // one block an SM: the most loads in flight a class
constexpr int kLanes = 8;                              // XXH3's accumulators
constexpr int kSlotsOfChain = kWarp / kLanes;          // warp 0: the chain (threads 0-7)
constexpr int kFillSlots = kBlock / kLanes - kSlotsOfChain;  // warps 1-31: blocks summed side by side
constexpr int kTile = kFillSlots * 2;                  // 1 KB blocks a tile: 248
constexpr int kChainBatch = 8;                         // sums read ahead of the chain
constexpr uint64_t kBlockBytes = 1024, kStripeBytes = 64;
constexpr uint64_t kPrime32_1 = 0x9E3779B1u, kPrime32_2 = 0x85EBCA77u, kPrime32_3 = 0xC2B2AE3Du;
constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ull, kPrime64_2 = 0xC2B2AE3D27D4EB4Full,
                   kPrime64_3 = 0x165667B19E3779F9ull, kPrime64_4 = 0x85EBCA77C2B2AE63ull,
                   kPrime64_5 = 0x27D4EB2F165667C5ull;

// A run of the class's stream, [begin, end), at ptr.
struct Region {
  const uint8_t* ptr;
  uint64_t begin, end;
};

// The class's hashed stream, prefix ‖ part 0 ‖ part 1. Each region is read only inside its bounds
// (compute-sanitizer's memcheck, memra-emu's guard pages).
struct Stream {
  Region r0, r1, r2;

  __device__ explicit Stream(const HashClassDev& c) {
    r0 = {c.prefix, 0, c.prefix_bytes};
    r1 = {c.part[0], r0.end, r0.end + c.part_bytes[0]};
    r2 = {c.part[1], r1.end, r1.end + c.part_bytes[1]};
  }
  __device__ uint64_t length() const { return r2.end; }
  __device__ Region region(uint64_t p) const { return p < r0.end ? r0 : p < r1.end ? r1 : r2; }

  // 8 bytes at any offset, little-endian: an aligned word, or two shifted together where both lie
  // in the region, else byte by byte (across regions, at an edge).
  __device__ uint64_t word(uint64_t p) const {
    const Region g = region(p);
    if (p + 8 <= g.end) {
      const uint8_t* q = g.ptr + (p - g.begin);
      const uintptr_t a = reinterpret_cast<uintptr_t>(q) & ~uintptr_t{7};
      const int shift = static_cast<int>(reinterpret_cast<uintptr_t>(q) & 7) * 8;
      if (shift == 0) return *reinterpret_cast<const uint64_t*>(a);
      if (a >= reinterpret_cast<uintptr_t>(g.ptr) && a + 16 <= reinterpret_cast<uintptr_t>(g.ptr) + (g.end - g.begin)) {
        const uint64_t lo = *reinterpret_cast<const uint64_t*>(a), hi = *reinterpret_cast<const uint64_t*>(a + 8);
        return (lo >> shift) | (hi << (64 - shift));
      }
    }
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) {
      const Region h = region(p + k);
      v |= static_cast<uint64_t>(h.ptr[p + k - h.begin]) << (8 * k);
    }
    return v;
  }
  // Accumulator i's share of the stripe at p (XXH3_accumulate_512's two adds into acc[i]).
  __device__ uint64_t stripe(uint64_t p, int i, uint64_t key) const {
    const uint64_t k = word(p + 8 * i) ^ key;
    return word(p + 8 * (i ^ 1)) + (k & 0xFFFFFFFFu) * (k >> 32);
  }

  // Accumulator i's share of the 1 KB block at p: its 16 stripes. Where the block (and 8 bytes past
  // it) lies in one region, straight-line aligned loads shifted together, so a thread's 48 loads are
  // in flight at once (word()'s branches kept them one after another: 2.3 GB/s a class, run 185);
  // else stripe by stripe through word().
  __device__ uint64_t block(uint64_t p, int i, const Xxh3Keys& keys) const {
    const Region g = region(p);
    const uintptr_t q = reinterpret_cast<uintptr_t>(g.ptr) + (p - g.begin), a = q & ~uintptr_t{7};
    uint64_t sum = 0;
    if (p + kBlockBytes + 8 <= g.end && a >= reinterpret_cast<uintptr_t>(g.ptr)) {
      const int shift = static_cast<int>(q & 7) * 8;
      const uint64_t* w = reinterpret_cast<const uint64_t*>(a) + (i & ~1);
#pragma unroll
      for (int st = 0; st < 16; ++st) {
        const uint64_t lo = w[8 * st], mid = w[8 * st + 1], hi = w[8 * st + 2];
        // (x << 1) << (63 − shift): x << (64 − shift), and 0 at shift 0 (no shift by 64)
        const uint64_t even = (lo >> shift) | ((mid << 1) << (63 - shift));
        const uint64_t odd = (mid >> shift) | ((hi << 1) << (63 - shift));
        const uint64_t k = ((i & 1) ? odd : even) ^ keys.acc[st + i];
        sum += ((i & 1) ? even : odd) + (k & 0xFFFFFFFFu) * (k >> 32);
      }
    } else {
      for (int st = 0; st < 16; ++st) sum += stripe(p + st * kStripeBytes, i, keys.acc[st + i]);
    }
    return sum;
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

__device__ __forceinline__ uint64_t init_acc(int i) {  // XXH3_INIT_ACC, without an indexed local array
  return i == 0 ? kPrime32_3 : i == 1 ? kPrime64_1 : i == 2 ? kPrime64_2 : i == 3 ? kPrime64_3
       : i == 4 ? kPrime64_4 : i == 5 ? kPrime32_2 : i == 6 ? kPrime64_5 : kPrime32_1;
}

__global__ void __launch_bounds__(kBlock) class_hash_kernel(const HashClassDev* classes, Xxh3Keys keys, uint64_t* out) {
  pdl_begin();
  __shared__ uint64_t sums[2][kTile][kLanes];  // a tile's block sums, two tiles: one filled, one chained
  __shared__ uint64_t final_acc[kLanes];
  const Stream s(classes[blockIdx.x]);
  const uint64_t len = s.length(), blocks = (len - 1) / kBlockBytes;
  const uint64_t tiles = (blocks + kTile - 1) / kTile;
  const int warp = threadIdx.x / kWarp, i = threadIdx.x % kLanes, slot = threadIdx.x / kLanes - kSlotsOfChain;
  auto fill = [&](uint64_t tile) {  // warps 1-31: lane i of the tile's blocks
    const uint64_t b0 = tile * kTile;
    const int n = static_cast<int>(blocks - b0 < kTile ? blocks - b0 : kTile);
    for (int t = slot; t < n; t += kFillSlots) sums[tile & 1][t][i] = s.block((b0 + t) * kBlockBytes, i, keys);
  };
  uint64_t acc = init_acc(i);  // threads 0-7 carry the chain
  if (warp > 0 && tiles > 0) fill(0);
  __syncthreads();
  for (uint64_t tile = 0; tile < tiles; ++tile) {
    if (warp == 0) {
      if (threadIdx.x < kLanes) {
        const int n = static_cast<int>(blocks - tile * kTile < kTile ? blocks - tile * kTile : kTile);
        const uint64_t key = keys.acc[16 + i];
        int t = 0;
        for (; t + kChainBatch <= n; t += kChainBatch) {  // the shared loads off the chain's path
          uint64_t v[kChainBatch];
#pragma unroll
          for (int j = 0; j < kChainBatch; ++j) v[j] = sums[tile & 1][t + j][i];
#pragma unroll
          for (int j = 0; j < kChainBatch; ++j) acc = scramble(acc + v[j], key);
        }
        for (; t < n; ++t) acc = scramble(acc + sums[tile & 1][t][i], key);
      }
    } else if (tile + 1 < tiles) {
      fill(tile + 1);
    }
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
