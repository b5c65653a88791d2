// The GPU peak table: a few rows pinned and the lookup by device name as the driver reports it
// (its two users are pinned in tests/plan/cost_test.cc and tests/verify/profile_test.cc).
#include "util/gpu_peaks.h"

#include <gtest/gtest.h>

namespace stitch {
namespace {

TEST(GpuPeaks, PinsTheH200) {
  const GpuPeakRow* h200 = find_gpu_peaks("NVIDIA H200");
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200, &h200_peak_row());
  EXPECT_EQ(h200->model, "NVIDIA H200");
  EXPECT_DOUBLE_EQ(h200->fp32_tflops, 67.0);
  EXPECT_DOUBLE_EQ(h200->dram_gbps, 4800.0);
  EXPECT_EQ(h200->sms, 132);
  EXPECT_DOUBLE_EQ(h200->tf32_tflops, 494.7);
}

TEST(GpuPeaks, TellsTheA100sApart) {
  EXPECT_DOUBLE_EQ(find_gpu_peaks("NVIDIA A100-SXM4-40GB")->dram_gbps, 1555.0);
  EXPECT_DOUBLE_EQ(find_gpu_peaks("NVIDIA A100-PCIE-40GB")->dram_gbps, 1555.0);
  EXPECT_DOUBLE_EQ(find_gpu_peaks("NVIDIA A100-SXM4-80GB")->dram_gbps, 2039.0);
  EXPECT_DOUBLE_EQ(find_gpu_peaks("NVIDIA A100 80GB PCIe")->dram_gbps, 1935.0);
  EXPECT_DOUBLE_EQ(find_gpu_peaks("NVIDIA A100-SXM4-80GB")->fp32_tflops, 19.5);
}

TEST(GpuPeaks, VariantsBeforeTheFamily) {
  EXPECT_EQ(find_gpu_peaks("NVIDIA H100 PCIe")->key, "H100 PCIe");
  EXPECT_EQ(find_gpu_peaks("NVIDIA H100 80GB HBM3")->key, "H100");
  EXPECT_DOUBLE_EQ(find_gpu_peaks("NVIDIA H100 80GB HBM3")->dram_gbps, 3350.0);
  EXPECT_EQ(find_gpu_peaks("NVIDIA L40S")->key, "L40S");
  EXPECT_EQ(find_gpu_peaks("NVIDIA L4")->key, "L4");
  EXPECT_EQ(find_gpu_peaks("nvidia h200")->key, "H200") << "case-insensitive";
}

TEST(GpuPeaks, UnknownGpuHasNoRow) {
  EXPECT_EQ(find_gpu_peaks("Tesla T4"), nullptr);
  EXPECT_EQ(find_gpu_peaks(""), nullptr);
}

TEST(GpuPeaks, EveryRowSaysWhereItsNumbersComeFrom) {
  for (const GpuPeakRow& row : gpu_peak_table()) {
    EXPECT_FALSE(row.source.empty()) << row.key;
    EXPECT_GT(row.fp32_tflops, 0) << row.key;
    EXPECT_GT(row.dram_gbps, 0) << row.key;
    EXPECT_GT(row.sms, 0) << row.key;
    EXPECT_GE(row.memory_gb, 16) << row.key;  // the planner refuses plans beyond it
  }
}

}  // namespace
}  // namespace stitch
