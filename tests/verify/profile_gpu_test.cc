// Profiling on a GPU (skips visibly without one): `stitch-runner --self-test --profile` on
// tests/programs/scale_shift_relu.cu gives a timeline with the program's kernel, and the whole
// pipeline (runner, ncu when it is installed and permitted, the rules) gives a profile.
#include <gtest/gtest.h>
#include <unistd.h>

#include <iostream>

#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/process.h"
#include "verify/build/build_cache.h"
#include "verify/build/compiler.h"
#include "verify/build/gpu_info.h"
#include "verify/profile/profile_run.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ProfileGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!query_gpu(0)) GTEST_SKIP() << "no CUDA device";
    std::string pattern = (fs::temp_directory_path() / "stitch_profile_gpu_XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    NvccCompiler compiler(runner_);
    auto cache = BuildCache::open(dir_ / "cache", "test", compiler);
    ASSERT_TRUE(cache.ok()) << cache.error().message;
    BuildRequest request;
    request.sources = {fs::path(STITCH_TEST_DATA_DIR) / "programs" / "scale_shift_relu.cu"};
    request.arch = detect_arch(0);
    auto built = cache->build(request);
    ASSERT_TRUE(built.ok()) << built.error().message;
    ASSERT_TRUE(built->ok) << built->log;
    library_ = built->library_path;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_, ec);
  }

  SystemProcessRunner runner_;
  fs::path dir_;
  fs::path library_;
};

TEST_F(ProfileGpu, RunnerProfileTracesTheProgramsKernel) {
  fs::path timeline_path = dir_ / "timeline.json";
  ProcessSpec spec;
  // Without --slots the runner's built-in self-test spec is scale_shift_relu's signature.
  spec.argv = {STITCH_RUNNER_PATH, "--program",
               library_.string(),  "--self-test",
               "--result",         (dir_ / "runner.json").string(),
               "--profile",        timeline_path.string(),
               "--warmup",         "2"};
  spec.timeout_s = 300;
  auto result = runner_.run(spec);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->exit_code, 0) << result->describe() << "\n" << result->stderr_text;
  auto text = read_file(timeline_path);
  ASSERT_TRUE(text.ok()) << text.error().message;
  json timeline = json::parse(*text);
  ASSERT_EQ(timeline["status"], "ok") << timeline.dump(1);
  EXPECT_GT(timeline["forward"]["event_ms"].get<double>(), 0);
  EXPECT_EQ(timeline["untraced"]["event_ms"].size(), 2u);
  if (!timeline["cupti"]["available"].get<bool>()) {
    ADD_FAILURE() << "CUPTI unavailable on this GPU machine: "
                  << timeline["cupti"]["detail"].get<std::string>();
    return;
  }
  int kernels = 0;
  for (const json& activity : timeline["activities"]) {
    if (activity["type"] != "kernel") continue;
    ++kernels;
    EXPECT_GT(activity["duration_ns"].get<int64_t>(), 0) << activity.dump();
    EXPECT_NE(activity["name"].get<std::string>().find("scale_shift_relu"), std::string::npos)
        << activity.dump();
    EXPECT_GT(activity["block"][0].get<int>(), 0);
    EXPECT_GT(activity["registers_per_thread"].get<int>(), 0);
  }
  EXPECT_GE(kernels, 1) << timeline.dump(1);
  const json& totals = timeline["totals"];
  EXPECT_GT(totals["gpu_busy_ns"].get<int64_t>(), 0);
  EXPECT_LE(totals["gpu_busy_ns"].get<int64_t>(), totals["forward_ns"].get<int64_t>());
  EXPECT_TRUE(timeline["api"]["traced"].get<bool>()) << timeline["api"].dump();
  EXPECT_GE(timeline["api"]["launches"].get<int>(), 1) << timeline["api"].dump();
}

TEST_F(ProfileGpu, PipelineProfilesTheProgram) {
  ProfileRequest request;
  request.runner = STITCH_RUNNER_PATH;
  request.program = library_;
  request.work_dir = dir_ / "work";
  request.top_kernels = 1;
  request.ncu_timeout_s = 300;
  auto report = profile_program(runner_, request);
  ASSERT_TRUE(report.ok()) << report.error().message;
  std::cout << format_profile_table(*report);
  EXPECT_GT(report->forward_ns, 0);
  ASSERT_FALSE(report->kernels.empty());
  const ProfileKernel& top = report->kernels[0];
  EXPECT_GT(top.total_ns, 0);
  EXPECT_NE(top.name.find("scale_shift_relu"), std::string::npos);
  if (report->ncu.profiled == 0) {
    std::cout << "ncu gave no counters here: " << report->ncu.detail << "\n";
    // Only the machine may refuse counters (not installed, not permitted, no profiler for the
    // GPU); ncu failing on our runner is our bug (it died of signal 11 before --under-profiler).
    const std::string& detail = report->ncu.detail;
    EXPECT_TRUE(!report->ncu.attempted || detail.find("not_permitted") != std::string::npos ||
                detail.find("profiler_unavailable") != std::string::npos)
        << detail;
    EXPECT_EQ(top.bottleneck == Bottleneck::unknown || top.bottleneck == Bottleneck::launch_host,
              true);
    return;
  }
  ASSERT_TRUE(top.counters);
  EXPECT_TRUE(top.counters->dram_pct || top.counters->memory_pct);
  EXPECT_TRUE(top.counters->sm_pct);
  EXPECT_NE(top.bottleneck, Bottleneck::unknown) << top.bottleneck_reason;
  // 16 MiB in and 16 MiB out per call: the DRAM counters must have seen most of it.
  ASSERT_TRUE(top.counters->dram_bytes());
  EXPECT_GT(*top.counters->dram_bytes(), 16e6);
}

}  // namespace
}  // namespace stitch
