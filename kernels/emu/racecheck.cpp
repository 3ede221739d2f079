// memra-emu's racecheck: shared-memory hazards between warps of a block, found on the CPU. The
// kernel files are compiled with GCC's ThreadSanitizer instrumentation (-fsanitize=thread, not
// linked against its runtime): every load and store calls a __tsan_* hook, defined here. A hook
// keeps, per 4-byte word of the running block's shared memory (dynamic and static), the last write
// and the reads since, each with its warp and its barrier epoch (the block's completed
// __syncthreads). Two accesses from different warps in the same epoch, one of them a write, are a
// hazard (RAW, WAR, WAW), as compute-sanitizer's racecheck reports them; lanes of one warp are
// taken as ordered. Words, not bytes: two warps writing the two halves of one word are reported
// (compute-sanitizer would not; no kernel here does it). Not seen: global memory, and copies GCC
// expands inline without a hook (a memcpy into shared memory; no kernel here has one).
// MEMRA_EMU_RACECHECK=0 turns it off.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "emu/racecheck.h"
#include "emu/simt.h"

extern "C" unsigned char __start_memra_emu_smem[];
extern "C" unsigned char __stop_memra_emu_smem[];

namespace memra::emu {
namespace {

struct Word {
  uint32_t write_epoch = 0, read_epoch = 0;  // epoch + 1 (0: never)
  uint16_t write_warp = 0, read_warp = 0;
  bool many_readers = false;  // reads from two or more warps this epoch
};
struct Shadow {
  std::vector<Word> words;
};

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("MEMRA_EMU_RACECHECK");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

long g_hazards = 0;  // this launch's (launches run one at a time)
const void* g_kernel = nullptr;

void report(const char* kind, bool statics, size_t offset, int other_warp, int warp) {
  if (++g_hazards > 8) return;  // the first few say enough
  char name[256];
  kernel_label(g_kernel, name, sizeof name);
  const Block& b = *g_fiber->block;
  std::fprintf(stderr,
               "memra-emu: racecheck: %s hazard on %s shared memory +%#zx, warps %d and %d between the same two "
               "barriers, kernel %s, block (%u,%u,%u)\n",
               kind, statics ? "static" : "dynamic", offset, other_warp, warp, name, b.index.x, b.index.y, b.index.z);
}

// The static section's words start at a 16-byte boundary past the dynamic ones, so a static word
// never shares a shadow word with a dynamic one (or straddles two).
size_t statics_at(const Block& b) { return (b.dynamic_bytes + 15) / 16 * 16; }

void access(const void* p, size_t n, bool write) {
  Fiber* f = g_fiber;
  if (!f || !enabled()) return;
  Block& b = *f->block;
  const auto* a = static_cast<const unsigned char*>(p);
  size_t base;  // the word index space: dynamic bytes, then the static section
  bool statics = false;
  if (a >= b.dynamic_smem && a < b.dynamic_smem + b.dynamic_bytes) {
    base = static_cast<size_t>(a - b.dynamic_smem);
  } else if (a >= __start_memra_emu_smem && a < __stop_memra_emu_smem) {
    base = statics_at(b) + static_cast<size_t>(a - __start_memra_emu_smem);
    statics = true;
  } else {
    return;
  }
  auto* s = static_cast<Shadow*>(b.shadow);
  if (!s) {
    s = new Shadow;
    s->words.resize((statics_at(b) + static_cast<size_t>(__stop_memra_emu_smem - __start_memra_emu_smem)) / 4 + 2);
    b.shadow = s;
  }
  const uint32_t epoch = *b.barrier_gen + 1;
  const uint16_t warp = static_cast<uint16_t>(f->linear / 32);
  const size_t region_start = statics ? statics_at(b) : 0;
  for (size_t w = base / 4; w <= (base + n - 1) / 4 && w < s->words.size(); ++w) {
    Word& x = s->words[w];
    const size_t offset = w * 4 - region_start;
    if (write) {
      if (x.write_epoch == epoch && x.write_warp != warp) report("WAW", statics, offset, x.write_warp, warp);
      else if (x.read_epoch == epoch && (x.many_readers || x.read_warp != warp))
        report("WAR", statics, offset, x.read_warp, warp);
      x.write_epoch = epoch;
      x.write_warp = warp;
    } else {
      if (x.write_epoch == epoch && x.write_warp != warp) report("RAW", statics, offset, x.write_warp, warp);
      if (x.read_epoch != epoch) {
        x.read_epoch = epoch;
        x.read_warp = warp;
        x.many_readers = false;
      } else if (x.read_warp != warp) {
        x.many_readers = true;
      }
    }
  }
}

}  // namespace

void racecheck_begin(const void* kernel) {
  g_hazards = 0;
  g_kernel = kernel;
}
long racecheck_end() {
  if (g_hazards > 8)
    std::fprintf(stderr, "memra-emu: racecheck: %ld hazards in this launch (the first 8 above)\n", g_hazards);
  return g_hazards;
}
void racecheck_block_done(Block& b) {
  delete static_cast<Shadow*>(b.shadow);
  b.shadow = nullptr;
}
void shadow_read(const void* p, size_t n) { access(p, n, false); }
void shadow_write(const void* p, size_t n) { access(p, n, true); }

}  // namespace memra::emu

// The hooks GCC's -fsanitize=thread calls (the kernel files only; nothing here is instrumented).
extern "C" {
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}
#define MEMRA_TSAN_HOOKS(n)                                                                          \
  void __tsan_read##n(void* p) { memra::emu::shadow_read(p, n); }                                    \
  void __tsan_write##n(void* p) { memra::emu::shadow_write(p, n); }                                  \
  void __tsan_unaligned_read##n(void* p) { memra::emu::shadow_read(p, n); }                          \
  void __tsan_unaligned_write##n(void* p) { memra::emu::shadow_write(p, n); }                        \
  void __tsan_volatile_read##n(void* p) { memra::emu::shadow_read(p, n); }                           \
  void __tsan_volatile_write##n(void* p) { memra::emu::shadow_write(p, n); }                         \
  void __tsan_unaligned_volatile_read##n(void* p) { memra::emu::shadow_read(p, n); }                 \
  void __tsan_unaligned_volatile_write##n(void* p) { memra::emu::shadow_write(p, n); }
MEMRA_TSAN_HOOKS(1)
MEMRA_TSAN_HOOKS(2)
MEMRA_TSAN_HOOKS(4)
MEMRA_TSAN_HOOKS(8)
MEMRA_TSAN_HOOKS(16)
#undef MEMRA_TSAN_HOOKS
// Host code in instrumented files (a function-local static's guard, a shared_ptr's count): the
// atomic operations themselves, sequentially consistent.
char __tsan_atomic8_load(const volatile char* a, int) { return __atomic_load_n(a, __ATOMIC_SEQ_CST); }
int __tsan_atomic32_load(const volatile int* a, int) { return __atomic_load_n(a, __ATOMIC_SEQ_CST); }
void __tsan_atomic32_store(volatile int* a, int v, int) { __atomic_store_n(a, v, __ATOMIC_SEQ_CST); }
int __tsan_atomic32_fetch_add(volatile int* a, int v, int) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }
int __tsan_atomic32_fetch_sub(volatile int* a, int v, int) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }
void __tsan_read_range(void* p, unsigned long n) { memra::emu::shadow_read(p, n); }
void __tsan_write_range(void* p, unsigned long n) { memra::emu::shadow_write(p, n); }
}
