// GPU queries through libcuda.so.1 (the driver API), loaded with dlopen. The driver API rather than
// the runtime: its entry points and attribute numbers are a stable ABI across CUDA versions, it
// ships with every driver (libcudart may not be on the loader path), and these queries create no
// CUDA context in the orchestrator.
#include "verify/build/gpu_info.h"

#include <dlfcn.h>

#include <map>
#include <mutex>

#include <fmt/format.h>

namespace stitch {
namespace {

// From cuda.h (CUresult and CUdevice_attribute values are fixed by the driver ABI).
using CuResult = int;
using CuDevice = int;
constexpr CuResult kCudaSuccess = 0;
constexpr int kAttributeMultiprocessorCount = 16;
constexpr int kAttributeL2CacheSize = 38;
constexpr int kAttributeComputeCapabilityMajor = 75;
constexpr int kAttributeComputeCapabilityMinor = 76;

struct DriverApi {
  CuResult (*init)(unsigned int) = nullptr;
  CuResult (*device_get_count)(int*) = nullptr;
  CuResult (*device_get)(CuDevice*, int) = nullptr;
  CuResult (*device_get_name)(char*, int, CuDevice) = nullptr;
  CuResult (*device_get_attribute)(int*, int, CuDevice) = nullptr;
  CuResult (*device_total_mem)(size_t*, CuDevice) = nullptr;
};

template <typename T>
bool load_symbol(void* library, const char* name, T& function) {
  function = reinterpret_cast<T>(dlsym(library, name));
  return function != nullptr;
}

// Loads the driver once; the handle stays open for the life of the process (unloading a driver
// library that has been initialised is not supported).
const DriverApi* driver_api() {
  static const DriverApi* api = []() -> const DriverApi* {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) return nullptr;
    static DriverApi loaded;
    bool ok = load_symbol(library, "cuInit", loaded.init) &&
              load_symbol(library, "cuDeviceGetCount", loaded.device_get_count) &&
              load_symbol(library, "cuDeviceGet", loaded.device_get) &&
              load_symbol(library, "cuDeviceGetName", loaded.device_get_name) &&
              load_symbol(library, "cuDeviceGetAttribute", loaded.device_get_attribute) &&
              load_symbol(library, "cuDeviceTotalMem_v2", loaded.device_total_mem);
    if (!ok || loaded.init(0) != kCudaSuccess) return nullptr;
    return &loaded;
  }();
  return api;
}

std::optional<GpuInfo> read_gpu(int device) {
  const DriverApi* api = driver_api();
  if (!api) return std::nullopt;
  int count = 0;
  if (api->device_get_count(&count) != kCudaSuccess || device < 0 || device >= count)
    return std::nullopt;
  CuDevice handle = 0;
  if (api->device_get(&handle, device) != kCudaSuccess) return std::nullopt;
  GpuInfo info;
  info.device = device;
  char name[256] = {};
  if (api->device_get_name(name, sizeof(name) - 1, handle) == kCudaSuccess) info.name = name;
  int l2 = 0;
  size_t memory = 0;
  if (api->device_get_attribute(&info.compute_major, kAttributeComputeCapabilityMajor, handle) !=
          kCudaSuccess ||
      api->device_get_attribute(&info.compute_minor, kAttributeComputeCapabilityMinor, handle) !=
          kCudaSuccess)
    return std::nullopt;
  if (api->device_get_attribute(&info.sm_count, kAttributeMultiprocessorCount, handle) !=
      kCudaSuccess)
    info.sm_count = 0;
  if (api->device_get_attribute(&l2, kAttributeL2CacheSize, handle) == kCudaSuccess)
    info.l2_bytes = l2;
  if (api->device_total_mem(&memory, handle) == kCudaSuccess)
    info.memory_bytes = static_cast<int64_t>(memory);
  return info;
}

}  // namespace

std::string GpuInfo::arch() const {
  return arch_for_compute_capability(compute_major, compute_minor);
}

std::string arch_for_compute_capability(int major, int minor) {
  return fmt::format("sm_{}{}{}", major, minor, major == 9 && minor == 0 ? "a" : "");
}

std::optional<GpuInfo> query_gpu(int device) {
  static std::mutex mutex;
  static std::map<int, std::optional<GpuInfo>> answers;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = answers.find(device);
  if (it == answers.end()) it = answers.emplace(device, read_gpu(device)).first;
  return it->second;
}

std::string detect_arch(int device) {
  auto gpu = query_gpu(device);
  return gpu ? gpu->arch() : kDefaultArch;
}

}  // namespace stitch
