// memra-emu's scheduler: a launch's CUDA threads as fibers on one OS thread (simt.h says what that
// shows and what it cannot). Blocks start one at a time; another block is made resident only when
// every running thread waits on something no running block will do (a persistent grid's spin
// waits), as a GPU keeps a grid's blocks resident. Static __shared__ variables live in one
// section, swapped per block while more than one is resident; shared memory starts poisoned
// (0xff bytes: NaN floats, -1 integers), as a GPU's starts with whatever the last block left.
#include "emu/simt.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "emu/racecheck.h"
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
struct Copy {  // one cp.async: its 16 bytes read at issue, written at the wait that completes its group
  unsigned char* dst;
  unsigned char data[16];
};
struct Thread {
  Fiber f;
  void* sp = nullptr;
  unsigned char* stack = nullptr;
  bool done = false, spinning = false;
  const unsigned* wait_gen = nullptr;
  unsigned wait_value = 0;
  long long ticks = 0;  // clock64(): this thread's own count
  std::vector<Copy> open_group;
  std::vector<std::vector<Copy>> groups;  // committed, oldest first
};

struct Collective {  // one mask's warp collectives; slots double-buffered by generation parity
  unsigned mask = 0, gen = 0;
  int arrived = 0;
  unsigned arrived_lanes[2] = {0, 0};  // who took part in each parity's generation (ballot, match)
  unsigned char slots[2][32 * kSlotBytes];
};

struct Warp {
  unsigned live = 0;
  std::vector<std::unique_ptr<Collective>> groups;
  Collective* last = nullptr;  // the mask used last (almost always the full warp)
};

// A block's dynamic shared memory ends at a guard page, so a kernel whose size formula falls
// short faults here as it would on a GPU (which faults past the launch's dynamic size too).
struct Guarded {
  unsigned char* map = nullptr;
  size_t map_bytes = 0, cap = 0;  // cap: the bytes before the guard page
};

struct Resident {
  Block b;
  std::vector<Thread> threads;
  std::vector<Warp> warps;
  Guarded dynamic;
  std::vector<unsigned char> statics;
  int live = 0, arrived = 0;
  unsigned gen = 0;
  int or_acc[2] = {0, 0}, or_res[2] = {0, 0};
};

struct Launch {
  const std::function<void()>* body = nullptr;
  const void* kernel = nullptr;
  std::vector<std::unique_ptr<Resident>> resident;
  Resident* loaded = nullptr;  // whose static shared memory the section holds
  bool progress = false;
};

std::mutex g_mutex;  // one emulated launch at a time in the process; it guards the three below
Launch* g_launch = nullptr;
void* g_scheduler_sp = nullptr;
Thread* g_thread = nullptr;

size_t statics_bytes() { return static_cast<size_t>(__stop_memra_emu_smem - __start_memra_emu_smem); }

std::vector<Guarded>& smem_pool() {
  static std::vector<Guarded> pool;
  return pool;
}
Guarded take_smem(size_t bytes) {
  auto& pool = smem_pool();
  for (size_t i = 0; i < pool.size(); ++i)
    if (pool[i].cap >= bytes) {
      Guarded g = pool[i];
      pool.erase(pool.begin() + static_cast<long>(i));
      return g;
    }
  const size_t cap = (bytes + 4095) / 4096 * 4096;
  void* p = mmap(nullptr, cap + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "memra-emu: error: cannot map a block's shared memory\n");
    std::abort();
  }
  mprotect(static_cast<unsigned char*>(p) + cap, 4096, PROT_NONE);
  return Guarded{static_cast<unsigned char*>(p), cap + 4096, cap};
}

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

// A fault inside a kernel (a guard page past an allocation, a fiber's stack overflow): one line
// naming the kernel, block and thread, then the default action (the core dump / abort as before).
void on_fault(int sig, siginfo_t* info, void*) {
  char line[768], name[256] = "(none running)";
  if (g_launch && g_launch->kernel) kernel_label(g_launch->kernel, name, sizeof name);
  int n = 0;
  if (g_fiber)
    n = std::snprintf(line, sizeof line,
                      "memra-emu: error: %s at address %p in kernel %s, block (%u,%u,%u) thread (%u,%u,%u): "
                      "outside every allocation (memra-emu puts a guard page after each)\n",
                      sig == SIGSEGV ? "SIGSEGV" : "SIGBUS", info->si_addr, name, g_fiber->block->index.x,
                      g_fiber->block->index.y, g_fiber->block->index.z, g_fiber->thread.x, g_fiber->thread.y,
                      g_fiber->thread.z);
  else
    n = std::snprintf(line, sizeof line, "memra-emu: error: %s at address %p outside a kernel\n",
                      sig == SIGSEGV ? "SIGSEGV" : "SIGBUS", info->si_addr);
  if (n > 0) (void)!write(2, line, static_cast<size_t>(std::min<int>(n, sizeof line - 1)));
  signal(sig, SIG_DFL);  // returning re-runs the access, which now ends the process
}

void install_fault_handler() {
  thread_local std::vector<unsigned char> alt;  // the handler's own stack: a fiber's may be what overflowed
  if (alt.empty()) {
    alt.resize(64 * 1024);
    stack_t ss{};
    ss.ss_sp = alt.data();
    ss.ss_size = alt.size();
    sigaltstack(&ss, nullptr);
  }
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa{};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
  });
}

}  // namespace

void kernel_label(const void* kernel, char* out, size_t n) {
  Dl_info where{};
  if (kernel && dladdr(kernel, &where) && where.dli_fname)
    std::snprintf(out, n, "%s+%#lx", where.dli_fname,
                  static_cast<unsigned long>(static_cast<const char*>(kernel) - static_cast<const char*>(where.dli_fbase)));
  else
    std::snprintf(out, n, "?");
}

namespace {

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
    c.arrived_lanes[(c.gen & 1) ^ 1] = 0;
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

void land(std::vector<Copy>& group) {
  for (Copy& c : group) {
    std::memcpy(c.dst, c.data, 16);
    shadow_write(c.dst, 16);
  }
}

[[noreturn]] void fiber_main() {
  (*g_launch->body)();
  Thread& t = *g_thread;
  for (auto& g : t.groups) land(g);  // copies never waited for still land, as on the device
  land(t.open_group);
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
  r->b.dynamic_bytes = smem;
  r->b.barrier_gen = &r->gen;
  r->b.shadow = nullptr;
  const size_t body = (smem + 127) / 128 * 128;  // 128-byte aligned, ending at the guard page
  r->dynamic = take_smem(body);
  r->b.dynamic_smem = r->dynamic.map + r->dynamic.cap - body;
  std::memset(r->b.dynamic_smem, kPoison, body);
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

const unsigned char* warp_gather(unsigned mask, const void* mine, int bytes, unsigned* arrived) {
  Resident& r = my_block();
  const int lane = g_fiber->linear % 32;
  if (!((mask >> lane) & 1u)) {
    std::fprintf(stderr, "memra-emu: error: a warp collective's mask %#x leaves out the calling lane %d (undefined in CUDA)\n",
                 mask, lane);
    trap();
  }
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
  c->arrived_lanes[seen & 1] |= 1u << lane;
  ++c->arrived;
  complete_if_ready(*c, w.live);
  park(&c->gen, seen);
  if (arrived) *arrived = c->arrived_lanes[seen & 1];
  return slots;
}

void spin_yield() {
  g_thread->spinning = true;
  yield_to_scheduler();
  g_thread->spinning = false;
}

long long clock_ticks() {
  return g_thread->ticks += 1ll << 17;  // a spin loop's 2^33-tick watchdog fires after 65536 of its turns
}

void cp_async16(void* dst, const void* src, bool valid) {
  Copy c;
  c.dst = static_cast<unsigned char*>(dst);
  if (valid) std::memcpy(c.data, src, 16);
  else std::memset(c.data, 0, 16);
  std::memset(dst, kPoison, 16);  // in flight: a read before its wait sees the poison, not the data
  shadow_write(dst, 16);          // and for racecheck, written from now on
  g_thread->open_group.push_back(c);
}
void cp_async_commit() {
  g_thread->groups.push_back(std::move(g_thread->open_group));
  g_thread->open_group.clear();
}
void cp_async_wait(int pending) {
  auto& groups = g_thread->groups;
  while (static_cast<int>(groups.size()) > pending) {
    land(groups.front());
    groups.erase(groups.begin());
  }
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
  const auto* p = static_cast<const unsigned char*>(row);
  const Block& b = *g_fiber->block;
  const bool shared = (p >= b.dynamic_smem && p + 16 <= b.dynamic_smem + b.dynamic_bytes) ||
                      (p >= __start_memra_emu_smem && p + 16 <= __stop_memra_emu_smem);
  if (!shared || reinterpret_cast<uintptr_t>(p) % 16 != 0) {
    std::fprintf(stderr, "memra-emu: error: ldmatrix row address %p is %s\n", row,
                 shared ? "not 16-byte aligned" : "outside the block's shared memory");
    trap();
  }
  // Each lane's 16 bytes are read when it arrives (the warp reads before any lane goes on).
  shadow_read(row, 16);
  const unsigned char* slots = warp_gather(0xffffffffu, row, 16);
  const int lane = g_fiber->linear % 32;
  for (int i = 0; i < 4; ++i) std::memcpy(&r[i], slots + (8 * i + lane / 4) * kSlotBytes + 4 * (lane % 4), 4);
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
  install_fault_handler();
  racecheck_begin(shape.kernel);
  Launch L;
  L.body = &body;
  L.kernel = shape.kernel;
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
      load_statics(L, r);  // a block's own static __shared__ values, or poison for a new one
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
        smem_pool().push_back(r.dynamic);
        racecheck_block_done(r.b);
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
  if (const long hazards = racecheck_end(); hazards > 0) {
    std::fprintf(stderr, "memra-emu: error: %ld shared-memory hazard(s) in one launch (racecheck; MEMRA_EMU_RACECHECK=0 "
                 "turns it off)\n", hazards);
    return cudaErrorLaunchFailure;
  }
  return cudaSuccess;
}

}  // namespace memra::emu
