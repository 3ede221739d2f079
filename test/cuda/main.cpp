// memra_cuda_test: the GPU test executable. Without a usable CUDA device it prints why and exits 77
// (CTest SKIP_RETURN_CODE), never a silent pass.
//   memra_cuda_test ops [--seed N] [--quick] [--only GROUP]
//                                                  op parity against the CPU twins (ops_test.cpp);
//                                                  groups: linear norm mhc topk compressor attention moe
//   memra_cuda_test backend MODEL... [--quick|--race] checkpoint-level checks (backend_test.cpp)
// --quick: fewer shapes and chunk widths, for runs under compute-sanitizer; --race: the fewest
// launches that reach every kernel path (racecheck serialises shared memory: minutes per forward).
//   memra_cuda_test bandwidth MODEL [--gib X]      snapshot/restore bandwidth (bandwidth.cpp)
//   memra_cuda_test host MODEL...                  host-side logic and the harness's inputs, no GPU needed
// Exit: 0 pass, 1 a check failed, 2 usage or runtime error, 77 skipped (no GPU).
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace memra::cuda::test {
int run_ops(uint64_t seed, bool quick, const std::string& only);
int run_backend(const std::vector<std::string>& models, int device_count, bool quick, bool race);
int run_bandwidth(const std::string& model_dir, double gib);
int run_host(const std::vector<std::string>& models);
int run_ops_dry(uint64_t seed);
}  // namespace memra::cuda::test

int main(int argc, char** argv) {
  using namespace memra::cuda::test;
  if (argc < 2) {
    std::fprintf(stderr, "usage: memra_cuda_test ops [--seed N] | backend MODEL... | bandwidth MODEL [--gib X]\n");
    return 2;
  }
  const std::string mode = argv[1];
  std::vector<std::string> args;
  bool quick = false, race = false;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") quick = true;
    else if (std::string(argv[i]) == "--race") race = true;
    else args.push_back(argv[i]);
  }
  try {
    if (mode == "host") {
      if (args.empty()) throw std::runtime_error("host needs at least one model folder");
      const int a = run_host(args), b = run_ops_dry(1);
      return a != 0 ? a : b;
    }
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      std::printf("SKIPPED: no usable CUDA device (%s)\n", err != cudaSuccess ? cudaGetErrorString(err) : "none visible");
      return 77;
    }
    if (mode == "ops") {
      uint64_t seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
      std::string only;
      for (size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "--seed") seed = std::strtoull(args[i + 1].c_str(), nullptr, 10);
        if (args[i] == "--only") only = args[i + 1];
      }
      return run_ops(seed, quick, only);
    }
    if (mode == "backend") {
      if (args.empty()) throw std::runtime_error("backend needs at least one model folder");
      return run_backend(args, count, quick, race);
    }
    if (mode == "bandwidth") {
      if (args.empty()) throw std::runtime_error("bandwidth needs a model folder");
      double gib = 1.0;
      for (size_t i = 1; i + 1 < args.size(); ++i)
        if (args[i] == "--gib") gib = std::atof(args[i + 1].c_str());
      return run_bandwidth(args[0], gib);
    }
    std::fprintf(stderr, "memra_cuda_test: unknown mode %s\n", mode.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memra_cuda_test: error: %s\n", e.what());
    return 2;
  }
}
