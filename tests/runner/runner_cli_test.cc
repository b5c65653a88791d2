// stitch-runner's command line: --help, usage errors, and the documented "no CUDA device" exit
// of --self-test on a machine without a GPU, with the runner.json its supervisor writes.
#include <cuda_runtime.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/pid_namespace.h"
#include "util/process.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

ProcessResult run_runner_cli(std::vector<std::string> args) {
  ProcessSpec spec;
  spec.argv = {STITCH_RUNNER_PATH};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout_s = 60;
  SystemProcessRunner runner;
  auto result = runner.run(spec);
  EXPECT_TRUE(result.ok());
  return result.ok() ? *result : ProcessResult{};
}

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(RunnerCli, HelpExitsZeroAndDocumentsEveryFlagAndExitCode) {
  ProcessResult result = run_runner_cli({"--help"});
  EXPECT_EQ(result.exit_code, 0);
  for (const char* text :
       {"--program", "--slots", "--result", "--self-test", "--timing-iters", "--warmup",
        "--timing-sets", "--call-timeout-s", "--idle-timeout-s", "--guard-bytes",
        "--launch-counting", "--no-seccomp", "--no-network-isolation", "--nonce-stdin",
        "--under-profiler",
        "Exit codes", "no CUDA device"})
    EXPECT_NE(result.stdout_text.find(text), std::string::npos) << text;
}

TEST(RunnerCli, MissingProgramIsAUsageError) {
  ProcessResult result = run_runner_cli({});
  EXPECT_EQ(result.exit_code, 2);
  result = run_runner_cli({"--program", "p.so"});  // neither --slots nor --self-test
  EXPECT_EQ(result.exit_code, 2);
  result = run_runner_cli({"--program", "p.so", "--self-test", "--launch-counting", "maybe"});
  EXPECT_EQ(result.exit_code, 2);
}

TEST(RunnerCli, UnreadableSlotsIsASetupFailure) {
  fs::path dir = fs::temp_directory_path() / fmt::format("runner_cli_test_{}", getpid());
  fs::create_directories(dir);
  ASSERT_TRUE(write_file_atomic(dir / "slots.json", "{\"version\": 1, \"outputs\": 3}").ok());
  ProcessResult result =
      run_runner_cli({"--program", (dir / "p.so").string(), "--slots",
                      (dir / "slots.json").string(), "--result", (dir / "runner.json").string()});
  EXPECT_EQ(result.exit_code, 4);
  auto text = read_file(dir / "runner.json");
  ASSERT_TRUE(text.ok());
  auto doc = nlohmann::json::parse(*text);
  EXPECT_EQ(doc["status"], "setup_failed");
  fs::remove_all(dir);
}

TEST(RunnerCli, SelfTestWithoutAGpuExitsWithNoDevice) {
  if (has_gpu()) GTEST_SKIP() << "a CUDA device is present; runner_gpu_test covers --self-test";
  fs::path dir = fs::temp_directory_path() / fmt::format("runner_cli_nodev_{}", getpid());
  fs::create_directories(dir);
  ProcessResult result = run_runner_cli({"--self-test", "--program", "/nonexistent/program.so",
                                         "--result", (dir / "runner.json").string()});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.stderr_text.find("no CUDA device"), std::string::npos) << result.stderr_text;
  auto text = read_file(dir / "runner.json");
  ASSERT_TRUE(text.ok());
  auto doc = nlohmann::json::parse(*text);
  EXPECT_EQ(doc["status"], "no_device");
  EXPECT_TRUE(doc["self_test"].get<bool>());
  // The sandbox's temporary working directory is gone again.
  std::string work_dir = doc["sandbox"]["work_dir"];
  EXPECT_FALSE(work_dir.empty());
  EXPECT_FALSE(fs::exists(work_dir));
  fs::remove_all(dir);
}

// The real binary's split: the worker reports no_device over the channel; the supervisor writes
// runner.json with the nonce it kept, how the worker ended and its sandbox layers.
TEST(RunnerCli, TheSupervisorWritesTheNonceAndItsLayers) {
  if (has_gpu()) GTEST_SKIP() << "a CUDA device is present; runner_gpu_test covers --self-test";
  fs::path dir = fs::temp_directory_path() / fmt::format("runner_cli_supervisor_{}", getpid());
  fs::create_directories(dir);
  ProcessSpec spec;
  spec.argv = {STITCH_RUNNER_PATH, "--self-test", "--program", "/nonexistent/program.so",
               "--result", (dir / "runner.json").string(), "--nonce-stdin",
               "--orchestrator-pid-namespace", pid_namespace_id()};
  spec.stdin_text = "n0nce-from-the-orchestrator\n";
  spec.timeout_s = 60;
  SystemProcessRunner runner;
  auto result = runner.run(spec);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 3) << result->stderr_text;
  auto text = read_file(dir / "runner.json");
  ASSERT_TRUE(text.ok());
  auto doc = nlohmann::json::parse(*text);
  EXPECT_EQ(doc["status"], "no_device");
  EXPECT_EQ(doc["nonce"], "n0nce-from-the-orchestrator");
  EXPECT_EQ(doc["supervisor"]["worker"]["exit_code"], 3);
  EXPECT_TRUE(doc["supervisor"]["worker"]["report_received"].get<bool>());
  std::map<std::string, bool> layers;
  for (const auto& layer : doc["sandbox"]["layers"]) layers[layer["name"]] = layer["set_up"];
  ASSERT_EQ(layers.count("pid_namespace"), 1u) << doc["sandbox"].dump();
  // --self-test: the worker is PID 1 of its own namespace where this process may make one.
  EXPECT_EQ(layers["pid_namespace"], can_create_pid_namespace());
  EXPECT_TRUE(layers["supervisor"]);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stitch
