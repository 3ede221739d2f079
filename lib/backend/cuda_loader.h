// Finds and loads the CUDA backend, libmemra_cuda.so, on first use. The memra binary never links
// cudart or cuBLAS, so CPU-only commands start fast and run on machines without CUDA; only a
// command that asks for the GPU calls into this loader.
//
// Search order: $MEMRA_CUDA_LIB when set (and nothing else), else next to the running executable
// (/proc/self/exe), then ../lib/memra, ../lib and .. relative to it (the last one is the build
// tree seen from build/test/). The library exports a C ABI (kernels/device.cu).
#pragma once
#include <string>
#include <vector>

namespace memra {

struct CudaDeviceInfo {
  int index = 0;
  std::string description;  // "NVIDIA H200, sm_90, 132 SMs, 139.8 GiB"
};

// What looking for the CUDA backend found. Never an error by itself: callers that need a GPU use
// cuda_symbol(), which throws.
struct CudaProbe {
  enum class State { kReady, kNotBuilt, kLoadFailed, kNoDevice };
  State state = State::kNotBuilt;
  std::string library;                // path of the library found; empty when none
  std::string message;                // one line, e.g. "CUDA backend not built"
  std::string hint;                   // how to get one, may be empty
  std::vector<std::string> searched;  // the paths looked at, in order
  std::vector<CudaDeviceInfo> devices;
};

// Loads the library (once per process; later calls return the same answer) and lists devices.
const CudaProbe& probe_cuda();

// Short name of a state for --json: "ready", "not_built", "load_failed", "no_device".
const char* cuda_state_name(CudaProbe::State state);

// Address of a function exported by the CUDA backend. Throws Error (exit 2) when the backend is
// not built, cannot be loaded, has no device, or lacks the symbol.
void* cuda_symbol(const char* name);

}  // namespace memra
