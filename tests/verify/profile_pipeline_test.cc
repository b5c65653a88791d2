// The profiling pipeline on a CPU: shapes-only slots from graph.json (read back by the runner's own
// parser), profile_program with a fake process runner standing in for stitch-runner and ncu
// (counters attached, metric-set retry, counters not permitted, a runner without a device), and
// `stitchcuda profile` on bad input and without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "runner/spec.h"
#include "util/fs.h"
#include "verify/build/gpu_info.h"
#include "verify/profile/profile_ncu.h"
#include "verify/profile/profile_run.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json graph_document() {
  json out = {{"shape", {4, 8}}, {"dtype", "float32"}, {"strides", {8, 1}}};
  return {
      {"format", "stitchcuda.graph"},
      {"version", 1},
      {"inputs",
       {{{"name", "x"},
         {"kind", "user"},
         {"shape", {4, 8}},
         {"dtype", "float32"},
         {"strides", {8, 1}},
         {"distribution", "rand"}},
        {{"name", "idx"},
         {"kind", "user"},
         {"shape", {4}},
         {"dtype", "int64"},
         {"distribution", "randint:0:8"}}}},
      {"params", {{{"name", "w"}, {"kind", "parameter"}, {"shape", {8}}, {"dtype", "float32"}}}},
      {"nodes",
       {{{"id", "split"}, {"op", "aten.split.Tensor"}, {"outputs", {out, out}}},
        {{"id", "relu"}, {"op", "aten.relu.default"}, {"outputs", {out}}}}},
      {"outputs", {{{"node", "split"}, {"out", 1}}, {{"node", "relu"}}, {{"input", 0}}}}};
}

TEST(ProfileSlots, FromGraphAndReadByTheRunner) {
  auto slots = self_test_slots_from_graph(graph_document());
  ASSERT_TRUE(slots.ok()) << slots.error().message;
  EXPECT_EQ((*slots)["inputs"][0]["distribution"], "rand");
  EXPECT_EQ((*slots)["outputs"].size(), 3u);
  auto spec = runner::parse_slots(slots->dump(), /*self_test=*/true, 1);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_EQ(spec->inputs.size(), 2u);
  EXPECT_EQ(spec->inputs[1].dtype, STITCH_INT64);
  EXPECT_EQ(spec->inputs[1].distribution.kind, runner::DistributionKind::randint);
  EXPECT_EQ(spec->params[0].shape, std::vector<int64_t>{8});
  ASSERT_EQ(spec->outputs.size(), 3u);
  EXPECT_EQ(spec->outputs[0].shape, (std::vector<int64_t>{4, 8}));

  json broken = graph_document();
  broken["outputs"] = {{{"node", "missing"}}};
  EXPECT_FALSE(self_test_slots_from_graph(broken).ok());
  broken = graph_document();
  broken["outputs"] = {{{"node", "split"}, {"out", 5}}};
  EXPECT_FALSE(self_test_slots_from_graph(broken).ok());
  broken = graph_document();
  broken["nodes"][0]["id"] = 7;  // mistyped: an Error, not an exception
  EXPECT_FALSE(self_test_slots_from_graph(broken).ok());
  EXPECT_FALSE(self_test_slots_from_graph(json::object()).ok());
}

// A training-mode graph's state updates (BatchNorm's running statistics) are outputs of the
// program too, after the graph's outputs: the profile run allocates a slot for each (without
// them the program refused the call: "expected 1 inputs and 10 outputs").
TEST(ProfileSlots, StateUpdatesAreOutputsAfterTheGraphsOutputs) {
  json graph = graph_document();
  graph["params"].push_back(
      {{"name", "bn.running_mean"}, {"kind", "buffer"}, {"shape", {8}}, {"dtype", "float32"}});
  json stats = {{"shape", {8}}, {"dtype", "float32"}, {"strides", {1}}};
  const json normalized = graph["nodes"][1]["outputs"][0];
  graph["nodes"].push_back(
      {{"id", "bn"}, {"op", "aten.batch_norm"}, {"outputs", {normalized, stats}}});
  graph["state_updates"] = {{{"param", "bn.running_mean"}, {"value", {{"node", "bn"}, {"out", 1}}}}};
  auto slots = self_test_slots_from_graph(graph);
  ASSERT_TRUE(slots.ok()) << slots.error().message;
  ASSERT_EQ((*slots)["outputs"].size(), 4u);
  EXPECT_EQ((*slots)["outputs"][3]["shape"], json({8}));
  auto spec = runner::parse_slots(slots->dump(), /*self_test=*/true, 1);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->outputs.size(), 4u);

  graph["state_updates"] = {{{"param", "bn.running_mean"}}};
  EXPECT_FALSE(self_test_slots_from_graph(graph).ok());
  graph["state_updates"] = {{{"param", "bn.running_mean"}, {"value", {{"node", "gone"}}}}};
  EXPECT_FALSE(self_test_slots_from_graph(graph).ok());
}

std::string argument_after(const std::vector<std::string>& argv, const std::string& flag) {
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == flag) return argv[i + 1];
  return "";
}

// Plays stitch-runner (writes the timeline it is asked for) and ncu (writes a CSV log).
class FakeTools final : public ProcessRunner {
 public:
  json timeline;
  std::function<std::string(const std::vector<std::string>& argv)> ncu_log;
  std::string ncu_stdout;
  int ncu_exit = 0;
  std::vector<std::vector<std::string>> ncu_calls;
  std::vector<std::string> runner_argv;
  std::filesystem::path runner_cwd;

  Result<ProcessResult> run(const ProcessSpec& spec) override {
    ProcessResult result;
    result.exit_code = 0;
    if (spec.argv.front() == "/fake/ncu") {
      ncu_calls.push_back(spec.argv);
      std::string log = ncu_log ? ncu_log(spec.argv) : "";
      STITCH_TRY(write_file_atomic(argument_after(spec.argv, "--log-file"), log));
      result.exit_code = ncu_exit;
      result.stdout_text = ncu_stdout;
      return result;
    }
    std::string profile = argument_after(spec.argv, "--profile");
    if (profile.empty()) return make_error("fake runner called without --profile");
    runner_argv = spec.argv;
    runner_cwd = spec.cwd;
    if (!runner_cwd.empty() && !fs::is_directory(runner_cwd))
      return make_error("the runner's working directory {} does not exist", runner_cwd.string());
    STITCH_TRY(write_file_atomic(profile, timeline.dump()));
    if (timeline.value("status", "ok") != "ok") result.exit_code = 3;
    return result;
  }
};

json one_kernel_timeline() {
  return {{"format", "stitchcuda.profile_timeline"},
          {"version", 1},
          {"status", "ok"},
          {"device", {{"name", "NVIDIA H200"}, {"sm_count", 132}}},
          {"cupti", {{"available", true}}},
          {"activities",
           {{{"type", "kernel"},
             {"name", "copy_kernel(float*)"},
             {"mangled_name", "_Z11copy_kernelPf"},
             {"start_ns", 100},
             {"end_ns", 9100},
             {"grid", {1056, 1, 1}}},
            {{"type", "kernel"},
             {"name", "tiny()"},
             {"mangled_name", "_Z4tinyv"},
             {"start_ns", 9200},
             {"end_ns", 9300}}}},
          {"totals", {{"forward_ns", 10000}, {"gpu_busy_ns", 9100}}},
          {"notes", json::array()}};
}

std::string csv_for(const std::string& metrics_line) {
  return "==PROF== Connected to process 1\n"
         "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n" +
         metrics_line + "\n";
}

class ProfilePipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "stitch_profile_XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    tools_.timeline = one_kernel_timeline();
    request_.runner = "/fake/stitch-runner";
    request_.program = dir_ / "program.so";
    request_.work_dir = dir_ / "work";
    request_.ncu = fs::path("/fake/ncu");
    request_.top_kernels = 1;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
  FakeTools tools_;
  ProfileRequest request_;
};

TEST_F(ProfilePipeline, AttachesNcuCountersToTheTopKernel) {
  tools_.ncu_log = [](const std::vector<std::string>&) {
    return csv_for(
        "\"0\",\"_Z11copy_kernelPf\",\"dram__throughput.avg.pct_of_peak_sustained_"
        "elapsed\",\"%\",\"91.5\"\n"
        "\"0\",\"_Z11copy_kernelPf\",\"sm__throughput.avg.pct_of_peak_sustained_"
        "elapsed\",\"%\",\"9.5\"\n"
        "\"0\",\"_Z11copy_kernelPf\",\"sm__warps_active.avg.pct_of_peak_sustained_"
        "active\",\"%\",\"77\"");
  };
  auto report = profile_program(tools_, request_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(tools_.ncu_calls.size(), 1u);  // --top 1
  EXPECT_EQ(argument_after(tools_.ncu_calls[0], "--kernel-name"), "regex:^_Z11copy_kernelPf$");
  // ncu starts the runner as a short verification run, reachable over the network.
  const auto& call = tools_.ncu_calls[0];
  EXPECT_NE(std::find(call.begin(), call.end(), "--no-network-isolation"), call.end());
  EXPECT_EQ(argument_after(call, "--launch-counting"), "off");
  // ncu's injected library keeps its descriptors (the runner died of SIGSEGV when they closed).
  EXPECT_NE(std::find(call.begin(), call.end(), "--under-profiler"), call.end());
  ASSERT_EQ(report->kernels.size(), 2u);
  const ProfileKernel& top = report->kernels[0];
  ASSERT_TRUE(top.counters);
  EXPECT_DOUBLE_EQ(*top.counters->dram_pct, 91.5);
  EXPECT_EQ(top.bottleneck, Bottleneck::memory);
  EXPECT_FALSE(report->kernels[1].counters);
  EXPECT_EQ(report->ncu.profiled, 1);
  ASSERT_TRUE(report->peaks);
  EXPECT_EQ(report->peaks->name, "H200");
  EXPECT_TRUE(report->nsys_checked);
}

TEST_F(ProfilePipeline, RelativePathsReachTheRunnerAbsolute) {
  // The runner starts in its sandbox directory: a relative --slots or --program would not resolve.
  fs::path previous = fs::current_path();
  fs::current_path(dir_);
  request_.program = "program.so";
  request_.slots = "slots.json";
  request_.work_dir = "work";
  request_.use_ncu = false;
  auto report = profile_program(tools_, request_);
  fs::current_path(previous);
  ASSERT_TRUE(report.ok()) << report.error().message;
  for (const char* flag : {"--program", "--slots", "--result", "--work-dir", "--profile"}) {
    std::string value = argument_after(tools_.runner_argv, flag);
    EXPECT_TRUE(fs::path(value).is_absolute()) << flag << " " << value;
  }
  EXPECT_TRUE(tools_.runner_cwd.is_absolute());
}

TEST_F(ProfilePipeline, RetriesWithASmallerMetricSet) {
  const auto& tiers = ncu_metric_tiers();
  tools_.ncu_log = [&](const std::vector<std::string>& argv) -> std::string {
    std::string metrics = argument_after(argv, "--metrics");
    if (metrics.find(tiers[0].back()) != std::string::npos)
      return "==ERROR== Failed to find metric " + tiers[0].back() + "\n";
    return csv_for(
        "\"0\",\"k\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\",\"%\","
        "\"88\"\n\"0\",\"k\",\"dram__throughput.avg.pct_of_peak_sustained_"
        "elapsed\",\"%\",\"10\"");
  };
  auto report = profile_program(tools_, request_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(tools_.ncu_calls.size(), 2u);
  EXPECT_EQ(report->ncu.metrics, tiers[1]);
  EXPECT_EQ(report->kernels[0].bottleneck, Bottleneck::compute);
}

TEST_F(ProfilePipeline, RetriesWithoutOutputFlagsAnOlderNcuLacks) {
  tools_.ncu_log = [](const std::vector<std::string>& argv) -> std::string {
    if (std::find(argv.begin(), argv.end(), "--page") != argv.end())
      return "==ERROR== unrecognised option '--page'\n";
    return csv_for(
        "\"0\",\"k\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\",\"%\",\"5\"\n"
        "\"0\",\"k\",\"dram__throughput.avg.pct_of_peak_sustained_elapsed\",\"%\",\"7\"");
  };
  auto report = profile_program(tools_, request_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(tools_.ncu_calls.size(), 2u);
  EXPECT_EQ(argument_after(tools_.ncu_calls[1], "--print-units"), "");
  EXPECT_EQ(report->ncu.profiled, 1);
  EXPECT_EQ(report->kernels[0].bottleneck, Bottleneck::latency);
}

TEST_F(ProfilePipeline, CountersNotPermittedLeaveTheTimeline) {
  tools_.ncu_exit = 1;
  tools_.ncu_stdout =
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
      "NVIDIA GPU Performance Counters";
  request_.top_kernels = 3;
  auto report = profile_program(tools_, request_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(tools_.ncu_calls.size(), 1u);  // no point trying the other kernels
  EXPECT_FALSE(report->kernels[0].counters);
  EXPECT_EQ(report->kernels[0].bottleneck, Bottleneck::unknown);
  bool noted = false;
  for (const auto& note : report->notes)
    noted |= note.find("not permitted") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_DOUBLE_EQ(*report->gpu_busy_ns, 9100);
}

TEST_F(ProfilePipeline, NoNcuMeansNoNcuCalls) {
  request_.use_ncu = false;
  auto report = profile_program(tools_, request_);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(tools_.ncu_calls.empty());
  EXPECT_FALSE(report->ncu.attempted);
}

TEST_F(ProfilePipeline, ARunnerWithoutADeviceIsAnError) {
  tools_.timeline = {{"format", "stitchcuda.profile_timeline"},
                     {"status", "no_device"},
                     {"message", "no CUDA device: cudaErrorNoDevice"}};
  auto report = profile_program(tools_, request_);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message.find("no CUDA device"), std::string::npos);
}

// `stitchcuda profile` itself: bad input exits 2, no GPU exits 1, and neither writes anything.
class ProfileCli : public ProfilePipeline {
 protected:
  ProcessResult cli(std::vector<std::string> args) {
    ProcessSpec spec;
    spec.argv = {STITCH_STITCHCUDA_PATH, "profile"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.argv.insert(spec.argv.end(), {"--runs-dir", (dir_ / "runs").string()});
    spec.timeout_s = 60;
    SystemProcessRunner runner;
    auto result = runner.run(spec);
    EXPECT_TRUE(result.ok());
    return result.ok() ? *result : ProcessResult{};
  }
  std::string task() const { return fs::path(STITCH_TEST_DATA_DIR) / "tasks/scale_shift_relu.py"; }
  std::string program() const {
    return fs::path(STITCH_TEST_DATA_DIR) / "programs/scale_shift_relu.cu";
  }
};

TEST_F(ProfileCli, BadInputExitsTwo) {
  ProcessResult missing = cli({(dir_ / "nope.py").string(), program()});
  EXPECT_EQ(missing.exit_code, 2) << missing.stderr_text;
  EXPECT_NE(missing.stderr_text.find("no such file"), std::string::npos);
  ProcessResult no_program = cli({task()});
  EXPECT_EQ(no_program.exit_code, 2);
  EXPECT_NE(no_program.stderr_text.find("program"), std::string::npos);
  ProcessResult both = cli({task(), program(), "--reference"});
  EXPECT_EQ(both.exit_code, 2);
  ProcessResult not_cuda = cli({task(), task()});
  EXPECT_EQ(not_cuda.exit_code, 2);
  ProcessResult not_a_run_dir = cli({dir_.string(), program()});
  EXPECT_EQ(not_a_run_dir.exit_code, 2);
  EXPECT_NE(not_a_run_dir.stderr_text.find("graph.json"), std::string::npos);
  ProcessResult bad_flag = cli({task(), program(), "--top", "many"});
  EXPECT_EQ(bad_flag.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "runs"));
}

TEST_F(ProfileCli, WithoutAGpuSaysSoAndWritesNothing) {
  if (query_gpu(0)) GTEST_SKIP() << "a GPU is visible: the no-GPU path cannot be seen here";
  for (bool reference : {false, true}) {
    ProcessResult result = reference ? cli({task(), "--reference"}) : cli({task(), program()});
    EXPECT_EQ(result.exit_code, 1) << result.stderr_text;
    EXPECT_NE(result.stderr_text.find("no CUDA GPU"), std::string::npos) << result.stderr_text;
    EXPECT_FALSE(fs::exists(dir_ / "runs"));
  }
}

}  // namespace
}  // namespace stitch
