// The one table of GPU peak rates: plain FP32, DRAM bandwidth, SM count, dense TF32 and memory
// size of each GPU model, from the vendors' datasheets (leads, not measurements). The planner's
// cost model (plan::peaks_for_gpu) and the profiler's roofline (peaks_for_device) both read it.
#pragma once

#include <span>
#include <string_view>

namespace stitch {

struct GpuPeakRow {
  // The words that must all occur in the device name as the driver reports it ("NVIDIA H200"),
  // case-insensitive; the first row that matches wins, so variants come before the family.
  std::string_view key;
  std::string_view model;    // "NVIDIA H200"
  double fp32_tflops = 0;    // plain FP32 (CUDA cores), not tensor cores
  double dram_gbps = 0;
  int sms = 0;
  double tf32_tflops = 0;    // dense TF32 tensor cores (the "with sparsity" figure halved)
  double memory_gb = 0;      // device memory, the datasheet's GB (1e9 bytes; under what it holds)
  std::string_view source;   // where the numbers come from
};

std::span<const GpuPeakRow> gpu_peak_table();

// The first row whose key words all occur in `device_name`; nullptr when the GPU is not in it.
const GpuPeakRow* find_gpu_peaks(std::string_view device_name);

// The H200's row: the GPU this project measures on, and the planner's rates for an unknown GPU.
const GpuPeakRow& h200_peak_row();

}  // namespace stitch
