// The Verifier with fakes for every side effect (compiler, library audit, runner, judge, baselines):
// routing of each outcome, which processes are started (and that the judge is always stopped), the
// order of the steps, verify.json's fields; timing statistics and library detection; and the real
// `stitchcuda verify` / `eval-kb` binaries on bad input and on a statically detected hack.
//
// Built twice: as verifier_test (label cpu) and, with STITCH_VERIFY_GPU_TESTS, as verifier_gpu_test
// (label gpu): the real binaries end to end on a GPU, skipped without one.
#include <signal.h>

#include <algorithm>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/process.h"
#include "verifier_fakes.h"
#include "verify/build/gpu_info.h"
#include "verify/verifier.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path make_temp_dir(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  return made ? fs::path(made) : fs::path();
}

std::string read_text(const fs::path& path) {
  auto text = read_file(path);
  return text.ok() ? *text : std::string();
}

// The real binary: exit code and everything it printed.
ProcessResult run_stitchcuda(const std::vector<std::string>& args, double timeout_s = 600,
                             const std::map<std::string, std::string>& env = {}) {
  SystemProcessRunner runner;
  ProcessSpec spec;
  spec.env = env;
  spec.argv = {STITCHCUDA_PATH};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout_s = timeout_s;
  auto result = runner.run(spec);
  EXPECT_TRUE(result.ok()) << result.error().message;
  return result.ok() ? *result : ProcessResult{};
}

// The newest attempts/NN/verify.json under a runs directory.
json newest_verify_json(const fs::path& runs_dir) {
  fs::path newest;
  for (const auto& entry : fs::recursive_directory_iterator(runs_dir))
    if (entry.path().filename() == "verify.json" && entry.path() > newest) newest = entry.path();
  if (newest.empty()) return json();
  return json::parse(read_text(newest), nullptr, false);
}

#if !STITCH_VERIFY_GPU_TESTS

using namespace verify_fakes;

class VerifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("verifier-test");
    attempt_ = dir_ / "attempts" / "01";
    ASSERT_TRUE(make_dirs(attempt_ / "src").ok());
    source_ = attempt_ / "src" / "program.cu";
    ASSERT_TRUE(write_file_atomic(source_, "extern \"C\" int stitch_abi_version(void) { return 1; }\n")
                    .ok());
    compiler_.script.log = read_text(fs::path(STITCH_TEST_DATA_DIR) / "verify/data/spilling_kernel.log");
    runner_.runner_json = runner_json();
    judge_.comparison = passing_comparison();
    request_.capture_dir = dir_;
    request_.attempt_dir = attempt_;
    request_.sources = {source_};
    request_.gpu = GpuInfo{0, "NVIDIA H200", 9, 0, 132, 60 << 20, int64_t{141} << 30};
  }
  void TearDown() override {
    // Whatever happened, the judge must not be left running.
    EXPECT_FALSE(judge_.running) << "the judge was not stopped";
    if (judge_.starts > 0) {
      EXPECT_GE(judge_.stops, judge_.starts);
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  VerifyReport verify() {
    Verifier verifier({compiler_, auditor_, runner_, judge_, &baselines_}, options_);
    auto report = verifier.verify(request_);
    EXPECT_TRUE(report.ok()) << report.error().message;
    return report.ok() ? *report : VerifyReport{};
  }

  json verify_json() const { return json::parse(read_text(attempt_ / "verify.json"), nullptr, false); }

  fs::path dir_, attempt_, source_;
  CallLog log_;
  FakeCompiler compiler_;
  FakeAuditor auditor_{log_};
  FakeRunner runner_{log_};
  FakeJudge judge_{log_};
  FakeBaselines baselines_{log_};
  VerifyRequest request_;
  VerifyOptions options_;
};

TEST_F(VerifierTest, CompileErrorKeepsDiagnosticsAndStartsNothing) {
  compiler_.script.ok = false;
  compiler_.script.log = read_text(fs::path(STITCH_TEST_DATA_DIR) / "verify/data/broken_program.log");
  VerifyReport report = verify();
  EXPECT_EQ(report.state, VerifyState::verified);
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::compile_error);
  EXPECT_FALSE(report.built);
  ASSERT_EQ(report.diagnostics.size(), 2u);
  EXPECT_NE(report.reason.find("undefined_scale"), std::string::npos) << report.reason;
  EXPECT_EQ(judge_.starts, 0);
  EXPECT_TRUE(runner_.invocations.empty());
  EXPECT_EQ(log_.index_of("baseline"), log_.calls.size()) << "no baselines for a broken build";
  EXPECT_NE(read_text(attempt_ / "build.log").find("undefined_scale"), std::string::npos);
  json doc = verify_json();
  EXPECT_EQ(doc["outcome"], "compile_error");
  EXPECT_EQ(doc["build"]["diagnostics"].size(), 2u);
  EXPECT_EQ(doc["build"]["ok"], false);
}

// A full disk during the build is the machine's failure, never the program's compile_error
// (build_failure.h): nothing of the program is judged.
TEST_F(VerifierTest, AFullDiskDuringTheBuildIsAnInfrastructureErrorNotACompileError) {
  compiler_.script.ok = false;
  compiler_.script.log =
      "nvcc fatal   : Could not write to file 'program.o': No space left on device\n";
  VerifyReport report = verify();
  EXPECT_EQ(report.state, VerifyState::infrastructure_error);
  EXPECT_FALSE(report.outcome.has_value());
  EXPECT_NE(report.reason.find("No space left on device"), std::string::npos) << report.reason;
  EXPECT_EQ(judge_.starts, 0);
  EXPECT_TRUE(runner_.invocations.empty());
  EXPECT_EQ(verify_json()["state"], "infrastructure_error");
}

TEST_F(VerifierTest, StaticFatalFindingIsHackedAndTheRunnerNeverStarts) {
  ASSERT_TRUE(write_file_atomic(source_, read_text(fs::path(STITCH_TEST_DATA_DIR) /
                                                   "adversarial/a03_std_thread.cu"))
                  .ok());
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::hacked);
  EXPECT_NE(report.reason.find("host_thread"), std::string::npos) << report.reason;
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().origin, "source");
  EXPECT_TRUE(runner_.invocations.empty());
  EXPECT_EQ(judge_.starts, 0);
  EXPECT_EQ(verify_json()["findings"][0]["kind"], "host_thread");
}

TEST_F(VerifierTest, LibraryAuditFatalFindingIsHacked) {
  auditor_.findings = {{HackKind::calls_torch, "links libtorch_cpu.so", true}};
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::hacked);
  EXPECT_NE(report.reason.find("libtorch"), std::string::npos);
  EXPECT_EQ(report.findings.back().origin, "library");
  EXPECT_TRUE(runner_.invocations.empty());
}

TEST_F(VerifierTest, UnauditableLibraryIsAnInfrastructureErrorNotAVerdict) {
  auditor_.fail = true;
  VerifyReport report = verify();
  EXPECT_EQ(report.state, VerifyState::infrastructure_error);
  EXPECT_FALSE(report.outcome);
  EXPECT_TRUE(runner_.invocations.empty());
}

TEST_F(VerifierTest, RunnerKilledByItsTimeLimitIsTimeout) {
  runner_.process.timed_out = true;
  runner_.process.term_signal = SIGKILL;
  runner_.process.wall_s = 120.5;
  runner_.runner_json.reset();
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::timeout);
  EXPECT_EQ(judge_.compares, 0);
  EXPECT_EQ(judge_.starts, 1);
  EXPECT_EQ(verify_json()["outcome"], "timeout");
}

TEST_F(VerifierTest, RunnerCrashIsRuntimeError) {
  runner_.process.term_signal = SIGSEGV;
  runner_.process.exit_code = -1;
  runner_.runner_json.reset();
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::runtime_error);
  EXPECT_NE(report.reason.find("SIGSEGV"), std::string::npos) << report.reason;
  EXPECT_EQ(judge_.compares, 0);
}

TEST_F(VerifierTest, CudaErrorStatusIsRuntimeError) {
  runner_.process.exit_code = 1;
  runner_.runner_json = runner_json("cuda_error");
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::runtime_error);
  EXPECT_EQ(report.runner_status, "cuda_error");
}

TEST_F(VerifierTest, RunnerWithoutADeviceIsNotTheProgramsFault) {
  runner_.process.exit_code = 3;
  runner_.runner_json = runner_json("no_device");
  VerifyReport report = verify();
  EXPECT_EQ(report.state, VerifyState::infrastructure_error);
  EXPECT_FALSE(report.outcome);
  EXPECT_EQ(verify_json()["outcome"], nullptr);
}

// Fail closed: a runner that does not report every required sandbox layer never gives `passed`;
// --insecure-sandbox lets it pass, flagged in verify.json and the summary.
TEST_F(VerifierTest, MissingSandboxLayerIsAnInfrastructureErrorUnlessWaived) {
  std::string without_layers = runner_json();
  without_layers.replace(without_layers.find(R"("layers")"), 8, R"("old_layers")");
  runner_.runner_json = without_layers;
  VerifyReport report = verify();
  EXPECT_EQ(report.state, VerifyState::infrastructure_error);
  EXPECT_NE(report.reason.find("sandbox_incomplete: user, no_new_privs, pid_namespace"),
            std::string::npos)
      << report.reason;
  EXPECT_EQ(judge_.compares, 0);

  options_.insecure_sandbox = *sandbox::parse_insecure_layers({"all"});
  report = verify();
  EXPECT_TRUE(report.passed()) << report.reason;
  EXPECT_EQ(report.insecure_sandbox.size(), sandbox::kRequiredRunnerLayers.size());
  EXPECT_EQ(verify_json()["insecure_sandbox"].size(), sandbox::kRequiredRunnerLayers.size());
  EXPECT_NE(report.summary.at(1).find("INSECURE SANDBOX: ran without user"), std::string::npos)
      << report.summary.at(1);
  auto back = read_verify_report(attempt_ / "verify.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->insecure_sandbox, report.insecure_sandbox);
}

TEST_F(VerifierTest, CompleteSandboxPassesWithNothingInsecure) {
  VerifyReport report = verify();
  EXPECT_TRUE(report.passed()) << report.reason;
  EXPECT_TRUE(report.insecure_sandbox.empty());
  EXPECT_EQ(report.runner_sandbox.size(), sandbox::kRequiredRunnerLayers.size());
  EXPECT_EQ(verify_json()["runner"]["sandbox"].size(), sandbox::kRequiredRunnerLayers.size());
}

TEST_F(VerifierTest, RunnerFatalFindingIsHacked) {
  runner_.runner_json =
      runner_json("ok", R"([{"kind": "stale_output", "detail": "poison survived", "fatal": true}])");
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::hacked);
  EXPECT_NE(report.reason.find("stale_output"), std::string::npos);
  EXPECT_EQ(judge_.compares, 0);
}

TEST_F(VerifierTest, JudgeMismatchIsWrong) {
  JudgeComparison comparison = passing_comparison();
  comparison.passed = false;
  comparison.sets[1].passed = false;
  JudgeOutput& output = comparison.sets[1].outputs[0];
  output.check.passed = false;
  output.check.mismatches = 17;
  output.check.first_mismatch_index = 4000;
  output.message = "output 0: 17 of 4096 elements outside atol";
  judge_.comparison = comparison;
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::wrong);
  EXPECT_NE(report.reason.find("check set 1"), std::string::npos) << report.reason;
  EXPECT_TRUE(report.speedups.empty()) << "a wrong program gets no speedups";
  json doc = verify_json();
  ASSERT_EQ(doc["outputs"].size(), 3u);
  EXPECT_EQ(doc["outputs"][1]["first_mismatch_index"], 4000);
  EXPECT_EQ(doc["outputs"][1]["passed"], false);
}

TEST_F(VerifierTest, JudgeFindingsAndChangedInputsAreHacked) {
  JudgeComparison comparison = passing_comparison();
  comparison.passed = false;
  comparison.findings.push_back({HackKind::output_cache, "spot slot 1 repeats check set 0", true});
  judge_.comparison = comparison;
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::hacked);
  EXPECT_NE(report.reason.find("output_cache"), std::string::npos);

  comparison = passing_comparison();
  comparison.sets[0].inputs_unchanged = false;
  judge_.comparison = comparison;
  report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::hacked);
  EXPECT_NE(report.reason.find("mutates_inputs"), std::string::npos);
}

TEST_F(VerifierTest, TheRunnerHoldsTheTimingSetsTheJudgeSizedToMemory) {
  judge_.ready_timing_sets = 1;
  judge_.memory_note = "memory: 12.0 GiB of inputs and outputs per set, 138 GiB free: 2 check sets";
  VerifyReport report = verify();
  ASSERT_EQ(runner_.invocations.size(), 1u);
  EXPECT_EQ(runner_.invocations[0].timing_sets, 1);
  ASSERT_NE(report.step("reference"), nullptr);
  EXPECT_EQ(report.step("reference")->detail, judge_.memory_note) << "the report says why";
  // A judge that says nothing leaves the verifier's own count.
  judge_.ready_timing_sets = 0;
  judge_.memory_note.clear();
  runner_.invocations.clear();
  (void)verify();
  ASSERT_EQ(runner_.invocations.size(), 1u);
  EXPECT_EQ(runner_.invocations[0].timing_sets, options_.timing_sets);
}

TEST_F(VerifierTest, AllGoodPassesWithSpeedupsAndStepsInOrder) {
  VerifyReport report = verify();
  EXPECT_EQ(report.state, VerifyState::verified);
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::passed) << report.reason;
  // The baseline cache read while the judge starts; what it lacked timed before the runner
  // (after the judge is up), compare after the runner, then stop.
  ASSERT_LT(log_.index_of("baseline.lookup"), log_.calls.size());
  ASSERT_LT(log_.index_of("judge.start"), log_.index_of("baseline"));
  ASSERT_LT(log_.index_of("baseline"), log_.index_of("runner"));
  ASSERT_LT(log_.index_of("judge.start"), log_.index_of("runner"));
  ASSERT_LT(log_.index_of("runner"), log_.index_of("judge.compare"));
  ASSERT_LT(log_.index_of("judge.compare"), log_.index_of("judge.stop"));
  ASSERT_EQ(runner_.invocations.size(), 1u);
  EXPECT_EQ(runner_.invocations[0].slots, judge_.slots);
  EXPECT_EQ(runner_.invocations[0].timing_iters, options_.timing_iters);
  EXPECT_LT(runner_.invocations[0].call_timeout_s, runner_.invocations[0].timeout_s);
  // Timing: protocol time from gpu_ms, speedups from the synced time (0.5 ms).
  ASSERT_TRUE(report.timing);
  EXPECT_DOUBLE_EQ(report.timing->median_ms, 0.45);
  ASSERT_EQ(report.speedups.size(), 2u) << "reduce-overhead failed: no speedup for it";
  EXPECT_DOUBLE_EQ(*report.speedup_vs("eager"), 4.0);
  EXPECT_DOUBLE_EQ(*report.speedup_vs("compile"), 2.0);
  EXPECT_NE(report.baseline_error.find("reduce-overhead"), std::string::npos);
  EXPECT_EQ(report.launches_per_forward, 2.0);
  EXPECT_DOUBLE_EQ(report.init_ms, 1.25);
  EXPECT_FALSE(report.kernels.empty()) << "ptxas report from the build log";
  // The step breakdown the brief asks for.
  for (const char* step : {"build", "static_checks", "library_audit", "baseline", "harness_start",
                           "reference", "runner", "comparison", "judge_stop"})
    EXPECT_NE(report.step(step), nullptr) << step;
  EXPECT_DOUBLE_EQ(report.step("reference")->seconds, 2.0);
  EXPECT_DOUBLE_EQ(report.step("harness_start")->seconds, 1.0);

  json doc = verify_json();
  EXPECT_EQ(doc["format"], "stitchcuda.verify");
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["state"], "verified");
  EXPECT_EQ(doc["outcome"], "passed");
  EXPECT_EQ(doc["track"], "fp32");
  EXPECT_EQ(doc["gpu"], "NVIDIA H200");
  EXPECT_EQ(doc["arch"], "sm_90a");  // the H200's target: arch_for_compute_capability
  EXPECT_DOUBLE_EQ(doc["timing"]["protocol"]["median_ms"].get<double>(), 0.45);
  EXPECT_DOUBLE_EQ(doc["timing"]["synced"]["median_ms"].get<double>(), 0.5);
  EXPECT_EQ(doc["timing"]["speedup_basis"], "synced");
  EXPECT_DOUBLE_EQ(doc["speedups"]["eager"].get<double>(), 4.0);
  EXPECT_EQ(doc["baselines"]["modes"]["reduce-overhead"]["error"], "timed out after 1800 s");
  EXPECT_EQ(doc["runner"]["kernel_launches"]["k"], 7);
  EXPECT_EQ(doc["outputs"].size(), 3u);
  EXPECT_DOUBLE_EQ(doc["tolerance"]["rel_err_norm_max"].get<double>(), 5e-5);
  ASSERT_TRUE(doc["summary"].is_array());
  for (const auto& line : doc["summary"]) std::printf("  | %s\n", line.get<std::string>().c_str());
  EXPECT_GE(doc["summary"].size(), 3u);
  EXPECT_LE(doc["summary"].size(), 6u);
  EXPECT_EQ(doc["summary"][0].get<std::string>().rfind("passed", 0), 0u);
  EXPECT_NE(doc["summary"].dump().find("4.00x eager"), std::string::npos) << doc["summary"].dump();
}

TEST_F(VerifierTest, EveryStepIsAnnouncedAsItStartsAndReportedAsItEnds) {
  std::vector<std::string> events;
  options_.on_step_start = [&](const std::string& name) { events.push_back("start " + name); };
  options_.on_step = [&](const VerifyStep& step) { events.push_back("end " + step.name); };
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::passed) << report.reason;
  // "reference" is measured inside the judge's start, so it has no start of its own.
  const std::vector<std::string> expected = {
      "start build",         "end build",          "start static_checks", "end static_checks",
      "start library_audit", "end library_audit",  "start harness_start", "end harness_start",
      "end reference",       "start baseline",     "end baseline",        "start runner",
      "end runner",          "start comparison",   "end comparison",      "start judge_stop",
      "end judge_stop"};
  EXPECT_EQ(events, expected);
}

TEST_F(VerifierTest, ABrokenBuildAnnouncesNoStepAfterTheChecks) {
  compiler_.script.ok = false;
  compiler_.script.log = read_text(fs::path(STITCH_TEST_DATA_DIR) / "verify/data/broken_program.log");
  std::vector<std::string> started;
  options_.on_step_start = [&](const std::string& name) { started.push_back(name); };
  verify();
  for (const std::string& name : started)
    EXPECT_TRUE(name == "build" || name == "static_checks") << name << " started";
  EXPECT_EQ(started.front(), "build");
}

TEST_F(VerifierTest, StreamTimeIsTheBasisWhenTheGapIsTheSynchronizeCost) {
  // synced - gpu has median 0.05 ms, the same as the empty-call gap: nothing ran off-stream.
  runner_.runner_json = runner_json("ok", "[]", "[0.05, 0.05, 0.05]");
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::passed) << report.reason;
  EXPECT_EQ(report.timing_basis, TimingBasis::stream) << report.timing_basis_detail;
  EXPECT_NEAR(*report.speedup_vs("eager"), 2.0 / 0.45, 1e-9);
  json doc = verify_json();
  EXPECT_EQ(doc["timing"]["speedup_basis"], "stream");
  for (const auto& finding : doc["findings"]) EXPECT_NE(finding["kind"], "side_stream");
}

TEST_F(VerifierTest, WorkOutlivingTheStreamIsTimedToDeviceIdleAndNoted) {
  // Empty-call gap 1 us, iteration gap 50 us: 49 us ran after the caller's stream finished.
  runner_.runner_json = runner_json("ok", "[]", "[0.001, 0.001, 0.001]");
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(report.timing_basis, TimingBasis::synced);
  EXPECT_DOUBLE_EQ(*report.speedup_vs("eager"), 4.0);
  json doc = verify_json();
  EXPECT_EQ(doc["timing"]["speedup_basis"], "synced");
  bool noted = false;
  for (const auto& finding : doc["findings"])
    noted |= finding["kind"] == "side_stream" && finding["fatal"] == false;
  EXPECT_TRUE(noted) << doc["findings"].dump();
}

TEST_F(VerifierTest, HackThatAlsoFailsToCompileIsReportedAsTheHack) {
  ASSERT_TRUE(write_file_atomic(source_, read_text(fs::path(STITCH_TEST_DATA_DIR) /
                                                   "adversarial/a03_std_thread.cu"))
                  .ok());
  compiler_.script.ok = false;
  compiler_.script.log = read_text(fs::path(STITCH_TEST_DATA_DIR) / "verify/data/broken_program.log");
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::hacked) << report.reason;
  EXPECT_NE(report.reason.find("host_thread"), std::string::npos) << report.reason;
  EXPECT_FALSE(report.built);
  EXPECT_FALSE(report.diagnostics.empty()) << "the compile errors are kept for the feedback";
}

// Issue 15 item 5: a directive naming a host file is refused as reads_answer, and nothing the
// compiler quoted of that file reaches verify.json.
TEST_F(VerifierTest, IncludeOfAHostFileIsHackedAndItsTextStaysOut) {
  const std::string marker = "SECRET-HOST-LINE-7d2e";
  ASSERT_TRUE(write_file_atomic(dir_ / "secret.txt", marker + "\n").ok());
  ASSERT_TRUE(write_file_atomic(source_, "#include \"" + (dir_ / "secret.txt").string() +
                                             "\"\nextern \"C\" int stitch_abi_version(void);\n")
                  .ok());
  compiler_.script.ok = false;
  compiler_.script.log = (dir_ / "secret.txt").string() + "(1): error: identifier \"" + marker +
                         "\" is undefined\n  " + marker + "\n  ^\n\n";
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::hacked) << report.reason;
  EXPECT_NE(report.reason.find("reads_answer"), std::string::npos) << report.reason;
  EXPECT_NE(report.reason.find("program.cu:1: #include"), std::string::npos) << report.reason;
  EXPECT_EQ(judge_.starts, 0);
  EXPECT_EQ(read_text(attempt_ / "verify.json").find(marker), std::string::npos);
}

TEST_F(VerifierTest, BaselineFailureStillPassesWithoutSpeedups) {
  baselines_.fail = true;
  VerifyReport report = verify();
  ASSERT_TRUE(report.outcome);
  EXPECT_EQ(*report.outcome, Outcome::passed);
  EXPECT_TRUE(report.speedups.empty());
  EXPECT_NE(report.baseline_error.find("B.json"), std::string::npos);
  EXPECT_EQ(report.step("baseline")->status, "failed");
}

TEST_F(VerifierTest, CachedBaselinesAreReadAlongsideTheJudgeAndNotTimedAgain) {
  baselines_.cached = true;
  VerifyReport report = verify();
  ASSERT_TRUE(report.passed()) << report.reason;
  EXPECT_LT(log_.index_of("baseline.lookup"), log_.calls.size());
  EXPECT_EQ(log_.index_of("baseline"), log_.calls.size()) << "a complete cache is not re-timed";
  EXPECT_TRUE(report.baselines_from_cache);
  EXPECT_NE(report.step("baseline")->detail.find("cache"), std::string::npos);
  EXPECT_DOUBLE_EQ(*report.speedup_vs("eager"), 4.0);
}

TEST_F(VerifierTest, NoBaselineTimingWhenTheJudgeDoesNotStart) {
  judge_.start_fails = true;
  VerifyReport report = verify();
  EXPECT_EQ(report.state, VerifyState::infrastructure_error);
  EXPECT_EQ(log_.index_of("baseline"), log_.calls.size());
  EXPECT_EQ(report.step("baseline")->status, "skipped");
}

TEST_F(VerifierTest, NoBaselinesWhenNotRequested) {
  options_.baselines = false;
  VerifyReport report = verify();
  EXPECT_TRUE(report.passed());
  EXPECT_EQ(log_.index_of("baseline"), log_.calls.size());
  EXPECT_EQ(log_.index_of("baseline.lookup"), log_.calls.size());
  EXPECT_EQ(report.step("baseline")->status, "skipped");
}

TEST_F(VerifierTest, NoGpuBuildsAndChecksButGivesNoOutcome) {
  request_.gpu.reset();
  VerifyReport report = verify();
  EXPECT_EQ(report.state, VerifyState::no_gpu);
  EXPECT_FALSE(report.outcome);
  EXPECT_TRUE(report.built);
  EXPECT_EQ(judge_.starts, 0);
  EXPECT_TRUE(runner_.invocations.empty());
  EXPECT_EQ(report.arch, "sm_90a");
  json doc = verify_json();
  EXPECT_EQ(doc["state"], "no_gpu");
  EXPECT_EQ(doc["outcome"], nullptr);
  EXPECT_EQ(doc["summary"][0],
            "no CUDA device: built and statically checked; run on a GPU machine to verify");
}

TEST_F(VerifierTest, NoGpuStillReportsCompileErrorsAndHacks) {
  request_.gpu.reset();
  compiler_.script.ok = false;
  compiler_.script.log = read_text(fs::path(STITCH_TEST_DATA_DIR) / "verify/data/broken_program.log");
  VerifyReport report = verify();
  EXPECT_EQ(report.state, VerifyState::verified);
  EXPECT_EQ(report.outcome, Outcome::compile_error);
}

TEST_F(VerifierTest, JudgeThatDoesNotStartIsAnInfrastructureError) {
  judge_.start_fails = true;
  VerifyReport report = verify();
  EXPECT_EQ(report.state, VerifyState::infrastructure_error);
  EXPECT_NE(report.reason.find("out of memory"), std::string::npos);
  EXPECT_TRUE(runner_.invocations.empty());
  EXPECT_EQ(report.step("harness_start")->status, "failed");
}

TEST_F(VerifierTest, JudgeThatDiesDuringCompareIsStoppedAndReported) {
  judge_.comparison.reset();
  VerifyReport report = verify();
  EXPECT_EQ(report.state, VerifyState::infrastructure_error);
  EXPECT_NE(report.reason.find("compared"), std::string::npos);
  EXPECT_EQ(judge_.compares, 1);
}

TEST_F(VerifierTest, RunnerThatCannotStartIsAnInfrastructureError) {
  runner_.cannot_start = true;
  VerifyReport report = verify();
  EXPECT_EQ(report.state, VerifyState::infrastructure_error);
  EXPECT_EQ(judge_.compares, 0);
}

TEST_F(VerifierTest, NoSourcesIsAnError) {
  request_.sources.clear();
  Verifier verifier({compiler_, auditor_, runner_, judge_, &baselines_}, options_);
  EXPECT_FALSE(verifier.verify(request_).ok());
}

TEST(TimingStats, LinearPercentilesLikeNumpy) {
  auto stats = timing_stats({5, 1, 4, 2, 3});
  ASSERT_TRUE(stats);
  EXPECT_DOUBLE_EQ(stats->median_ms, 3.0);
  EXPECT_DOUBLE_EQ(stats->p10_ms, 1.4);
  EXPECT_DOUBLE_EQ(stats->p90_ms, 4.6);
  EXPECT_DOUBLE_EQ(stats->min_ms, 1.0);
  EXPECT_EQ(stats->iterations, 5);
  EXPECT_FALSE(timing_stats({}));
}

TEST(DetectLibraries, FromNvidiaHeaders) {
  std::vector<SourceFile> sources = {
      {"a.cu", "#include <cublasLt.h>\n  #  include \"cudnn.h\"\n#include <cstdio>\n"},
      {"b.cu", "// cufft.h is mentioned in a comment only\n#include <cublas_v2.h>\n"}};
  EXPECT_EQ(detect_libraries(sources), (std::vector<std::string>{"cublas", "cublasLt", "cudnn"}));
}

TEST(DetectLibraries, ThroughTheHeadersAProgramIncludes) {
  // A generated program names no NVIDIA header itself; kernels/matmul.cuh (found through the
  // include directories) brings cublasLt.h. Missing it made every GEMM program fail to dlopen.
  // Per process: verifier_test.cc is built into two executables that ctest may run side by side.
  fs::path dir = fs::temp_directory_path() /
                 ("stitch_detect_program_libraries_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "src");
  fs::create_directories(dir / "inc" / "kernels");
  std::ofstream(dir / "src" / "program.cu") << "#include \"kernels/matmul.cuh\"\n#include <cstdio>\n";
  std::ofstream(dir / "inc" / "kernels" / "matmul.cuh") << "#pragma once\n#include \"local.h\"\n";
  std::ofstream(dir / "inc" / "kernels" / "local.h") << "#include <cublasLt.h>\n";
  EXPECT_EQ(detect_program_libraries({dir / "src" / "program.cu"}, {dir / "inc"}),
            (std::vector<std::string>{"cublasLt"}));
  EXPECT_TRUE(detect_program_libraries({dir / "src" / "program.cu"}, {}).empty())
      << "headers that cannot be found are not guessed at";
  fs::remove_all(dir);
}

// ---- the real binaries ------------------------------------------------------------------------ ------------------------------------------------------------

TEST(VerifyCommand, MissingProgramIsBadInput) {
  ProcessResult result = run_stitchcuda(
      {"verify", std::string(STITCH_TEST_DATA_DIR) + "/tasks/scale_shift_relu.py", "/no/such/program.cu"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.stderr_text.find("/no/such/program.cu: no such file"), std::string::npos)
      << result.stderr_text;
}

TEST(VerifyCommand, MissingTaskIsBadInput) {
  ProcessResult result = run_stitchcuda(
      {"verify", "/no/such/task.py", std::string(STITCH_TEST_DATA_DIR) + "/programs/scale_shift_relu.cu"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.stderr_text.find("no such file"), std::string::npos) << result.stderr_text;
}

TEST(VerifyCommand, NonCudaProgramIsBadInput) {
  std::string task = std::string(STITCH_TEST_DATA_DIR) + "/tasks/scale_shift_relu.py";
  ProcessResult result = run_stitchcuda({"verify", task, task});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.stderr_text.find("not a CUDA source (.cu)"), std::string::npos)
      << result.stderr_text;
  // One clear line, nothing else.
  EXPECT_EQ(std::count(result.stderr_text.begin(), result.stderr_text.end(), '\n'), 1);
}

TEST(VerifyCommand, DirectoryWithoutCaptureIsBadInput) {
  fs::path dir = make_temp_dir("verify-not-a-run");
  ProcessResult result = run_stitchcuda(
      {"verify", dir.string(), std::string(STITCH_TEST_DATA_DIR) + "/programs/scale_shift_relu.cu"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.stderr_text.find("not a run directory"), std::string::npos);
  fs::remove_all(dir);
}

TEST(EvalKbCommand, MissingSolutionIsBadInput) {
  ProcessResult result = run_stitchcuda(
      {"eval-kb", std::string(STITCH_TEST_DATA_DIR) + "/kb_solutions/relu_task.py", "/no/such.py"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.stderr_text.find("/no/such.py: no such file"), std::string::npos);
}

// A static hack needs no GPU: the real binary captures, builds with nvcc and rejects it.
TEST(VerifyCommand, StdThreadProgramIsHackedWithoutAGpu) {
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc";
  fs::path runs = make_temp_dir("verify-a03");
  ProcessResult result = run_stitchcuda(
      {"verify", std::string(STITCH_TEST_DATA_DIR) + "/tasks/scale_shift_relu.py",
       std::string(STITCH_TEST_DATA_DIR) + "/adversarial/a03_std_thread.cu", "--runs-dir",
       runs.string(), "--no-build-cache"});
  EXPECT_EQ(result.exit_code, 1) << result.stdout_text << result.stderr_text;
  EXPECT_EQ(result.stdout_text.rfind("hacked", 0), 0u) << result.stdout_text;
  json doc = newest_verify_json(runs);
  EXPECT_EQ(doc["outcome"], "hacked") << doc.dump(2);
  EXPECT_EQ(doc["findings"][0]["kind"], "host_thread");
  fs::remove_all(runs);
}

// Every file under `dir` that holds `marker`: none may, after a program tried to read it.
std::vector<std::string> files_holding(const fs::path& dir, const std::string& marker) {
  std::vector<std::string> holding;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file() && read_text(entry.path()).find(marker) != std::string::npos)
      holding.push_back(entry.path().string());
  return holding;
}

// Issue 15 item 5 with the real nvcc: `#include` of a host file is refused before compiling
// (hacked, reads_answer) and `#line` naming it leaves diagnostics without its text; no byte of it
// lands in the run directory (verify.json, feedback.json, build.log, build.json).
TEST(VerifyCommand, HostFilesNeverReachTheRunDirectory) {
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc";
  const fs::path dir = make_temp_dir("verify-host-file");
  const std::string marker = "SECRET-HOST-LINE-91b3";
  const fs::path secret = dir / "secret.txt";
  ASSERT_TRUE(write_file_atomic(secret, marker + " = 1;\n" + marker + " x;\n").ok());
  // Self-contained (tests/programs/ include a helper header that would not be beside the copy).
  const std::string honest = "extern \"C\" int stitch_abi_version(void) { return 1; }\n";
  const std::string task = std::string(STITCH_TEST_DATA_DIR) + "/tasks/scale_shift_relu.py";
  const fs::path included = dir / "included.cu", relined = dir / "relined.cu";
  ASSERT_TRUE(write_file_atomic(included, "#include \"" + secret.string() + "\"\n" + honest).ok());
  // The snippet of a diagnostic "in" the secret file would quote its first line.
  ASSERT_TRUE(
      write_file_atomic(relined, honest + "#line 1 \"" + secret.string() + "\"\nbroken x;\n").ok());
  const fs::path runs = dir / "runs";
  ProcessResult result =
      run_stitchcuda({"verify", task, included.string(), "--runs-dir", runs.string(),
                      "--no-build-cache"},
                     600, {{"CUDA_VISIBLE_DEVICES", ""}});
  EXPECT_EQ(result.exit_code, 1) << result.stdout_text << result.stderr_text;
  json doc = newest_verify_json(runs);
  EXPECT_EQ(doc["outcome"], "hacked") << doc.dump(2);
  EXPECT_EQ(doc["findings"][0]["kind"], "reads_answer") << doc.dump(2);
  EXPECT_EQ(files_holding(runs, marker), std::vector<std::string>{});
  EXPECT_EQ((result.stdout_text + result.stderr_text).find(marker), std::string::npos);

  result = run_stitchcuda({"verify", task, relined.string(), "--runs-dir", runs.string(),
                           "--no-build-cache"},
                          600, {{"CUDA_VISIBLE_DEVICES", ""}});
  EXPECT_EQ(result.exit_code, 1) << result.stdout_text << result.stderr_text;
  doc = newest_verify_json(runs);
  EXPECT_EQ(doc["outcome"], "compile_error") << doc.dump(2);
  ASSERT_FALSE(doc["build"]["diagnostics"].empty()) << doc.dump(2);
  EXPECT_EQ(doc["build"]["diagnostics"][0]["file"], secret.string()) << doc.dump(2);
  EXPECT_EQ(doc["build"]["diagnostics"][0]["snippet"], "") << doc.dump(2);
  EXPECT_EQ(files_holding(runs, marker), std::vector<std::string>{});
  EXPECT_EQ((result.stdout_text + result.stderr_text).find(marker), std::string::npos);
  fs::remove_all(dir);
}

// With no visible device the program is still built and checked, and the command says so.
TEST(VerifyCommand, WithoutADeviceBuildsChecksAndExitsOne) {
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc";
  fs::path runs = make_temp_dir("verify-no-gpu");
  ProcessResult result = run_stitchcuda(
      {"verify", std::string(STITCH_TEST_DATA_DIR) + "/tasks/scale_shift_relu.py",
       std::string(STITCH_TEST_DATA_DIR) + "/programs/scale_shift_relu.cu", "--runs-dir",
       runs.string(), "--no-build-cache"},
      600, {{"CUDA_VISIBLE_DEVICES", ""}});
  EXPECT_EQ(result.exit_code, 1) << result.stderr_text;
  EXPECT_NE(result.stdout_text.find(
                "no CUDA device: built and statically checked; run on a GPU machine to verify"),
            std::string::npos)
      << result.stdout_text;
  json doc = newest_verify_json(runs);
  EXPECT_EQ(doc["state"], "no_gpu");
  EXPECT_EQ(doc["outcome"], nullptr);
  EXPECT_EQ(doc["build"]["ok"], true);
  EXPECT_EQ(doc["build"]["kernels"].size(), 2u) << "ptxas report of both kernels";
  fs::remove_all(runs);
}

// eval-kb on the CPU: a ModelNew that calls torch.nn.functional is rejected; exit 1.
TEST(EvalKbCommand, FunctionalSolutionIsHackedOnCpu) {
  fs::path runs = make_temp_dir("eval-kb");
  ProcessResult result = run_stitchcuda(
      {"eval-kb", std::string(STITCH_TEST_DATA_DIR) + "/kb_solutions/relu_task.py",
       std::string(STITCH_TEST_DATA_DIR) + "/kb_solutions/relu_functional.py", "--device", "cpu",
       "--iters", "3", "--runs-dir", runs.string()});
  if (result.stderr_text.find("No module named") != std::string::npos)
    GTEST_SKIP() << "no Python with torch: " << result.stderr_text;
  EXPECT_EQ(result.exit_code, 1) << result.stderr_text;
  EXPECT_EQ(result.stdout_text.rfind("hacked", 0), 0u) << result.stdout_text << result.stderr_text;
  fs::path result_file;
  for (const auto& entry : fs::recursive_directory_iterator(runs))
    if (entry.path().filename() == "eval_kb.json") result_file = entry.path();
  ASSERT_FALSE(result_file.empty());
  EXPECT_EQ(json::parse(read_text(result_file))["outcome"], "hacked");
  fs::remove_all(runs);
}

#else  // STITCH_VERIFY_GPU_TESTS

// ---- end to end on a GPU ---------------------------------------------------------------------

class VerifyCommandGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!query_gpu(0)) GTEST_SKIP() << "no CUDA device";
    runs_ = make_temp_dir("verify-gpu");
  }
  void TearDown() override {
    std::error_code ec;
    if (!runs_.empty()) fs::remove_all(runs_, ec);
  }
  fs::path runs_;
};

TEST_F(VerifyCommandGpu, HonestScaleShiftReluPasses) {
  ProcessResult result = run_stitchcuda(
      {"verify", std::string(STITCH_TEST_DATA_DIR) + "/tasks/scale_shift_relu.py",
       std::string(STITCH_TEST_DATA_DIR) + "/programs/scale_shift_relu.cu", "--runs-dir",
       runs_.string(), "--no-build-cache"},
      1800);
  std::printf("%s\n%s\n", result.stdout_text.c_str(), result.stderr_text.c_str());
  EXPECT_EQ(result.exit_code, 0);
  json doc = newest_verify_json(runs_);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["state"], "verified");
  EXPECT_EQ(doc["outcome"], "passed") << doc["reason"];
  EXPECT_EQ(doc["outputs"].size(), 5u) << "3 check sets + 2 spot slots, one output each";
  EXPECT_GT(doc["timing"]["protocol"]["median_ms"].get<double>(), 0.0);
  EXPECT_GT(doc["timing"]["synced"]["median_ms"].get<double>(), 0.0);
  EXPECT_TRUE(doc["speedups"].contains("eager")) << doc["baselines"].dump(2);
}

TEST_F(VerifyCommandGpu, StdThreadProgramIsHacked) {
  ProcessResult result = run_stitchcuda(
      {"verify", std::string(STITCH_TEST_DATA_DIR) + "/tasks/scale_shift_relu.py",
       std::string(STITCH_TEST_DATA_DIR) + "/adversarial/a03_std_thread.cu", "--runs-dir",
       runs_.string(), "--no-build-cache", "--no-baselines"});
  EXPECT_EQ(result.exit_code, 1);
  json doc = newest_verify_json(runs_);
  EXPECT_EQ(doc["outcome"], "hacked") << doc.dump(2);
}

#endif  // STITCH_VERIFY_GPU_TESTS

}  // namespace
}  // namespace stitch
