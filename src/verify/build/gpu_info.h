// What the build needs to know about the GPU: compute capability (→ nvcc target), name, SM count,
// L2 size and memory. Read through the CUDA driver library loaded with dlopen at run time, so the
// orchestrator links no CUDA library and works unchanged on a machine without a GPU or driver.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stitch {

struct GpuInfo {
  int device = 0;
  std::string name;  // "NVIDIA H200"
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;

  std::string arch() const;  // the nvcc target: arch_for_compute_capability ("sm_90a")
};

// The GPU `device`, or nullopt when there is no driver, no such device, or the query fails.
// The driver's answer is read once per process and device.
std::optional<GpuInfo> query_gpu(int device = 0);

// The nvcc target for a compute capability: "sm_<major><minor>", except Hopper's "sm_90a" — the
// arch-specific target whose instructions (wgmma) the kernel library uses there
// (kernels/gemm_tf32x3_wgmma.cuh); a program built for it runs on compute capability 9.0 only.
std::string arch_for_compute_capability(int major, int minor);

// The nvcc target for `device`: its compute capability's when a GPU is present, else sm_90a (the
// project's reference GPU, H100/H200), so builds on a GPU-less machine still check the code.
std::string detect_arch(int device = 0);

constexpr const char* kDefaultArch = "sm_90a";

}  // namespace stitch
