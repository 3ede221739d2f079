// The two builds of XXH3-128 behind hash.h: portable (SSE2 on x86-64) and AVX2 (hash_avx2.cpp,
// chosen at run time). Internal: exposed so that a test can hold both to the same hashes.
#pragma once
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MEMRA_HASH_HAS_AVX2 1
#else
#define MEMRA_HASH_HAS_AVX2 0
#endif

namespace memra::hash_impl {

#if MEMRA_HASH_HAS_AVX2
// `state` is an XXH3_state_t* (created and digested by hash.cpp: the state layout is one).
void avx2_update(void* state, const void* data, size_t size);
void avx2_oneshot(const void* data, size_t size, uint64_t* high, uint64_t* low);
#endif

// Which build hash.h uses on this CPU: "avx2" or "portable".
const char* active();
// Tests only: run hash.h's functions on the portable build even where AVX2 is there.
void force_portable(bool on);

}  // namespace memra::hash_impl
