// Profiling on a CPU: ncu's CSV (both pages, units, separators, ncu's own messages), ncu failure
// classification and command line, the bottleneck and roofline rules on synthetic counters, the
// runner's timeline arithmetic, and profile.json (building, schema, reading back, the table).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runner/profile_timeline.h"
#include "verify/profile/profile_ncu.h"
#include "verify/profile/profile_report.h"
#include "verify/profile/profile_rules.h"

namespace stitch {
namespace {

using nlohmann::json;

// The details page as ncu --csv --print-units base writes it (one row per metric), with the
// "==PROF==" lines ncu puts into the same log and a kernel name holding commas and quotes.
constexpr const char* kDetailsCsv = R"csv(==PROF== Connected to process 4242 (/build/stitch-runner)
==PROF== Profiling "_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll": 0%....50%....100% - 9 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","stitch-runner","127.0.0.1","_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","16,781,312"
"0","4242","stitch-runner","127.0.0.1","_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_write.sum","Mbyte","16.78"
"0","4242","stitch-runner","127.0.0.1","_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","88.5"
"0","4242","stitch-runner","127.0.0.1","_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed","%","89.1"
"0","4242","stitch-runner","127.0.0.1","_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","7.52"
"0","4242","stitch-runner","127.0.0.1","_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","14.2"
"0","4242","stitch-runner","127.0.0.1","_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","81.0"
"0","4242","stitch-runner","127.0.0.1","_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","sm__sass_thread_inst_executed_op_fadd_pred_on.sum","inst","4,194,304"
"0","4242","stitch-runner","127.0.0.1","_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","sm__sass_thread_inst_executed_op_fmul_pred_on.sum","inst","4,194,304"
"0","4242","stitch-runner","127.0.0.1","_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","sm__sass_thread_inst_executed_op_ffma_pred_on.sum","inst","0"
"0","4242","stitch-runner","127.0.0.1","_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","sm__maximum_warps_per_active_cycle_pct","%","n/a"
"1","4242","stitch-runner","127.0.0.1","void gemm<float, 4>(float const*, ""tag"", int)","1","13","(128, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","71.0"
"1","4242","stitch-runner","127.0.0.1","void gemm<float, 4>(float const*, ""tag"", int)","1","13","(128, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed","%","20.5"
==PROF== Disconnected from process 4242
)csv";

// The raw page: one row per kernel, a units row after the header.
constexpr const char* kRawCsv =
    "\"ID\",\"Process ID\",\"Kernel Name\",\"dram__bytes_read.sum\",\"gpu__time_duration.sum\","
    "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\"\r\n"
    "\"\",\"\",\"\",\"Kbyte\",\"msecond\",\"%\"\r\n"
    "\"0\",\"17\",\"k1\",\"2,048\",\"0.5\",\"33.3\"\r\n"
    "\"1\",\"17\",\"k2\",\"1\",\"2\",\"n/a\"\r\n";

TEST(NcuCsv, ParsesTheDetailsPage) {
  auto kernels = parse_ncu_csv(kDetailsCsv);
  ASSERT_TRUE(kernels.ok()) << kernels.error().message;
  ASSERT_EQ(kernels->size(), 2u);
  const NcuKernelResult& first = (*kernels)[0];
  EXPECT_EQ(first.kernel_name, "_Z21scale_shift_relu_vec4PK6float4S1_S1_PS_ll");
  EXPECT_DOUBLE_EQ(first.metrics.at("dram__bytes_read.sum"), 16781312.0);
  EXPECT_DOUBLE_EQ(first.metrics.at("dram__bytes_write.sum"), 16.78e6);   // Mbyte → bytes
  EXPECT_NEAR(first.metrics.at("gpu__time_duration.sum"), 7520.0, 1e-6);  // usecond → ns
  EXPECT_EQ(first.text_values.at("sm__maximum_warps_per_active_cycle_pct"), "n/a");
  EXPECT_EQ((*kernels)[1].kernel_name, "void gemm<float, 4>(float const*, \"tag\", int)");
  EXPECT_DOUBLE_EQ((*kernels)[1].metrics.at("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
                   71.0);
}

TEST(NcuCsv, ParsesTheRawPageWithItsUnitsRow) {
  auto kernels = parse_ncu_csv(kRawCsv);
  ASSERT_TRUE(kernels.ok()) << kernels.error().message;
  ASSERT_EQ(kernels->size(), 2u);
  EXPECT_EQ((*kernels)[0].kernel_name, "k1");
  EXPECT_DOUBLE_EQ((*kernels)[0].metrics.at("dram__bytes_read.sum"), 2048e3);
  EXPECT_DOUBLE_EQ((*kernels)[0].metrics.at("gpu__time_duration.sum"), 0.5e6);
  EXPECT_FALSE((*kernels)[1].metrics.count("sm__throughput.avg.pct_of_peak_sustained_elapsed"));
}

TEST(NcuCsv, RejectsTextWithoutAHeader) {
  EXPECT_FALSE(parse_ncu_csv("").ok());
  EXPECT_FALSE(parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n").ok());
  EXPECT_FALSE(parse_ncu_csv("\"a\",\"b\"\n1,2\n").ok());
}

TEST(NcuCsv, SplitsQuotedCells) {
  auto rows = parse_csv("a,\"b,c\",\"d\"\"e\"\n\n\"multi\nline\",x\n");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"a", "b,c", "d\"e"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"multi\nline", "x"}));
}

TEST(NcuCsv, ConvertsValuesToBaseUnits) {
  EXPECT_DOUBLE_EQ(*parse_ncu_value("1,048,576", "byte"), 1048576.0);
  EXPECT_DOUBLE_EQ(*parse_ncu_value("2.5", "usecond"), 2500.0);
  EXPECT_DOUBLE_EQ(*parse_ncu_value("3", "msecond"), 3e6);
  EXPECT_DOUBLE_EQ(*parse_ncu_value("1.5", "Gbyte/second"), 1.5e9);
  EXPECT_DOUBLE_EQ(*parse_ncu_value("42", "%"), 42.0);
  EXPECT_DOUBLE_EQ(*parse_ncu_value("7", "cycle"), 7.0);
  EXPECT_FALSE(parse_ncu_value("n/a", "%"));
  EXPECT_FALSE(parse_ncu_value("", "%"));
  EXPECT_FALSE(parse_ncu_value("12abc", "byte"));
}

TEST(NcuCsv, CountersFromMetrics) {
  auto kernels = parse_ncu_csv(kDetailsCsv);
  ASSERT_TRUE(kernels.ok());
  KernelCounters counters = counters_from_ncu((*kernels)[0]);
  EXPECT_DOUBLE_EQ(*counters.dram_pct, 88.5);
  EXPECT_DOUBLE_EQ(*counters.memory_pct, 89.1);
  EXPECT_DOUBLE_EQ(*counters.sm_pct, 14.2);
  EXPECT_DOUBLE_EQ(*counters.occupancy_pct, 81.0);
  EXPECT_FALSE(counters.theoretical_occupancy_pct);  // "n/a"
  EXPECT_DOUBLE_EQ(*counters.flops, 2 * 4194304.0);  // FADD + FMUL + 2 * 0 FFMA
  EXPECT_DOUBLE_EQ(*counters.dram_bytes(), 16781312.0 + 16.78e6);
  KernelCounters partial = counters_from_ncu((*kernels)[1]);
  EXPECT_FALSE(partial.flops);
  EXPECT_FALSE(partial.dram_bytes());
}

TEST(NcuRun, ClassifiesWhatWentWrong) {
  ProcessResult ok;
  ok.exit_code = 0;
  EXPECT_EQ(classify_ncu_run(ok, "", 1), NcuProblem::none);
  EXPECT_EQ(classify_ncu_run(ok, "==WARNING== No kernels were profiled.\n", 0),
            NcuProblem::no_kernel_profiled);
  ProcessResult failed;
  failed.exit_code = 1;
  failed.stdout_text = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission";
  EXPECT_EQ(classify_ncu_run(failed, "", 0), NcuProblem::not_permitted);
  failed.stdout_text = "==ERROR== Failed to initialize the profiler: LibraryNotLoaded";
  EXPECT_EQ(classify_ncu_run(failed, "", 0), NcuProblem::profiler_unavailable);
  failed.stdout_text = "";
  EXPECT_EQ(classify_ncu_run(failed, "==ERROR== Failed to find metric sm__bogus.sum", 0),
            NcuProblem::unknown_metric);
  EXPECT_EQ(classify_ncu_run(failed, "unrecognised option '--kernel-name-base'", 0),
            NcuProblem::unknown_option);
  EXPECT_EQ(classify_ncu_run(failed, "segfault", 0), NcuProblem::failed);
  ProcessResult slow;
  slow.timed_out = true;
  EXPECT_EQ(classify_ncu_run(slow, "", 0), NcuProblem::timed_out);
}

TEST(NcuRun, CommandLine) {
  NcuRequest request{"/opt/ncu", "_Z1kPf", {"a.sum", "b.pct"}, "/tmp/log.csv", {"runner", "-x"}};
  std::vector<std::string> argv = ncu_argv(request);
  auto has_pair = [&](const std::string& flag, const std::string& value) {
    for (size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == flag && argv[i + 1] == value) return true;
    return false;
  };
  EXPECT_EQ(argv.front(), "/opt/ncu");
  EXPECT_TRUE(has_pair("--clock-control", "none"));
  EXPECT_TRUE(has_pair("--target-processes", "all"));
  EXPECT_TRUE(has_pair("--launch-count", "1"));
  EXPECT_TRUE(has_pair("--metrics", "a.sum,b.pct"));
  EXPECT_TRUE(has_pair("--kernel-name", "regex:^_Z1kPf$"));
  EXPECT_TRUE(has_pair("--log-file", "/tmp/log.csv"));
  EXPECT_EQ(argv[argv.size() - 2], "runner");
  EXPECT_EQ(ncu_kernel_filter("a.b$c(d)"), "regex:^a\\.b\\$c\\(d\\)$");
  // Each tier is a subset of the one before: a retry only ever drops metrics.
  const auto& tiers = ncu_metric_tiers();
  ASSERT_GE(tiers.size(), 2u);
  for (size_t t = 1; t < tiers.size(); ++t) {
    EXPECT_LT(tiers[t].size(), tiers[t - 1].size());
    for (const auto& metric : tiers[t])
      EXPECT_NE(std::find(tiers[t - 1].begin(), tiers[t - 1].end(), metric), tiers[t - 1].end());
  }
}

KernelCounters counters(double memory, double sm, std::optional<double> occupancy = 80) {
  KernelCounters c;
  c.memory_pct = memory;
  c.sm_pct = sm;
  c.occupancy_pct = occupancy;
  return c;
}

KernelTimelineFacts busy_gpu() {
  KernelTimelineFacts facts;
  facts.duration_ns = 10000;
  facts.gap_before_ns = 500;
  facts.forward_busy_share = 0.95;
  facts.grid_blocks = 1024;
  facts.sm_count = 132;
  return facts;
}

TEST(BottleneckRules, MemoryComputeLatencyBalanced) {
  BottleneckRules rules;
  EXPECT_EQ(classify_kernel(counters(85, 20), busy_gpu(), rules).bottleneck, Bottleneck::memory);
  EXPECT_EQ(classify_kernel(counters(30, 80), busy_gpu(), rules).bottleneck, Bottleneck::compute);
  EXPECT_EQ(classify_kernel(counters(70, 75), busy_gpu(), rules).bottleneck, Bottleneck::compute);
  EXPECT_EQ(classify_kernel(counters(70, 70), busy_gpu(), rules).bottleneck, Bottleneck::memory);
  EXPECT_EQ(classify_kernel(counters(50, 45), busy_gpu(), rules).bottleneck, Bottleneck::balanced);
  Classification latency = classify_kernel(counters(10, 15, 20), busy_gpu(), rules);
  EXPECT_EQ(latency.bottleneck, Bottleneck::latency);
  EXPECT_NE(latency.reason.find("occupancy"), std::string::npos) << latency.reason;
  KernelTimelineFacts small_grid = busy_gpu();
  small_grid.grid_blocks = 8;
  Classification small = classify_kernel(counters(10, 15, 90), small_grid, rules);
  EXPECT_EQ(small.bottleneck, Bottleneck::latency);
  EXPECT_NE(small.reason.find("8 blocks < 132 SMs"), std::string::npos) << small.reason;
  // DRAM % stands in when the memory-throughput metric is missing.
  KernelCounters dram_only;
  dram_only.dram_pct = 90;
  dram_only.sm_pct = 5;
  EXPECT_EQ(classify_kernel(dram_only, busy_gpu(), rules).bottleneck, Bottleneck::memory);
}

TEST(BottleneckRules, LaunchHostComesFirstAndNeedsIdleGpu) {
  BottleneckRules rules;
  KernelTimelineFacts idle = busy_gpu();
  idle.forward_busy_share = 0.3;
  idle.duration_ns = 3000;
  idle.gap_before_ns = 10000;
  EXPECT_EQ(classify_kernel(counters(85, 20), idle, rules).bottleneck, Bottleneck::launch_host);
  EXPECT_EQ(classify_kernel(std::nullopt, idle, rules).bottleneck, Bottleneck::launch_host);
  idle.gap_before_ns = 1000;  // the GPU is idle, but not mostly before this kernel
  EXPECT_EQ(classify_kernel(counters(85, 20), idle, rules).bottleneck, Bottleneck::memory);
  EXPECT_EQ(classify_kernel(std::nullopt, busy_gpu(), rules).bottleneck, Bottleneck::unknown);
  // Thresholds are the rules' own.
  rules.memory_pct_min = 90;
  EXPECT_EQ(classify_kernel(counters(85, 20), busy_gpu(), rules).bottleneck, Bottleneck::balanced);
}

TEST(BottleneckRules, ForwardClass) {
  BottleneckRules rules;
  EXPECT_EQ(classify_forward(0.4, {{Bottleneck::memory, 10}}, rules).bottleneck,
            Bottleneck::launch_host);
  EXPECT_EQ(
      classify_forward(
          0.9, {{Bottleneck::memory, 10}, {Bottleneck::compute, 30}, {Bottleneck::memory, 15}},
          rules)
          .bottleneck,
      Bottleneck::compute);
  EXPECT_EQ(classify_forward(-1, {}, rules).bottleneck, Bottleneck::unknown);
  for (Bottleneck b : {Bottleneck::memory, Bottleneck::compute, Bottleneck::latency,
                       Bottleneck::launch_host, Bottleneck::balanced, Bottleneck::unknown})
    EXPECT_EQ(enum_from_name<Bottleneck>(enum_name(b)), b);
  EXPECT_FALSE(enum_from_name<Bottleneck>("fast"));
}

TEST(Roofline, PeaksTableAndPosition) {
  auto h200 = peaks_for_device("NVIDIA H200");
  ASSERT_TRUE(h200);
  EXPECT_DOUBLE_EQ(h200->fp32_flops_per_s, 67e12);
  EXPECT_DOUBLE_EQ(h200->dram_bytes_per_s, 4.8e12);
  EXPECT_EQ(peaks_for_device("NVIDIA H100 PCIe")->name, "H100 PCIe");
  EXPECT_EQ(peaks_for_device("nvidia h100 80gb hbm3")->name, "H100");
  EXPECT_DOUBLE_EQ(peaks_for_device("NVIDIA A100-SXM4-40GB")->dram_bytes_per_s, 1.555e12);
  EXPECT_DOUBLE_EQ(peaks_for_device("NVIDIA A100-SXM4-80GB")->dram_bytes_per_s, 2.039e12);
  EXPECT_FALSE(peaks_for_device("Tesla T4"));

  KernelCounters c;
  c.flops = 1e9;
  c.dram_read_bytes = 0.5e9;
  c.dram_write_bytes = 0.5e9;
  c.duration_ns = 1e6;  // 1 ms: 1 TB/s, 1 TFLOP/s
  auto point = roofline_point(c, *h200, 0);
  ASSERT_TRUE(point);
  EXPECT_DOUBLE_EQ(point->intensity, 1.0);
  EXPECT_NEAR(point->ridge, 67.0 / 4.8, 1e-9);
  EXPECT_TRUE(point->memory_side());
  EXPECT_NEAR(point->roof_flops_per_s, 4.8e12, 1);
  EXPECT_NEAR(point->efficiency, 1.0 / 4.8, 1e-9);
  c.flops = 100e9;  // intensity 100 > ridge: compute side, 100 TFLOP/s wanted of 67
  point = roofline_point(c, *h200, 0);
  EXPECT_FALSE(point->memory_side());
  EXPECT_NEAR(point->efficiency, 100.0 / 67.0, 1e-9);
  c.flops.reset();
  EXPECT_FALSE(roofline_point(c, *h200, 1e6));
}

runner::TracedKernel traced_kernel(uint64_t start, uint64_t end, std::string name,
                                   uint32_t correlation = 0) {
  runner::TracedKernel k;
  k.start_ns = start;
  k.end_ns = end;
  k.mangled_name = std::move(name);
  k.correlation_id = correlation;
  k.grid[0] = 4;
  k.block[0] = 256;
  return k;
}

TEST(RunnerTimeline, BusyTimeGapsAndWindow) {
  runner::TraceRecords records;
  // Window [1000, 2000]: A [1100, 1300] and B [1250, 1400] overlap; a copy [1600, 1700];
  // one kernel before the window (the runner's own) that must be left out.
  records.kernels = {traced_kernel(1100, 1300, "_Z1Av"), traced_kernel(1250, 1400, "_Z1Bv"),
                     traced_kernel(900, 950, "runner_fill")};
  records.copies = {{{1600, 1700, /*stream_id=*/7, /*correlation_id=*/0}, 4096, "DtoD"}};
  runner::Timeline timeline = runner::build_timeline(records, 1000, 2000);
  const runner::TimelineTotals& t = timeline.totals;
  EXPECT_EQ(t.forward_ns, 1000);
  EXPECT_EQ(t.kernels, 2);
  EXPECT_EQ(t.copies, 1);
  EXPECT_EQ(t.gpu_busy_ns, 300 + 100);  // [100, 400] and [600, 700]
  EXPECT_DOUBLE_EQ(t.gpu_busy_share, 0.4);
  EXPECT_EQ(t.kernel_ns, 200 + 150);
  EXPECT_EQ(t.leading_gap_ns, 100);
  EXPECT_EQ(t.gap_count, 1);
  EXPECT_EQ(t.largest_gap_ns, 200);
  EXPECT_EQ(t.trailing_gap_ns, 300);
  EXPECT_EQ(t.idle_ns, 600);
  ASSERT_EQ(timeline.activities.size(), 3u);
  EXPECT_EQ(timeline.activities[1].gap_before_ns, 0);  // B starts inside A

  json doc = runner::timeline_to_json(timeline, records);
  EXPECT_EQ(doc["activities"][0]["name"], "A()");  // demangled
  EXPECT_EQ(doc["activities"][0]["mangled_name"], "_Z1Av");
  EXPECT_EQ(doc["activities"][2]["type"], "memcpy");
  EXPECT_EQ(doc["totals"]["gpu_busy_ns"], 400);

  runner::Timeline empty = runner::build_timeline({}, 0, 500);
  EXPECT_EQ(empty.totals.gpu_busy_ns, 0);
  EXPECT_EQ(empty.totals.leading_gap_ns, 500);
}

TEST(RunnerTimeline, LaunchOverheadFromApiRecords) {
  runner::TraceRecords records;
  records.api_calls = {{100, 130, 1, false, "cudaLaunchKernel"},
                       {105, 125, 1, true, "cuLaunchKernel"},  // nested driver call
                       {200, 240, 2, false, "cudaLaunchKernel"},
                       {300, 310, 3, false, "cudaStreamSynchronize"},
                       {400, 900, 4, false, "cudaDeviceSynchronize"}};  // the runner's, after
  records.kernels = {traced_kernel(150, 180, "_Z1Av", 1), traced_kernel(290, 300, "_Z1Bv", 2)};
  runner::ApiSummary summary = runner::summarize_api(records, 0, 350, 1000);
  EXPECT_EQ(summary.launches, 3);                // both API layers count as calls
  EXPECT_EQ(summary.host_api_ns, 30 + 40 + 10);  // the nested call is inside its parent
  EXPECT_DOUBLE_EQ(summary.launch_to_start_mean_ns, (50 + 90) / 2.0);
  EXPECT_EQ(summary.launch_to_start_max_ns, 90);
  ASSERT_FALSE(summary.calls.empty());
  EXPECT_EQ(summary.calls.front().name, "cudaLaunchKernel");
  EXPECT_EQ(summary.calls.front().count, 2);
}

json timeline_document() {
  return {{"format", "stitchcuda.profile_timeline"},
          {"version", 1},
          {"status", "ok"},
          {"program", "/x/program.so"},
          {"device", {{"name", "NVIDIA H200"}, {"sm_count", 132}}},
          {"cupti", {{"available", true}, {"detail", "CUPTI activity API"}}},
          {"untraced", {{"event_ms", {0.5, 0.3, 0.4}}}},
          {"forward", {{"wall_ns", 100000}, {"host_ns", 20000}}},
          {"activities",
           {{{"type", "kernel"},
             {"name", "small()"},
             {"mangled_name", "_Z5smallv"},
             {"start_ns", 1000},
             {"end_ns", 3000},
             {"gap_before_ns", 1000},
             {"grid", {2, 1, 1}},
             {"block", {64, 1, 1}},
             {"registers_per_thread", 16}},
            {{"type", "kernel"},
             {"name", "big()"},
             {"mangled_name", "_Z3bigv"},
             {"start_ns", 5000},
             {"end_ns", 65000},
             {"gap_before_ns", 2000},
             {"grid", {1024, 1, 1}},
             {"block", {256, 1, 1}}},
            {{"type", "kernel"},
             {"name", "small()"},
             {"mangled_name", "_Z5smallv"},
             {"start_ns", 70000},
             {"end_ns", 71000},
             {"gap_before_ns", 5000}},
            {{"type", "memset"},
             {"name", "memset"},
             {"start_ns", 80000},
             {"end_ns", 81000},
             {"bytes", 64}}}},
          {"totals",
           {{"forward_ns", 100000},
            {"gpu_busy_ns", 64000},
            {"kernel_ns", 63000},
            {"memset_ns", 1000},
            {"gap_count", 3},
            {"largest_gap_ns", 9000}}},
          {"api", {{"traced", true}, {"launches", 3}}},
          {"notes", {"a note from the runner"}}};
}

TEST(ProfileReport, FromTheRunnersTimeline) {
  auto report = report_from_timeline(timeline_document());
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->device_name, "NVIDIA H200");
  EXPECT_DOUBLE_EQ(report->forward_ns, 100000);
  EXPECT_DOUBLE_EQ(*report->gpu_busy_ns, 64000);
  EXPECT_DOUBLE_EQ(*report->untraced_forward_ms, 0.4);  // the median
  EXPECT_DOUBLE_EQ(*report->host_ns, 20000);
  ASSERT_EQ(report->kernels.size(), 2u);
  EXPECT_EQ(report->kernels[0].name, "big()");  // largest total first
  EXPECT_EQ(report->kernels[1].launches, 2);
  EXPECT_DOUBLE_EQ(report->kernels[1].total_ns, 3000);
  EXPECT_DOUBLE_EQ(report->kernels[1].mean_gap_before_ns, 3000);
  EXPECT_EQ(report->kernels[1].grid_blocks(), 2);
  EXPECT_EQ(report->timeline.size(), 4u);
  EXPECT_EQ(report->notes, std::vector<std::string>{"a note from the runner"});

  json failed = timeline_document();
  failed["status"] = "no_device";
  failed["message"] = "no CUDA device: none";
  auto error = report_from_timeline(failed);
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.error().message.find("no_device"), std::string::npos);
  EXPECT_FALSE(report_from_timeline(json::array()).ok());
  json mistyped = timeline_document();
  mistyped["cupti"] = {{"available", "yes"}};  // no exception may escape
  EXPECT_FALSE(report_from_timeline(mistyped).ok());
}

TEST(ProfileReport, ClassifiesWritesAndReadsBack) {
  auto report = report_from_timeline(timeline_document());
  ASSERT_TRUE(report.ok());
  report->peaks = peaks_for_device(report->device_name);
  KernelCounters big;
  big.memory_pct = 91;
  big.dram_pct = 90;
  big.sm_pct = 12;
  big.occupancy_pct = 70;
  big.flops = 1e6;
  big.dram_read_bytes = 1e8;
  big.dram_write_bytes = 1e8;
  report->kernels[0].counters = big;
  classify_report(*report, BottleneckRules{});
  EXPECT_EQ(report->kernels[0].bottleneck, Bottleneck::memory);
  ASSERT_TRUE(report->kernels[0].roofline);
  EXPECT_TRUE(report->kernels[0].roofline->memory_side());
  EXPECT_EQ(report->kernels[1].bottleneck, Bottleneck::unknown);
  EXPECT_EQ(report->forward_bottleneck, Bottleneck::memory);  // busy 64%: not launch-bound

  json doc = profile_to_json(*report);
  for (const char* key : {"source", "forward_ms", "gpu_busy_ms", "kernels", "notes"})
    EXPECT_TRUE(doc.contains(key)) << key;
  EXPECT_EQ(doc["source"], "cupti");
  EXPECT_DOUBLE_EQ(doc["forward_ms"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(doc["gpu_busy_ms"].get<double>(), 0.064);
  EXPECT_DOUBLE_EQ(doc["host_ms"].get<double>(), 0.02);
  const json& first = doc["kernels"][0];
  for (const char* key :
       {"name", "duration_ms", "bottleneck", "dram_pct", "sm_pct", "occupancy_pct"})
    EXPECT_TRUE(first.contains(key)) << key;
  EXPECT_EQ(first["bottleneck"], "memory");
  EXPECT_DOUBLE_EQ(first["duration_ms"].get<double>(), 0.06);
  // Without counters the percentages are absent (value(key, default) readers must not throw).
  const json& second = doc["kernels"][1];
  EXPECT_FALSE(second.contains("dram_pct"));
  EXPECT_NO_THROW((void)second.value("dram_pct", 0.0));
  EXPECT_EQ(second["bottleneck"], "unknown");

  auto read = profile_from_json(json::parse(doc.dump()));
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->kernels.size(), 2u);
  EXPECT_EQ(read->kernels[0].bottleneck, Bottleneck::memory);
  EXPECT_DOUBLE_EQ(*read->kernels[0].counters->dram_pct, 90);
  EXPECT_FALSE(read->kernels[1].counters);
  EXPECT_NEAR(read->forward_ns, 100000, 1e-6);
  EXPECT_EQ(read->forward_bottleneck, Bottleneck::memory);

  read->kernels[1].name = "void (anonymous namespace)::k<int, (char)1>(float const*, int)";
  std::string table = format_profile_table(*read);
  EXPECT_NE(table.find("\nk<int, (char)1> "), std::string::npos) << table;  // short name
  EXPECT_EQ(table.find("anonymous"), std::string::npos) << table;
  EXPECT_NE(table.find("big"), std::string::npos) << table;
  EXPECT_NE(table.find("memory"), std::string::npos) << table;
  EXPECT_NE(table.find("90.0"), std::string::npos) << table;
  EXPECT_NE(table.find("GPU busy"), std::string::npos) << table;
}

TEST(ProfileReport, ReadingRejectsWhatIsNotAProfile) {
  EXPECT_FALSE(profile_from_json(json::array()).ok());
  EXPECT_FALSE(profile_from_json({{"source", "cupti"}, {"kernels", json::array()}}).ok());
  EXPECT_FALSE(
      profile_from_json({{"source", "cupti"}, {"forward_ms", 1.0}, {"kernels", {{{"x", 1}}}}})
          .ok());
  auto minimal = profile_from_json({{"source", "torch.profiler"},
                                    {"forward_ms", 2.0},
                                    {"gpu_busy_ms", nullptr},
                                    {"kernels", {{{"name", "aten::add"}, {"duration_ms", 1.5}}}},
                                    {"notes", json::array()}});
  ASSERT_TRUE(minimal.ok()) << minimal.error().message;
  EXPECT_FALSE(minimal->gpu_busy_ns);
  EXPECT_EQ(minimal->kernels[0].bottleneck, Bottleneck::unknown);
  EXPECT_LT(minimal->busy_share(), 0);
}

}  // namespace
}  // namespace stitch
