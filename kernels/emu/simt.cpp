// memra-emu's scheduler: a launch's CUDA threads as fibers on one OS thread (simt.h says what that
// shows and what it cannot). Blocks start one at a time; another block is made resident only when
// every running thread waits on something no running block will do (a persistent grid's spin
// waits), as a GPU keeps a grid's blocks resident. Static __shared__ variables live in one
// section, swapped per block while more than one is resident; shared memory starts poisoned
// (0xff bytes: NaN floats, -1 integers), as a GPU's starts with whatever the last block left.
#include "emu/simt.h"

#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "emu/runtime.h"

#if !defined(__x86_64__)
#error "memra-emu's fiber switch is written for x86-64"
#endif

// Saves the callee-saved registers, MXCSR and the x87 control word on the current stack, stores
// the stack pointer in *from, and resumes the fiber whose stack pointer is `to`.
extern "C" void memra_emu_switch(void** from, void* to);
asm(R"(
.text
.globl memra_emu_switch
.type memra_emu_switch,@function
memra_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size memra_emu_switch, .-memra_emu_switch
)");

extern "C" unsigned char __start_memra_emu_smem[];  // the static __shared__ section (the linker's bounds)
extern "C" unsigned char __stop_memra_emu_smem[];

namespace memra::emu {

Fiber* g_fiber = nullptr;

namespace {

constexpr size_t kStack = 256 * 1024;  // a fiber's stack; a guard page below it
constexpr unsigned char kPoison = 0xff;

// Waiting: a fiber parked until *gen differs from the value it saw (a barrier or collective), or
// spinning (always runnable, but runs only when nothing else can progress).
struct Thread {
  Fiber f;
  void* sp = nullptr;
  unsigned char* stack = nullptr;
  bool done = false, spinning = false;
  const unsigned* wait_gen = nullptr;
  unsigned wait_value = 0;
};

struct Collective {  // one mask's warp collectives; slots double-buffered by generation parity
  unsigned mask = 0, gen = 0;
  int arrived = 0;
  unsigned char slots[2][32 * kSlotBytes];
};

struct Warp {
  unsigned live = 0;
  std::vector<std::unique_ptr<Collective>> groups;
  Collective* last = nullptr;  // the mask used last (almost always the full warp)
};

struct Resident {
  Block b;
  std::vector<Thread> threads;
  std::vector<Warp> warps;
  std::vector<unsigned char> dynamic, statics;
  int live = 0, arrived = 0;
  unsigned gen = 0;
  int or_acc[2] = {0, 0}, or_res[2] = {0, 0};
};

struct Launch {
  const std::function<void()>* body = nullptr;
  std::vector<std::unique_ptr<Resident>> resident;
  Resident* loaded = nullptr;  // whose static shared memory the section holds
  bool progress = false;
};

std::mutex g_mutex;  // one emulated launch at a time in the process; it guards the three below
Launch* g_launch = nullptr;
void* g_scheduler_sp = nullptr;
Thread* g_thread = nullptr;

size_t statics_bytes() { return static_cast<size_t>(__stop_memra_emu_smem - __start_memra_emu_smem); }

std::vector<unsigned char*>& stack_pool() {
  static std::vector<unsigned char*> pool;
  return pool;
}
unsigned char* take_stack() {
  auto& pool = stack_pool();
  if (!pool.empty()) {
    unsigned char* s = pool.back();
    pool.pop_back();
    return s;
  }
  void* p = mmap(nullptr, kStack + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "memra-emu: error: cannot map a fiber stack\n");
    std::abort();
  }
  mprotect(p, 4096, PROT_NONE);  // an overflow faults instead of writing the next stack
  return static_cast<unsigned char*>(p) + 4096;
}

void yield_to_scheduler() { memra_emu_switch(&g_thread->sp, g_scheduler_sp); }

void park(const unsigned* gen, unsigned seen) {
  g_thread->wait_gen = gen;
  g_thread->wait_value = seen;
  while (*gen == seen) yield_to_scheduler();
  g_thread->wait_gen = nullptr;
}

Resident& my_block() { return *static_cast<Resident*>(g_fiber->block->owner); }

// A collective of `mask` is complete when every live lane of the mask has arrived.
void complete_if_ready(Collective& c, unsigned live) {
  if (c.arrived > 0 && c.arrived >= __builtin_popcount(c.mask & live)) {
    c.arrived = 0;
    ++c.gen;
    g_launch->progress = true;
  }
}
void complete_barrier_if_ready(Resident& r) {
  if (r.arrived > 0 && r.arrived >= r.live) {
    const int p = r.gen & 1;
    r.or_res[p] = r.or_acc[p];
    r.or_acc[p ^ 1] = 0;
    r.arrived = 0;
    ++r.gen;
    g_launch->progress = true;
  }
}

[[noreturn]] void fiber_main() {
  (*g_launch->body)();
  Thread& t = *g_thread;
  Resident& r = my_block();
  t.done = true;
  --r.live;
  Warp& w = r.warps[t.f.linear / 32];
  w.live &= ~(1u << (t.f.linear % 32));
  g_launch->progress = true;
  for (auto& c : w.groups) complete_if_ready(*c, w.live);
  complete_barrier_if_ready(r);
  void* dead = nullptr;
  memra_emu_switch(&dead, g_scheduler_sp);
  std::abort();  // never resumed
}

void start_fiber(Thread& t) {
  t.stack = take_stack();
  auto* top = reinterpret_cast<uint64_t*>(t.stack + kStack);
  *--top = 0;                                             // fiber_main's return address (never used)
  *--top = reinterpret_cast<uint64_t>(&fiber_main);       // where the switch's ret goes
  for (int i = 0; i < 6; ++i) *--top = 0;                 // rbp rbx r12 r13 r14 r15
  uint32_t csr[2];
  asm volatile("stmxcsr %0" : "=m"(csr[0]));
  asm volatile("fnstcw %0" : "=m"(csr[1]));
  *--top = static_cast<uint64_t>(csr[0]) | (static_cast<uint64_t>(csr[1] & 0xffff) << 32);
  t.sp = top;
}

std::unique_ptr<Resident> admit(dim3 grid, dim3 block, size_t smem, unsigned index) {
  auto r = std::make_unique<Resident>();
  r->b.index = make_uint3(index % grid.x, index / grid.x % grid.y, index / (grid.x * grid.y));
  r->b.dim = block;
  r->b.grid = grid;
  r->b.owner = r.get();
  r->dynamic.assign(smem + 128, kPoison);
  r->b.dynamic_smem = r->dynamic.data() + (128 - reinterpret_cast<uintptr_t>(r->dynamic.data()) % 128) % 128;
  r->statics.assign(statics_bytes(), kPoison);
  const int n = static_cast<int>(block.x * block.y * block.z);
  r->threads.resize(n);
  r->warps.resize((n + 31) / 32);
  for (int i = 0; i < n; ++i) {
    Thread& t = r->threads[i];
    t.f.thread = make_uint3(i % block.x, i / block.x % block.y, i / (block.x * block.y));
    t.f.linear = i;
    t.f.block = &r->b;
    r->warps[i / 32].live |= 1u << (i % 32);
    start_fiber(t);
  }
  r->live = n;
  return r;
}

void load_statics(Launch& L, Resident* r) {
  if (L.loaded == r) return;
  const size_t n = statics_bytes();
  if (L.loaded) std::memcpy(L.loaded->statics.data(), __start_memra_emu_smem, n);
  std::memcpy(__start_memra_emu_smem, r->statics.data(), n);
  L.loaded = r;
}

}  // namespace

void sync_block() { sync_block_or(0); }

int sync_block_or(int pred) {
  Resident& r = my_block();
  const unsigned seen = r.gen;
  const int p = seen & 1;
  r.or_acc[p] |= pred != 0;
  ++r.arrived;
  complete_barrier_if_ready(r);
  park(&r.gen, seen);
  return r.or_res[p];
}

const unsigned char* warp_gather(unsigned mask, const void* mine, int bytes) {
  Resident& r = my_block();
  const int lane = g_fiber->linear % 32;
  Warp& w = r.warps[g_fiber->linear / 32];
  Collective* c = w.last && w.last->mask == mask ? w.last : nullptr;
  for (size_t i = 0; !c && i < w.groups.size(); ++i)
    if (w.groups[i]->mask == mask) c = w.groups[i].get();
  if (!c) {
    w.groups.push_back(std::make_unique<Collective>());
    c = w.groups.back().get();
    c->mask = mask;
  }
  w.last = c;
  const unsigned seen = c->gen;
  unsigned char* slots = c->slots[seen & 1];
  if (bytes > 0) std::memcpy(slots + lane * kSlotBytes, mine, bytes);
  ++c->arrived;
  complete_if_ready(*c, w.live);
  park(&c->gen, seen);
  return slots;
}

void spin_yield() {
  g_thread->spinning = true;
  yield_to_scheduler();
  g_thread->spinning = false;
}

long long clock_ticks() {
  static thread_local long long ticks = 0;
  return ticks += 1ll << 17;  // a spin loop's 2^33-tick watchdog fires after 65536 of its turns
}

unsigned long long global_ns() {
  return static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

void trap() {
  std::fprintf(stderr, "memra-emu: error: __trap() in block (%u,%u,%u) thread (%u,%u,%u)\n", blockIdx.x, blockIdx.y,
               blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  std::abort();
}

unsigned char* dynamic_smem() { return g_fiber->block->dynamic_smem; }

void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  const unsigned char* slots = warp_gather(0xffffffffu, &row, sizeof row);
  const int lane = g_fiber->linear % 32;
  for (int i = 0; i < 4; ++i) {
    const void* p;
    std::memcpy(&p, slots + (8 * i + lane / 4) * kSlotBytes, sizeof p);
    std::memcpy(&r[i], static_cast<const unsigned char*>(p) + 4 * (lane % 4), 4);
  }
}

void mma_m16n8k8_tf32(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  uint32_t mine[10] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  std::memcpy(mine + 6, c, 16);
  const unsigned char* slots = warp_gather(0xffffffffu, mine, sizeof mine);
  auto word = [&](int lane, int i) {
    uint32_t v;
    std::memcpy(&v, slots + lane * kSlotBytes + 4 * i, 4);
    return v;
  };
  auto tf = [](uint32_t v) { return static_cast<double>(__uint_as_float(v & 0xffffe000u)); };
  // A (16 × 8): (g, t) a0, (g + 8, t) a1, (g, t + 4) a2, (g + 8, t + 4) a3 of lane 4g + t.
  auto A = [&](int row, int k) { return tf(word(4 * (row % 8) + k % 4, (row >= 8 ? 1 : 0) + (k >= 4 ? 2 : 0))); };
  // B (8 × 8, k × n): (t, g) b0, (t + 4, g) b1 of lane 4g + t.
  auto B = [&](int k, int n) { return tf(word(4 * n + k % 4, 4 + (k >= 4 ? 1 : 0))); };
  const int lane = g_fiber->linear % 32, g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
    double s = c[i];
    for (int k = 0; k < 8; ++k) s += A(row, k) * B(k, col);
    c[i] = static_cast<float>(s);
  }
}

cudaError_t run_grid(const GridShape& shape, const std::function<void()>& body) {
  const dim3 grid = shape.grid, block = shape.block;
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
  if (threads == 0 || threads > 1024 || block.z > 64 || grid.y > 65535 || grid.z > 65535 || blocks == 0)
    return cudaErrorInvalidConfiguration;
  std::lock_guard<std::mutex> lock(g_mutex);
  Launch L;
  L.body = &body;
  g_launch = &L;
  unsigned next = 0;
  int stalls = 0;
  while (next < blocks || !L.resident.empty()) {
    if (L.resident.empty() || (stalls > 0 && next < blocks && L.resident.size() < shape.max_resident)) {
      L.resident.push_back(admit(grid, block, shape.smem, next++));
      stalls = 0;
    }
    L.progress = false;
    bool ran_waiting = false;
    for (auto& rp : L.resident) {
      Resident* r = rp.get();
      if (L.resident.size() > 1) load_statics(L, r);
      else if (L.loaded != r) {
        std::memset(__start_memra_emu_smem, kPoison, statics_bytes());
        L.loaded = r;
      }
      for (Thread& t : r->threads) {
        if (t.done || (t.wait_gen && *t.wait_gen == t.wait_value)) continue;
        g_thread = &t;
        g_fiber = &t.f;
        memra_emu_switch(&g_scheduler_sp, t.sp);
        if (t.spinning) ran_waiting = true;  // it waits on something outside its block: not a deadlock yet
      }
    }
    for (size_t i = 0; i < L.resident.size();) {
      Resident& r = *L.resident[i];
      if (r.live == 0) {
        for (Thread& t : r.threads) stack_pool().push_back(t.stack);
        if (L.loaded == &r) L.loaded = nullptr;
        L.resident.erase(L.resident.begin() + static_cast<long>(i));
        L.progress = true;
      } else {
        ++i;
      }
    }
    if (L.progress) {
      stalls = 0;
      continue;
    }
    ++stalls;
    if (!ran_waiting && !(next < blocks && L.resident.size() < shape.max_resident)) {
      std::fprintf(stderr,
                   "memra-emu: error: deadlock: every thread of %zu resident block(s) waits at a barrier or collective "
                   "that cannot complete (grid %u×%u×%u, block %u×%u×%u)\n",
                   L.resident.size(), grid.x, grid.y, grid.z, block.x, block.y, block.z);
      std::abort();
    }
  }
  g_launch = nullptr;
  g_fiber = nullptr;
  return cudaSuccess;
}

}  // namespace memra::emu
