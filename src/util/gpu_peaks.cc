// The GPU peak table and its lookup by device name; see gpu_peaks.h.
#include "util/gpu_peaks.h"

#include <array>
#include <cctype>
#include <string>

#include "util/text.h"

namespace stitch {
namespace {

// Where the planner's table and the profiler's used to disagree, the datasheet value was kept and
// the row says so. The A100s: 40GB cards (SXM4 and PCIe) 1555 GB/s, 80GB SXM4 2039 GB/s, 80GB
// PCIe 1935 GB/s.
// Memory: the datasheets' 141 GB (H200), 80 GB (H100, A100 80GB), 180 GB (B200 as DGX B200 lists
// it), 40, 48 and 24 GB.
constexpr std::array<GpuPeakRow, 9> kRows = {{
    {"H200", "NVIDIA H200", 67.0, 4800.0, 132, 494.7, 141.0,
     "NVIDIA H200 datasheet (SXM): FP32 67 TFLOP/s, HBM3e 4.8 TB/s, TF32 989 TFLOP/s sparse"},
    {"H100 PCIe", "NVIDIA H100 PCIe", 51.0, 2000.0, 114, 378.0, 80.0,
     "NVIDIA H100 datasheet (PCIe): FP32 51 TFLOP/s, HBM2e 2.0 TB/s, TF32 756 TFLOP/s sparse"},
    {"H100", "NVIDIA H100 SXM", 67.0, 3350.0, 132, 494.7, 80.0,
     "NVIDIA H100 datasheet (SXM): FP32 67 TFLOP/s, HBM3 3.35 TB/s, TF32 989 TFLOP/s sparse"},
    {"B200", "NVIDIA B200", 80.0, 8000.0, 148, 1100.0, 180.0,
     "NVIDIA Blackwell datasheet (B200): FP32 80 TFLOP/s, HBM3e 8 TB/s, TF32 2.2 PFLOP/s sparse "
     "(the profiler's table had no B200 row)"},
    {"A100 80GB PCIe", "NVIDIA A100 80GB PCIe", 19.5, 1935.0, 108, 156.0, 80.0,
     "NVIDIA A100 datasheet (80GB PCIe): FP32 19.5 TFLOP/s, HBM2e 1935 GB/s, TF32 312 TFLOP/s "
     "sparse (neither old table had it: the planner assumed 2039, the profiler 1555)"},
    {"A100 80GB", "NVIDIA A100 80GB SXM", 19.5, 2039.0, 108, 156.0, 80.0,
     "NVIDIA A100 datasheet (80GB SXM4): FP32 19.5 TFLOP/s, HBM2e 2039 GB/s, TF32 312 TFLOP/s "
     "sparse"},
    {"A100", "NVIDIA A100 40GB", 19.5, 1555.0, 108, 156.0, 40.0,
     "NVIDIA A100 datasheet (40GB, SXM4 and PCIe): FP32 19.5 TFLOP/s, HBM2 1555 GB/s, TF32 312 "
     "TFLOP/s sparse (the planner used to give an unnamed A100 the 80GB card's 2039)"},
    {"L40S", "NVIDIA L40S", 91.6, 864.0, 142, 91.6, 48.0,
     "NVIDIA L40S datasheet: FP32 91.6 TFLOP/s, GDDR6 864 GB/s, TF32 183 TFLOP/s sparse"},
    {"L4", "NVIDIA L4", 30.3, 300.0, 58, 60.0, 24.0,
     "NVIDIA L4 datasheet: FP32 30.3 TFLOP/s, GDDR6 300 GB/s, TF32 120 TFLOP/s sparse"},
}};

bool key_matches(std::string_view key, const std::string& device) {
  std::string words = lower(key);
  size_t start = 0;
  while (start < words.size()) {
    size_t end = words.find(' ', start);
    if (end == std::string::npos) end = words.size();
    if (device.find(words.substr(start, end - start)) == std::string::npos) return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

std::span<const GpuPeakRow> gpu_peak_table() {
  return kRows;
}

const GpuPeakRow* find_gpu_peaks(std::string_view device_name) {
  std::string device = lower(device_name);
  for (const GpuPeakRow& row : gpu_peak_table())
    if (key_matches(row.key, device)) return &row;
  return nullptr;
}

const GpuPeakRow& h200_peak_row() {
  return kRows[0];
}

}  // namespace stitch
