// Snapshot/restore throughput of state files on a synthetic state (no checkpoint needed): the
// file path (classes → hashes on several threads → atomic write with fsync) against a plain atomic
// write of the same number of bytes, and the verified read path (mmap, every hash recomputed,
// restore, re-hash of the restored state) against a plain read. Results go to bench/results/.
//
// Build (not part of the CMake targets; links the library of an existing build folder):
//   g++ -O2 -std=c++20 tools/bench/state_throughput.cpp -Ilib -I<build>/generated -I/usr/include \
//       <build>/libmemra_core.a -lpthread -o <build>/state_throughput
// Run: <build>/state_throughput DIR [min_MB=256] [reps=3]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/file_io.h"
#include "engine/host_state_backend.h"
#include "state/class_hash.h"
#include "state/snapshot.h"
#include "state/state_file.h"

using namespace memra;
using Clock = std::chrono::steady_clock;

static double secs(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: state_throughput DIR [min_MB=256] [reps=3]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const double min_mb = argc > 2 ? std::atof(argv[2]) : 256;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 3;

  // Flash-like widths (d 512, di 128, W 128), 8 CSA(4) + 8 HCA(128) layers.
  ModelConfig cfg;
  cfg.vocab_size = 129280;
  cfg.head_dim = 512;
  cfg.index_head_dim = 128;
  cfg.sliding_window = 128;
  cfg.num_hidden_layers = 16;
  for (int l = 0; l < 16; ++l) cfg.layer_types.push_back(l % 2 ? LayerKind::kHCA : LayerKind::kCSA);
  cfg.csa_rate = 4;
  cfg.hca_rate = 128;
  // Live bytes per token ≈ 8 CSA · (512 + 128) · 4 / 4 + 8 HCA · 512 · 4 / 128.
  const double per_token = 8 * (512 + 128) * 4 / 4.0 + 8 * 512 * 4 / 128.0;
  const int64_t pos = static_cast<int64_t>(min_mb * 1e6 / per_token) / 4 * 4 + 4 * 128 + 3;  // pos % m != 0
  const int64_t capacity = pos + 97;

  CpuState owned(cfg, capacity);  // a CPU backend's state, filled by hand (no weights needed)
  DecodeState& state = owned.trunk().host;
  state.pos = pos;
  uint32_t x = 12345;
  auto fill = [&](std::vector<float>& v) {
    for (auto& f : v) {
      x = x * 1664525u + 1013904223u;
      f = static_cast<float>(static_cast<int32_t>(x)) * 1e-9f;
    }
  };
  for (auto& l : state.layers) {
    fill(l.window);
    for (CompressorState* c : {&l.compressor, &l.indexer}) {
      fill(c->pend_kv), fill(c->pend_score), fill(c->prev_kv), fill(c->prev_score), fill(c->entries);
    }
  }
  state.last_logits.resize(cfg.vocab_size);
  fill(state.last_logits);
  owned.import_classes(pos, cache_classes(cfg, state));  // sets the State's position too
  const HostStateBackend backend(cfg);

  const StateOrigin origin{"0123456789abcdef0123456789abcdef", "cpu-f32-exact"};
  const std::string path = dir + "/bench_state.safetensors", plain = dir + "/bench_plain.bin";
  const unsigned cores = std::thread::hardware_concurrency();
  std::printf("synthetic state: position %lld, capacity %lld, 16 layers (8 CSA, 8 HCA), d 512, di 128, W 128\n",
              static_cast<long long>(pos), static_cast<long long>(capacity));
  std::printf("cores: %u\n", cores);

  double best_snap = 1e9, best_write = 1e9, best_plain = 1e9, best_verify = 1e9, best_restore = 1e9, best_read = 1e9;
  double best_h1 = 1e9, best_hn = 1e9;
  uint64_t payload = 0, file_bytes = 0;
  size_t nclasses = 0;
  for (int r = 0; r < reps; ++r) {
    auto t = Clock::now();
    HostSnapshot host = snapshot_state(owned);
    best_snap = std::min(best_snap, secs(t));
    payload = host.bytes();
    nclasses = host.classes.size();

    std::vector<ClassBytes> items;
    for (const auto& c : host.classes) items.push_back({c.name, "F32", &c.shape, c.bytes.data(), c.bytes.size()});
    t = Clock::now();
    class_hashes(items, 1);
    best_h1 = std::min(best_h1, secs(t));
    t = Clock::now();
    class_hashes(items, 0);
    best_hn = std::min(best_hn, secs(t));

    if (r % 2 == 0) {
    t = Clock::now();
    StateWriteResult w = write_state_file(path, host, origin);  // hash + header + payload + fsync + rename
    best_write = std::min(best_write, secs(t));
    file_bytes = w.file_bytes;

    t = Clock::now();
    {
      AtomicWriter out(plain);  // the same bytes, no hashing: the disk-write floor
      out.write(std::string(8, '\0'));
      for (const auto& c : host.classes) out.write(c.bytes.data(), c.bytes.size());
      out.commit();
    }
    best_plain = std::min(best_plain, secs(t));

    } else {
    t = Clock::now();
    {
      AtomicWriter out(plain);  // the same bytes, no hashing: the disk-write floor
      out.write(std::string(8, '\0'));
      for (const auto& c : host.classes) out.write(c.bytes.data(), c.bytes.size());
      out.commit();
    }
    best_plain = std::min(best_plain, secs(t));

    t = Clock::now();
    StateWriteResult w = write_state_file(path, host, origin);  // hash + header + payload + fsync + rename
    best_write = std::min(best_write, secs(t));
    file_bytes = w.file_bytes;

    }
    t = Clock::now();
    {
      InputBytes in = InputBytes::open(plain);  // plain read floor: touch every byte once
      uint64_t sum = 0;
      for (size_t i = 0; i < in.size(); i += 64) sum += in.data()[i];
      if (sum == 42) std::printf(" ");
    }
    best_read = std::min(best_read, secs(t));

    t = Clock::now();
    StateFile f = StateFile::open(path, StateCheck::kFull);  // mmap + every hash
    best_verify = std::min(best_verify, secs(t));
    t = Clock::now();
    auto back = restore_state_file(f, backend, origin.model_fingerprint, capacity + 1000);  // + re-hash
    best_restore = std::min(best_restore, secs(t));
    if (back->position() != pos) return 1;
  }
  std::filesystem::remove(path);
  std::filesystem::remove(plain);
  const double gb = payload / 1e9;
  std::printf("classes: %zu, payload %.1f MB, file %.1f MB\n", nclasses, payload / 1e6, file_bytes / 1e6);
  std::printf("best of %d:\n", reps);
  std::printf("  snapshot_state (copy live classes)          %7.3f s  %6.2f GB/s\n", best_snap, gb / best_snap);
  std::printf("  class hashes, 1 thread                       %7.3f s  %6.2f GB/s\n", best_h1, gb / best_h1);
  std::printf("  class hashes, %2u threads                     %7.3f s  %6.2f GB/s\n", std::min(16u, cores), best_hn, gb / best_hn);
  std::printf("  write_state_file (hash+write+fsync+rename)   %7.3f s  %6.2f GB/s\n", best_write, gb / best_write);
  std::printf("  plain atomic write of the same bytes         %7.3f s  %6.2f GB/s\n", best_plain, gb / best_plain);
  std::printf("  file path / plain write                      %7.3f\n", best_write / best_plain);
  std::printf("  StateFile::open kFull (mmap+verify, warm)    %7.3f s  %6.2f GB/s\n", best_verify, gb / best_verify);
  std::printf("  restore_state_file (copy+restore+re-hash)    %7.3f s  %6.2f GB/s\n", best_restore, gb / best_restore);
  std::printf("  verified restore total                       %7.3f s  %6.2f GB/s\n", best_verify + best_restore,
              gb / (best_verify + best_restore));
  std::printf("  plain read of the same bytes (warm)          %7.3f s  %6.2f GB/s\n", best_read, gb / best_read);
  std::printf("  snapshot total (copy + file path)            %7.3f s  %6.2f GB/s\n", best_snap + best_write,
              gb / (best_snap + best_write));
  return 0;
}
