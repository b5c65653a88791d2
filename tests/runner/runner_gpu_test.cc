// stitch-runner on a GPU: --self-test on tests/programs/scale_shift_relu.cu and on the programs in
// tests/runner/programs/ (one planted hack or one honest near-miss each, built with nvcc here),
// and the judge protocol end to end: this test plays the judge, exporting CUDA IPC handles in a
// slots.json and checking what the runner copied into the check and spot slots. Skips visibly
// without a CUDA device.
#include <cuda_runtime.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/process.h"
#include "verify/judge/runner_client.h"
#include "verify/timing_basis.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define REQUIRE_GPU() \
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device"

class RunnerGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("runner_gpu_test_{}_{}", getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // nvcc tests/runner/programs/<name>.cu → <dir>/<name>.so
  fs::path build(const std::string& name) {
    fs::path source = fs::path(STITCH_SOURCE_DIR) / "tests/runner/programs" / (name + ".cu");
    fs::path library = dir_ / (name + ".so");
    ProcessSpec spec;
    spec.argv = {STITCH_NVCC,
                 "-shared",
                 "-Xcompiler",
                 "-fPIC",
                 "-arch=sm_90",
                 "-I" + (fs::path(STITCH_SOURCE_DIR) / "include").string(),
                 "-I" + (fs::path(STITCH_SOURCE_DIR) / "tests/programs").string(),
                 "-o",
                 library.string(),
                 source.string()};
    spec.timeout_s = 300;
    SystemProcessRunner runner;
    auto result = runner.run(spec);
    EXPECT_TRUE(result.ok() && result->succeeded())
        << name << ": nvcc failed: " << (result.ok() ? result->stderr_text : "");
    return library;
  }

  RunnerRun self_test(const fs::path& program, std::vector<std::string> extra = {},
                      double call_timeout_s = 30, double idle_timeout_s = 10,
                      bool expect_report = true) {
    RunnerInvocation invocation;
    invocation.runner = STITCH_RUNNER_PATH;
    invocation.program = program;
    invocation.result = dir_ / "runner.json";
    invocation.work_dir = dir_ / "work";
    invocation.self_test = true;
    invocation.timing_iters = 10;
    invocation.warmup = 3;
    invocation.timing_sets = 2;
    invocation.call_timeout_s = call_timeout_s;
    invocation.idle_timeout_s = idle_timeout_s;
    invocation.timeout_s = 180;
    invocation.extra_args = std::move(extra);
    SystemProcessRunner processes;
    auto run = run_runner(processes, invocation);
    EXPECT_TRUE(run.ok()) << run.error().message;
    if (!run.ok()) return {};
    if (!run->report && expect_report)
      ADD_FAILURE() << "no runner.json: " << run->report_error
                    << "\nstderr: " << run->process.stderr_text;
    return *run;
  }

  fs::path dir_;
};

bool has_finding(const RunnerRun& run, HackKind kind, bool fatal = true) {
  if (!run.report) return false;
  for (const auto& finding : run.report->findings)
    if (finding.kind == kind && finding.fatal == fatal) return true;
  return false;
}

std::string describe(const RunnerRun& run) {
  std::string text =
      fmt::format("exit {} signal {} verdict {} ({})\n", run.process.exit_code,
                  run.process.term_signal, enum_name(run.verdict.outcome), run.verdict.reason);
  if (run.report) {
    text +=
        fmt::format("status {}: {}\n", enum_name(run.report->status), run.report->message);
    for (const auto& finding : run.report->findings)
      text += fmt::format("  finding {} ({}): {}\n", enum_name(finding.kind),
                          finding.fatal ? "fatal" : "warning", finding.detail);
  }
  return text + "stderr: " + run.process.stderr_text;
}

void expect_clean(const RunnerRun& run) {
  ASSERT_TRUE(run.report.has_value()) << describe(run);
  EXPECT_EQ(run.process.exit_code, 0) << describe(run);
  EXPECT_EQ(run.report->status, RunnerStatus::ok) << describe(run);
  EXPECT_FALSE(run.report->has_fatal_finding()) << describe(run);
  EXPECT_EQ(run.verdict.outcome, Outcome::passed) << describe(run);
  EXPECT_TRUE(run.report->canaries_intact());
  EXPECT_TRUE(run.report->inputs_unchanged());
  EXPECT_TRUE(run.report->determinism_checked);
  EXPECT_TRUE(run.report->deterministic);
  EXPECT_EQ(run.report->gpu_ms.size(), 10u);
  EXPECT_EQ(run.report->wall_ms.size(), 10u);
  for (double ms : run.report->gpu_ms)
    EXPECT_GT(ms, 0);
  EXPECT_EQ(run.report->rechecks.size(), 3u);
  for (const auto& set : run.report->check_sets)
    for (int64_t poison : set.poison_remaining)
      EXPECT_EQ(poison, 0);
}

void expect_hacked(const RunnerRun& run, HackKind kind) {
  ASSERT_TRUE(run.report.has_value()) << describe(run);
  EXPECT_TRUE(has_finding(run, kind)) << describe(run);
  EXPECT_EQ(run.verdict.outcome, Outcome::hacked) << describe(run);
}

TEST_F(RunnerGpu, ScaleShiftReluIsClean) {
  REQUIRE_GPU();
  RunnerRun run = self_test(STITCH_SCALE_SHIFT_RELU_SO);
  expect_clean(run);
  ASSERT_TRUE(run.report.has_value());
  EXPECT_TRUE(run.report->seccomp) << "seccomp filter not installed";
  // The synchronize's own cost is measured, and an honest one-kernel program is timed on the
  // caller's stream (timing_basis.h).
  ASSERT_EQ(run.report->empty_sync_gap_ms.size(), 20u);
  for (double gap : run.report->empty_sync_gap_ms) EXPECT_GT(gap, 0.0);
  EXPECT_EQ(choose_timing_basis(run.report->gpu_ms, run.report->synced_ms,
                                run.report->empty_sync_gap_ms)
                .basis,
            TimingBasis::stream);
  if (run.report->launches_available) {
    for (int launches : run.report->launches_per_forward)
      EXPECT_EQ(launches, 1);
    ASSERT_FALSE(run.report->kernel_names.empty());
    EXPECT_NE(run.report->kernel_names[0].first.find("scale_shift_relu"), std::string::npos);
  } else {
    std::cerr << "CUPTI unavailable: " << run.report->launches_detail << "\n";
  }
}

TEST_F(RunnerGpu, HonestJoinedStreamIsClean) {
  REQUIRE_GPU();
  expect_clean(self_test(build("honest_joined_stream")));
}

TEST_F(RunnerGpu, HonestMallocAsyncWorkspaceIsClean) {
  REQUIRE_GPU();
  RunnerRun run = self_test(build("honest_malloc_async"));
  expect_clean(run);
  if (run.report && run.report->launches_available) {
    for (int launches : run.report->launches_per_forward)
      EXPECT_EQ(launches, 2);
  }
}

TEST_F(RunnerGpu, PersistingL2WindowIsReportedNotFatal) {
  REQUIRE_GPU();
  RunnerRun run = self_test(build("l2_persisting_window"));
  expect_clean(run);
  EXPECT_TRUE(has_finding(run, HackKind::l2_persistence, /*fatal=*/false)) << describe(run);
}

TEST_F(RunnerGpu, NoWriteIsStaleOutput) {
  REQUIRE_GPU();
  expect_hacked(self_test(build("no_write")), HackKind::stale_output);
}

TEST_F(RunnerGpu, UnjoinedSideStreamIsFound) {
  REQUIRE_GPU();
  expect_hacked(self_test(build("side_stream_unjoined")), HackKind::side_stream);
}

TEST_F(RunnerGpu, LateHostThreadIsFound) {
  REQUIRE_GPU();
  expect_hacked(self_test(build("host_thread_late")), HackKind::host_thread);
}

TEST_F(RunnerGpu, MutatedInputsAreFound) {
  REQUIRE_GPU();
  expect_hacked(self_test(build("mutates_inputs")), HackKind::mutates_inputs);
}

TEST_F(RunnerGpu, WritePastTheOutputHitsTheGuardBand) {
  REQUIRE_GPU();
  expect_hacked(self_test(build("out_of_bounds")), HackKind::guard_band);
}

TEST_F(RunnerGpu, OutputCacheKeyedOnPointerIsFound) {
  REQUIRE_GPU();
  expect_hacked(self_test(build("output_cache")), HackKind::output_cache);
}

TEST_F(RunnerGpu, TimesPatchedInTheRunnersMemoryAreForged) {
  REQUIRE_GPU();
  // The program rewrites the runner's GOT entry of cudaEventElapsedTime (every event time / 10);
  // the supervisor's own clock between the call marks disagrees.
  RunnerRun run = self_test(build("forged_timing"));
  expect_hacked(run, HackKind::timing_forged);
}

TEST_F(RunnerGpu, ForkAttemptIsHiddenWork) {
  REQUIRE_GPU();
  expect_hacked(self_test(build("spawns_process")), HackKind::hidden_work);
}

TEST_F(RunnerGpu, PersistentKernelAfterInitTimesOut) {
  REQUIRE_GPU();
  RunnerRun run = self_test(build("persistent_kernel"), {}, 30, /*idle_timeout_s=*/3);
  ASSERT_TRUE(run.report.has_value()) << describe(run);
  EXPECT_EQ(run.process.exit_code, 5) << describe(run);
  EXPECT_EQ(run.report->status, RunnerStatus::timeout) << describe(run);
  expect_hacked(run, HackKind::persistent_kernel);
}

TEST_F(RunnerGpu, HangingKernelTimesOut) {
  REQUIRE_GPU();
  RunnerRun run = self_test(build("hang"), {}, /*call_timeout_s=*/3);
  ASSERT_TRUE(run.report.has_value()) << describe(run);
  EXPECT_EQ(run.process.exit_code, 5) << describe(run);
  EXPECT_EQ(run.report->status, RunnerStatus::timeout) << describe(run);
  EXPECT_EQ(run.verdict.outcome, Outcome::timeout) << describe(run);
}

TEST_F(RunnerGpu, IllegalAddressIsACudaError) {
  REQUIRE_GPU();
  RunnerRun run = self_test(build("illegal_address"));
  ASSERT_TRUE(run.report.has_value()) << describe(run);
  EXPECT_EQ(run.process.exit_code, 1) << describe(run);
  EXPECT_EQ(run.report->status, RunnerStatus::cuda_error) << describe(run);
  EXPECT_EQ(run.verdict.outcome, Outcome::runtime_error) << describe(run);
}

TEST_F(RunnerGpu, ForwardErrorCarriesTheProgramsText) {
  REQUIRE_GPU();
  RunnerRun run = self_test(build("forward_error"));
  ASSERT_TRUE(run.report.has_value()) << describe(run);
  EXPECT_EQ(run.report->status, RunnerStatus::forward_failed) << describe(run);
  EXPECT_NE(run.report->message.find("planted failure 42"), std::string::npos) << describe(run);
  EXPECT_EQ(run.verdict.outcome, Outcome::runtime_error);
}

TEST_F(RunnerGpu, HugeAllocationIsARuntimeErrorAndTheGpuStaysUsable) {
  REQUIRE_GPU();
  RunnerRun run = self_test(build("huge_alloc"));
  ASSERT_TRUE(run.report.has_value()) << describe(run);
  EXPECT_EQ(run.report->status, RunnerStatus::init_failed) << describe(run);
  EXPECT_NE(run.report->message.find("200 GiB"), std::string::npos) << describe(run);
  EXPECT_EQ(run.verdict.outcome, Outcome::runtime_error);
  expect_clean(self_test(STITCH_SCALE_SHIFT_RELU_SO));  // the next attempt is unaffected
}

TEST_F(RunnerGpu, HostSegfaultIsARuntimeErrorAndTheGpuStaysUsable) {
  REQUIRE_GPU();
  // A crash in host code kills the worker before it can report: its supervisor writes runner.json
  // (status crashed, with the signal), never blamed on the machine.
  RunnerRun run = self_test(build("host_segfault"), {}, 30, 10, /*expect_report=*/false);
  EXPECT_EQ(run.verdict.outcome, Outcome::runtime_error) << describe(run);
  EXPECT_NE(run.verdict.reason.find("SIGSEGV"), std::string::npos) << describe(run);
  EXPECT_FALSE(run.verdict.runner_fault);
  ASSERT_TRUE(run.report.has_value()) << describe(run);
  EXPECT_EQ(run.report->status, RunnerStatus::crashed);
  expect_clean(self_test(STITCH_SCALE_SHIFT_RELU_SO));
}

TEST_F(RunnerGpu, AbiMismatchIsReported) {
  REQUIRE_GPU();
  RunnerRun run = self_test(build("abi_mismatch"));
  ASSERT_TRUE(run.report.has_value()) << describe(run);
  EXPECT_EQ(run.report->status, RunnerStatus::abi_mismatch) << describe(run);
}

TEST_F(RunnerGpu, MissingLibraryIsDlopenFailed) {
  REQUIRE_GPU();
  RunnerRun run = self_test(dir_ / "does_not_exist.so");
  ASSERT_TRUE(run.report.has_value()) << describe(run);
  EXPECT_EQ(run.report->status, RunnerStatus::dlopen_failed) << describe(run);
}

// --- The judge protocol with real IPC handles --------------------------------------------------

std::string ipc_hex(void* base) {
  cudaIpcMemHandle_t handle;
  EXPECT_EQ(cudaIpcGetMemHandle(&handle, base), cudaSuccess);
  std::string hex;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&handle);
  for (size_t i = 0; i < sizeof handle; ++i)
    hex += fmt::format("{:02x}", bytes[i]);
  return hex;
}

std::vector<float> download(const void* device, size_t count) {
  std::vector<float> host(count);
  EXPECT_EQ(cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

void* upload(const std::vector<float>& host) {
  void* device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, host.size() * sizeof(float)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  return device;
}

TEST_F(RunnerGpu, JudgeProtocolThroughIpcHandles) {
  REQUIRE_GPU();
  constexpr int64_t rows = 256, features = 1024, count = rows * features;
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal;
  auto random_vector = [&](size_t n) {
    std::vector<float> v(n);
    for (auto& x : v)
      x = normal(rng);
    return v;
  };
  // Both params in one allocation (as torch's caching allocator may place them): offsets matter.
  std::vector<float> scale = random_vector(features), shift = random_vector(features);
  std::vector<float> packed(2 * features + 512, 0.0f);
  std::copy(scale.begin(), scale.end(), packed.begin());
  std::copy(shift.begin(), shift.end(), packed.begin() + features + 512);
  void* params = upload(packed);
  const size_t shift_offset = (features + 512) * sizeof(float);

  constexpr int kSets = 2, kSpots = 2;
  std::vector<std::vector<float>> inputs;
  std::vector<void*> input_buffers, output_buffers, spot_inputs, spot_outputs;
  for (int s = 0; s < kSets; ++s) {
    inputs.push_back(random_vector(count));
    input_buffers.push_back(upload(inputs.back()));
    output_buffers.push_back(upload(std::vector<float>(count, 0.0f)));
  }
  for (int s = 0; s < kSpots; ++s) {
    spot_inputs.push_back(upload(std::vector<float>(count, 0.0f)));
    spot_outputs.push_back(upload(std::vector<float>(count, 0.0f)));
  }
  nlohmann::json tensor = {
      {"dtype", "float32"}, {"shape", {rows, features}}, {"strides", {features, 1}}};
  nlohmann::json slots = {{"version", 1},
                          {"device", 0},
                          {"params",
                           {{{"name", "scale"},
                             {"dtype", "float32"},
                             {"shape", {features}},
                             {"strides", {1}},
                             {"ipc_handle", ipc_hex(params)},
                             {"offset_bytes", 0}},
                            {{"name", "shift"},
                             {"dtype", "float32"},
                             {"shape", {features}},
                             {"strides", {1}},
                             {"ipc_handle", ipc_hex(params)},
                             {"offset_bytes", shift_offset}}}},
                          {"inputs", {tensor}},
                          {"outputs", {tensor}},
                          {"check_sets", nlohmann::json::array()},
                          {"spot_slots", nlohmann::json::array()}};
  slots["inputs"][0]["name"] = "x";
  slots["inputs"][0]["distribution"] = "randn";
  auto ref = [](void* base) {
    return nlohmann::json{{"ipc_handle", ipc_hex(base)}, {"offset_bytes", 0}};
  };
  for (int s = 0; s < kSets; ++s)
    slots["check_sets"].push_back(
        {{"inputs", {ref(input_buffers[s])}}, {"outputs", {ref(output_buffers[s])}}});
  for (int s = 0; s < kSpots; ++s)
    slots["spot_slots"].push_back(
        {{"inputs", {ref(spot_inputs[s])}}, {"outputs", {ref(spot_outputs[s])}}});
  ASSERT_TRUE(write_file_atomic(dir_ / "slots.json", slots.dump(1)).ok());

  RunnerInvocation invocation;
  invocation.runner = STITCH_RUNNER_PATH;
  invocation.program = STITCH_SCALE_SHIFT_RELU_SO;
  invocation.slots = dir_ / "slots.json";
  invocation.result = dir_ / "runner.json";
  invocation.work_dir = dir_ / "work";
  invocation.timing_iters = 10;
  invocation.warmup = 3;
  invocation.timing_sets = 2;
  invocation.timeout_s = 180;
  // This test is the judge: its process exported the handles from the host's PID namespace, so
  // the runner cannot be in a verification namespace with it (VerifyCommandGpu covers that
  // layer). The waiver is recorded, not silent.
  invocation.insecure_sandbox.layers = {sandbox::Layer::pid_namespace};
  SystemProcessRunner processes;
  auto run = run_runner(processes, invocation);
  ASSERT_TRUE(run.ok()) << run.error().message;
  expect_clean(*run);
  EXPECT_EQ(run->verdict.insecure_layers, std::vector<std::string>{"pid_namespace"});

  auto expected = [&](const std::vector<float>& x) {
    std::vector<float> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      float r = x[i] * scale[i % features] + shift[i % features];
      y[i] = r < 0 ? 0 : r;
    }
    return y;
  };
  auto expect_matches = [&](const std::vector<float>& got, const std::vector<float>& want,
                            const std::string& what) {
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); ++i)
      if (!(std::fabs(got[i] - want[i]) <= 1e-5f + 1e-5f * std::fabs(want[i]))) ++bad;
    EXPECT_EQ(bad, 0u) << what;
  };
  for (int s = 0; s < kSets; ++s)
    expect_matches(download(output_buffers[s], count), expected(inputs[s]),
                   fmt::format("check set {}", s));
  for (int s = 0; s < kSpots; ++s) {
    std::vector<float> x = download(spot_inputs[s], count);
    size_t nonzero = std::count_if(x.begin(), x.end(), [](float v) { return v != 0.0f; });
    EXPECT_GT(nonzero, static_cast<size_t>(count / 2))
        << "spot slot " << s << " inputs not written";
    expect_matches(download(spot_outputs[s], count), expected(x), fmt::format("spot slot {}", s));
  }
  // The judge's inputs are untouched.
  for (int s = 0; s < kSets; ++s)
    EXPECT_EQ(download(input_buffers[s], count), inputs[s]) << "check set " << s << " input";
  for (void* buffer : input_buffers)
    cudaFree(buffer);
  for (void* buffer : output_buffers)
    cudaFree(buffer);
  for (void* buffer : spot_inputs)
    cudaFree(buffer);
  for (void* buffer : spot_outputs)
    cudaFree(buffer);
  cudaFree(params);
}

}  // namespace
}  // namespace stitch
