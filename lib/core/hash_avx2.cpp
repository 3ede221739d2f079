// XXH3-128 built for AVX2: the only file compiled with -mavx2 (CMakeLists.txt); hash.cpp calls it
// when the CPU has AVX2, else its own SSE2 build. xxHash's vector paths compute the same hash by
// definition, so the choice changes speed, never a hash. Why: one thread hashes ~2x the bytes per
// second, and a state snapshot hashes a GiB while the copy engines fill it (docs/state-format.md).
// Nothing but xxhash.h (all static with XXH_INLINE_ALL) is included: an inline C++ function built
// here with AVX2 could be merged with another file's copy and then run on a CPU without AVX2.
#include "core/hash_impl.h"

#if MEMRA_HASH_HAS_AVX2
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace memra::hash_impl {

void avx2_update(void* state, const void* data, size_t size) {
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state), data, size);
}

void avx2_oneshot(const void* data, size_t size, uint64_t* high, uint64_t* low) {
  const XXH128_hash_t h = XXH3_128bits(data, size);
  *high = h.high64;
  *low = h.low64;
}

}  // namespace memra::hash_impl
#endif
