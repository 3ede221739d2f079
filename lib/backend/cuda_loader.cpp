// The lazy CUDA backend loader (see cuda_loader.h): dlopen() of libmemra_cuda.so, symbol lookup,
// and a device list, with one clear line for each way it can be missing.
#include "backend/cuda_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

#include "core/error.h"

namespace memra {

namespace {

constexpr const char* kLibraryName = "libmemra_cuda.so";

struct Loaded {
  CudaProbe probe;
  void* handle = nullptr;
};

std::vector<std::string> candidates() {
  const char* env = std::getenv("MEMRA_CUDA_LIB");
  if (env && *env) return {env};
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return {};
  std::filesystem::path dir = exe.parent_path();
  return {(dir / kLibraryName).string(), (dir / ".." / "lib" / "memra" / kLibraryName).lexically_normal().string(),
          (dir / ".." / "lib" / kLibraryName).lexically_normal().string(),
          (dir / ".." / kLibraryName).lexically_normal().string()};
}

Loaded load() {
  Loaded out;
  CudaProbe& p = out.probe;
  p.searched = candidates();
  bool from_env = std::getenv("MEMRA_CUDA_LIB") && *std::getenv("MEMRA_CUDA_LIB");
  for (const std::string& path : p.searched) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) {
      p.library = path;
      break;
    }
  }
  if (p.library.empty()) {
    p.state = CudaProbe::State::kNotBuilt;
    if (from_env) {
      p.message = "CUDA backend not found: MEMRA_CUDA_LIB names " + p.searched.front() + ", which is not a file";
      p.hint = "point MEMRA_CUDA_LIB at a libmemra_cuda.so, or unset it";
    } else {
      p.message = "CUDA backend not built (no libmemra_cuda.so next to the memra binary)";
      p.hint = "configure with -DMEMRA_CUDA=ON (or AUTO) on a machine with the CUDA toolkit";
    }
    return out;
  }
  dlerror();
  out.handle = dlopen(p.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!out.handle) {
    const char* why = dlerror();
    p.state = CudaProbe::State::kLoadFailed;
    p.message = "CUDA backend " + p.library + " cannot be loaded: " + (why ? why : "unknown dlopen error");
    p.hint = "check that the CUDA runtime and driver libraries it needs are installed (ldd " + p.library + ")";
    return out;
  }
  using CountFn = int (*)();
  using DescribeFn = int (*)(int, char*, int);
  auto count = reinterpret_cast<CountFn>(dlsym(out.handle, "memra_cuda_device_count"));
  auto describe = reinterpret_cast<DescribeFn>(dlsym(out.handle, "memra_cuda_device_describe"));
  if (!count || !describe) {
    p.state = CudaProbe::State::kLoadFailed;
    p.message = "CUDA backend " + p.library + " lacks memra_cuda_device_count/memra_cuda_device_describe";
    p.hint = "rebuild it from this source tree; it may be from another memra version";
    return out;
  }
  int n = count();
  for (int i = 0; i < n && i < 1024; ++i) {
    char buf[256] = {};
    CudaDeviceInfo info{i, "unknown device"};
    if (describe(i, buf, static_cast<int>(sizeof buf)) == 0) {
      buf[sizeof buf - 1] = '\0';
      info.description = buf;
    }
    p.devices.push_back(std::move(info));
  }
  if (p.devices.empty()) {
    p.state = CudaProbe::State::kNoDevice;
    p.message = "no CUDA device (the CUDA backend at " + p.library + " reports none)";
    p.hint = "check nvidia-smi and CUDA_VISIBLE_DEVICES";
    return out;
  }
  p.state = CudaProbe::State::kReady;
  p.message = std::to_string(p.devices.size()) + " CUDA device" + (p.devices.size() == 1 ? "" : "s");
  return out;
}

const Loaded& loaded() {
  static const Loaded instance = load();  // thread-safe, once per process; the library stays loaded
  return instance;
}

}  // namespace

const CudaProbe& probe_cuda() { return loaded().probe; }

const char* cuda_state_name(CudaProbe::State state) {
  switch (state) {
    case CudaProbe::State::kReady: return "ready";
    case CudaProbe::State::kNotBuilt: return "not_built";
    case CudaProbe::State::kLoadFailed: return "load_failed";
    case CudaProbe::State::kNoDevice: return "no_device";
  }
  return "unknown";
}

void* cuda_symbol(const char* name) {
  const Loaded& l = loaded();
  if (l.probe.state != CudaProbe::State::kReady) throw Error(l.probe.message, l.probe.hint);
  void* sym = dlsym(l.handle, name);
  if (!sym)
    throw Error("CUDA backend " + l.probe.library + " has no function " + name,
                "rebuild it from this source tree; it may be from another memra version");
  return sym;
}

}  // namespace memra
