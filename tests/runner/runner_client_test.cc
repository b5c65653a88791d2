// runner_client: parsing runner.json (good, malformed, missing), classifying runs (signals,
// timeouts, statuses, findings, forged files), the command it builds, and the kill path with fake
// runners (shell scripts) that hang or leave children behind.
#include "verify/judge/runner_client.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "support/sandbox_layers.h"
#include "util/fs.h"
#include "util/pid_namespace.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGoodReport = R"({
  "format": "stitchcuda.runner", "version": 1, "status": "ok", "message": "", "phase": "timing",
  "nonce": "abc123", "self_test": false,
  "device": {"index": 0, "name": "NVIDIA H200", "l2_bytes": 62914560, "sm_count": 132},
  "sandbox": {"work_dir": "/tmp/x", "network_namespace": true, "network_detail": "unshare",
              "seccomp": true, "seccomp_detail": "", "removed_environment": [], "notes": []},
  "threads": {"before_dlopen": 5, "after_dlopen": 5, "after_init": 5, "max_after_forward": 5},
  "init_ms": 1.5, "init_launches": 0,
  "findings": [{"kind": "side_stream", "detail": "joined", "fatal": false}],
  "check_sets": [
    {"index": 0, "run": 0, "canaries_intact": true, "inputs_unchanged": true,
     "poison_remaining": [0], "unjoined_elements": [0], "launches": 1, "gpu_ms": 0.1,
     "synced_ms": 0.12, "wall_ms": 0.2, "copied_to_slot": true},
    {"index": 0, "run": 1, "canaries_intact": true, "inputs_unchanged": true,
     "poison_remaining": [0], "unjoined_elements": [0], "launches": 1, "gpu_ms": 0.1,
     "synced_ms": 0.12, "wall_ms": 0.2, "copied_to_slot": false}],
  "determinism": {"checked": true, "identical": true,
                  "outputs": [{"bit_mismatches": 0, "max_abs_diff": 0.0}]},
  "timing": {"warmup": 2, "iterations": 3, "sets": 2, "l2_flush_bytes": 125829120,
             "launch_counting": "untimed", "gpu_ms": [0.5, 0.4, 0.6],
             "synced_ms": [0.52, 0.42, 0.61], "wall_ms": [0.7, 0.6, 0.8],
             "spot_iterations": [1], "canaries_intact": true, "inputs_unchanged": true,
             "rechecks": [{"iteration": 1, "output": 0, "bit_mismatches": 0,
                           "tolerance_mismatches": 0, "max_abs_diff": 0.0}]},
  "launches": {"available": true, "detail": "CUPTI", "runner_stream_id": 7,
               "per_forward": [1, 1, 1], "kernel_names": {"scale_shift_relu_vec4": 3}},
  "idle_check": {"after_init_ms": 0.01, "before_timing_ms": 0.01}
})";

TEST(RunnerReport, ParsesAGoodReport) {
  auto report = parse_runner_report(kGoodReport);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->status, RunnerStatus::ok);
  EXPECT_EQ(report->nonce, "abc123");
  EXPECT_EQ(report->device_name, "NVIDIA H200");
  ASSERT_EQ(report->findings.size(), 1u);
  EXPECT_EQ(report->findings[0].kind, HackKind::side_stream);
  EXPECT_FALSE(report->findings[0].fatal);
  EXPECT_FALSE(report->has_fatal_finding());
  ASSERT_EQ(report->check_sets.size(), 2u);
  EXPECT_EQ(report->check_sets[1].run, 1);
  EXPECT_TRUE(report->check_sets[0].copied_to_slot);
  EXPECT_EQ(report->check_sets[0].poison_remaining, std::vector<int64_t>{0});
  EXPECT_TRUE(report->determinism_checked);
  EXPECT_TRUE(report->deterministic);
  EXPECT_EQ(report->gpu_ms, (std::vector<double>{0.5, 0.4, 0.6}));
  EXPECT_EQ(report->wall_ms.size(), 3u);
  EXPECT_EQ(report->spot_iterations, std::vector<int>{1});
  ASSERT_EQ(report->rechecks.size(), 1u);
  EXPECT_EQ(report->rechecks[0].iteration, 1);
  EXPECT_DOUBLE_EQ(report->init_ms, 1.5);
  EXPECT_TRUE(report->launches_available);
  EXPECT_EQ(report->launches_per_forward, (std::vector<int>{1, 1, 1}));
  ASSERT_EQ(report->kernel_names.size(), 1u);
  EXPECT_EQ(report->kernel_names[0].first, "scale_shift_relu_vec4");
  EXPECT_TRUE(report->canaries_intact());
  EXPECT_TRUE(report->inputs_unchanged());
  EXPECT_TRUE(report->network_namespace);
  EXPECT_EQ(report->threads_after_init, 5);
}

TEST(RunnerReport, FatalAndUnknownFindings) {
  auto report = parse_runner_report(R"({"format": "stitchcuda.runner", "version": 1,
      "status": "ok", "findings": [
        {"kind": "stale_output", "detail": "poison", "fatal": true},
        {"kind": "made_up_kind", "detail": "new check"}]})");
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->findings.size(), 2u);
  EXPECT_EQ(report->findings[0].kind, HackKind::stale_output);
  EXPECT_TRUE(report->has_fatal_finding());
  // Unknown kinds are kept, fatal, with their name in the detail.
  EXPECT_TRUE(report->findings[1].fatal);
  EXPECT_NE(report->findings[1].detail.find("made_up_kind"), std::string::npos);
}

TEST(RunnerReport, MalformedDocumentsAreErrorsNotCrashes) {
  const char* cases[] = {
      "",
      "not json",
      "[1, 2]",
      R"({"format": "other", "version": 1, "status": "ok"})",
      R"({"format": "stitchcuda.runner", "version": 2, "status": "ok"})",
      R"({"format": "stitchcuda.runner", "version": 1, "status": "exploded"})",
      R"({"format": "stitchcuda.runner", "version": 1, "status": 3})",
      R"({"format": "stitchcuda.runner", "version": 1, "status": "ok", "findings": 5})",
      R"({"format": "stitchcuda.runner", "version": 1, "status": "ok",
          "findings": [{"kind": 1, "detail": []}]})",
      R"({"format": "stitchcuda.runner", "version": 1, "status": "ok", "init_ms": "fast"})",
      R"({"format": "stitchcuda.runner", "version": "1", "status": "ok"})",
  };
  for (const char* text : cases) {
    auto report = parse_runner_report(text);
    EXPECT_FALSE(report.ok()) << "accepted: " << text;
    if (!report.ok()) {
      EXPECT_NE(report.error().message.find("runner.json"), std::string::npos);
    }
  }
}

TEST(RunnerReport, MissingFileIsAnError) {
  auto report = read_runner_report("/nonexistent/dir/runner.json");
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message.find("missing"), std::string::npos);
}

TEST(RunnerReport, StatusNamesRoundTrip) {
  for (auto status :
       {RunnerStatus::ok, RunnerStatus::init_failed, RunnerStatus::forward_failed,
        RunnerStatus::cuda_error, RunnerStatus::abi_mismatch, RunnerStatus::dlopen_failed,
        RunnerStatus::timeout, RunnerStatus::no_device, RunnerStatus::setup_failed})
    EXPECT_EQ(enum_from_name<RunnerStatus>(enum_name(status)), status);
  EXPECT_FALSE(enum_from_name<RunnerStatus>("bogus").has_value());
  EXPECT_EQ(enum_from_name<HackKind>("guard_band"), HackKind::guard_band);
  EXPECT_FALSE(enum_from_name<HackKind>("bogus").has_value());
}

Result<RunnerReport> report_with(const std::string& status, const std::string& findings = "[]",
                                 const std::string& nonce = "n1") {
  return parse_runner_report(fmt::format(
      R"({{"format": "stitchcuda.runner", "version": 1, "status": "{}", "message": "msg",
          "nonce": "{}", "findings": {}, "sandbox": {}}})",
      status, nonce, findings, test_support::complete_sandbox_json()));
}

ProcessResult exited(int code) {
  ProcessResult result;
  result.exit_code = code;
  return result;
}

TEST(RunnerClassify, CleanRunPasses) {
  auto verdict = classify_runner_run(exited(0), report_with("ok"), "n1");
  EXPECT_EQ(verdict.outcome, Outcome::passed);
}

// Fail closed (sandbox/layers.h): a clean run whose runner does not report every required layer
// is not `passed`, and says which; --insecure-sandbox waives the named layers and is recorded.
TEST(RunnerClassify, MissingSandboxLayersRefusePassed) {
  auto report = parse_runner_report(R"({"format": "stitchcuda.runner", "version": 1,
      "status": "ok", "nonce": "n1", "sandbox": {"network_namespace": true, "seccomp": true,
      "layers": [{"name": "user", "set_up": false, "detail": "setresuid: EPERM"}]}})");
  ASSERT_TRUE(report.ok());
  auto verdict = classify_runner_run(exited(0), report, "n1");
  EXPECT_EQ(verdict.outcome, Outcome::runtime_error);
  EXPECT_TRUE(verdict.runner_fault);
  EXPECT_TRUE(verdict.reason.starts_with(
      "sandbox_incomplete: user, no_new_privs, pid_namespace, mount_namespace, ipc_namespace, "
      "descriptors (user: setresuid: EPERM)"))
      << verdict.reason;

  auto waived = sandbox::parse_insecure_layers(
      {"user", "no_new_privs", "pid_namespace", "mount_namespace", "ipc_namespace"});
  ASSERT_TRUE(waived.ok());
  verdict = classify_runner_run(exited(0), report, "n1", *waived);
  EXPECT_EQ(verdict.outcome, Outcome::runtime_error);
  EXPECT_NE(verdict.reason.find("sandbox_incomplete: descriptors"), std::string::npos)
      << verdict.reason;

  auto all = sandbox::parse_insecure_layers({"all"});
  ASSERT_TRUE(all.ok());
  verdict = classify_runner_run(exited(0), report, "n1", *all);
  EXPECT_EQ(verdict.outcome, Outcome::passed);
  EXPECT_EQ(verdict.insecure_layers.size(), 6u);
}

TEST(RunnerClassify, CompleteLayersPassWithNothingInsecure) {
  auto verdict = classify_runner_run(exited(0), report_with("ok"), "n1");
  EXPECT_EQ(verdict.outcome, Outcome::passed);
  EXPECT_TRUE(verdict.insecure_layers.empty());
}

TEST(RunnerReportParse, LegacySandboxBooleansBecomeLayers) {
  auto report = parse_runner_report(R"({"format": "stitchcuda.runner", "version": 1,
      "status": "ok", "sandbox": {"network_namespace": true, "network_detail": "unshare",
      "seccomp": false, "seccomp_detail": "disabled"}})");
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->sandbox_layers.size(), 2u);
  EXPECT_EQ(report->sandbox_layers[0].name, "network_namespace");
  EXPECT_TRUE(report->sandbox_layers[0].set_up);
  EXPECT_EQ(report->sandbox_layers[1].name, "seccomp");
  EXPECT_FALSE(report->sandbox_layers[1].set_up);
  EXPECT_FALSE(parse_runner_report(R"({"format": "stitchcuda.runner", "version": 1,
      "status": "ok", "sandbox": {"layers": 3}})")
                   .ok());
}

TEST(RunnerClassify, FatalFindingIsHacked) {
  auto verdict = classify_runner_run(
      exited(0), report_with("ok", R"([{"kind": "guard_band", "detail": "d", "fatal": true}])"),
      "n1");
  EXPECT_EQ(verdict.outcome, Outcome::hacked);
  EXPECT_NE(verdict.reason.find("guard_band"), std::string::npos);
}

TEST(RunnerClassify, NonFatalFindingStillPasses) {
  auto verdict = classify_runner_run(
      exited(0), report_with("ok", R"([{"kind": "side_stream", "detail": "d", "fatal": false}])"),
      "n1");
  EXPECT_EQ(verdict.outcome, Outcome::passed);
  EXPECT_EQ(verdict.findings.size(), 1u);
}

TEST(RunnerClassify, ForgedReportIsHacked) {
  auto verdict = classify_runner_run(exited(0), report_with("ok", "[]", "forged"), "n1");
  EXPECT_EQ(verdict.outcome, Outcome::hacked);
  ASSERT_FALSE(verdict.findings.empty());
  EXPECT_EQ(verdict.findings.back().kind, HackKind::tampers_judge);
}

TEST(RunnerClassify, CandidateFailuresAreRuntimeErrors) {
  for (const char* status :
       {"init_failed", "forward_failed", "cuda_error", "abi_mismatch", "dlopen_failed"}) {
    auto verdict = classify_runner_run(exited(1), report_with(status), "n1");
    EXPECT_EQ(verdict.outcome, Outcome::runtime_error) << status;
    EXPECT_FALSE(verdict.runner_fault) << status;
    EXPECT_NE(verdict.reason.find(status), std::string::npos);
  }
}

TEST(RunnerClassify, RunnerFaultsAreMarked) {
  for (const char* status : {"no_device", "setup_failed"}) {
    auto verdict = classify_runner_run(exited(3), report_with(status), "n1");
    EXPECT_EQ(verdict.outcome, Outcome::runtime_error);
    EXPECT_TRUE(verdict.runner_fault) << status;
  }
}

TEST(RunnerClassify, WatchdogTimeoutAndKill) {
  EXPECT_EQ(classify_runner_run(exited(5), report_with("timeout"), "n1").outcome, Outcome::timeout);
  ProcessResult killed;
  killed.timed_out = true;
  killed.term_signal = SIGKILL;
  killed.wall_s = 12;
  auto verdict = classify_runner_run(killed, Result<RunnerReport>(make_error("missing")), "n1");
  EXPECT_EQ(verdict.outcome, Outcome::timeout);
  // A persistent kernel reported before the watchdog fired: the finding decides.
  auto hacked = classify_runner_run(
      exited(5),
      report_with("timeout", R"([{"kind": "persistent_kernel", "detail": "d", "fatal": true}])"),
      "n1");
  EXPECT_EQ(hacked.outcome, Outcome::hacked);
}

TEST(RunnerClassify, CrashSignalsAreRuntimeErrors) {
  for (int signal_number : {SIGSEGV, SIGABRT, SIGBUS}) {
    ProcessResult crashed;
    crashed.term_signal = signal_number;
    auto verdict = classify_runner_run(crashed, Result<RunnerReport>(make_error("missing")), "n1");
    EXPECT_EQ(verdict.outcome, Outcome::runtime_error);
    EXPECT_NE(verdict.reason.find(std::string("SIG") + sigabbrev_np(signal_number)),
              std::string::npos)
        << verdict.reason;
  }
  // Exit 0 without a report (the candidate called exit()) is no pass.
  auto verdict = classify_runner_run(exited(0), Result<RunnerReport>(make_error("missing")), "n1");
  EXPECT_EQ(verdict.outcome, Outcome::runtime_error);
}

TEST(RunnerSpec, BuildsTheSandboxedCommand) {
  setenv("PYTHONPATH", "/somewhere", 1);
  RunnerInvocation invocation;
  invocation.runner = "/opt/stitch-runner";
  invocation.program = "/run/attempts/01/program.so";
  invocation.slots = "/judge/slots.json";
  invocation.result = "/run/attempts/01/runner.json";
  invocation.work_dir = "/tmp/sandbox";
  invocation.timeout_s = 77;
  invocation.timing_iters = 9;
  ProcessSpec spec = build_runner_spec(invocation, "nonce42");
  unsetenv("PYTHONPATH");
  auto has = [&](const std::string& flag, const std::string& value) {
    for (size_t i = 0; i + 1 < spec.argv.size(); ++i)
      if (spec.argv[i] == flag && spec.argv[i + 1] == value) return true;
    return false;
  };
  EXPECT_EQ(spec.argv[0], "/opt/stitch-runner");
  EXPECT_TRUE(has("--program", "/run/attempts/01/program.so"));
  EXPECT_TRUE(has("--slots", "/judge/slots.json"));
  EXPECT_TRUE(has("--result", "/run/attempts/01/runner.json"));
  EXPECT_TRUE(has("--timing-iters", "9"));
  EXPECT_TRUE(has("--work-dir", "/tmp/sandbox"));
  EXPECT_NE(std::find(spec.argv.begin(), spec.argv.end(), "--nonce-stdin"), spec.argv.end());
  EXPECT_EQ(spec.stdin_text, "nonce42\n");
  EXPECT_EQ(spec.cwd, fs::path("/tmp/sandbox"));
  EXPECT_DOUBLE_EQ(spec.timeout_s, 77);
  EXPECT_TRUE(spec.limits.no_core_dumps);
  EXPECT_NE(std::find(spec.env_remove.begin(), spec.env_remove.end(), "PYTHONPATH"),
            spec.env_remove.end());
  EXPECT_EQ(make_nonce().size(), 32u);
  EXPECT_NE(make_nonce(), make_nonce());
  // The supervisor's deadline comes before the wall-clock kill; the runner is told our namespace.
  EXPECT_TRUE(has("--deadline-s", fmt::format("{}", supervisor_deadline_s(77))));
  EXPECT_LT(supervisor_deadline_s(77), 77);
  EXPECT_GE(supervisor_deadline_s(600), 590);
  EXPECT_TRUE(has("--orchestrator-pid-namespace", pid_namespace_id()));
  EXPECT_EQ(spec.pid_namespace.mode, PidNamespaceMode::inherit);
  invocation.judge_pid = 4242;  // the judge's namespace, when it has one of its own
  ProcessSpec joined = build_runner_spec(invocation, "nonce42");
  EXPECT_EQ(joined.pid_namespace.mode, PidNamespaceMode::join);
  EXPECT_EQ(joined.pid_namespace.target, 4242);
}

TEST(RunnerClassify, CrashedIsTheCandidatesRuntimeErrorNeverTheMachines) {
  std::string text = kGoodReport;
  text.replace(text.find(R"("status": "ok")"), 14, R"("status": "crashed")");
  text.replace(text.find(R"("message": "")"), 13,
               R"("message": "the worker exited with code 0 without a report")");
  auto report = parse_runner_report(text);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ProcessResult process;
  process.exit_code = 1;
  RunnerVerdict verdict = classify_runner_run(process, report, "abc123");
  EXPECT_EQ(verdict.outcome, Outcome::runtime_error);
  EXPECT_FALSE(verdict.runner_fault);
  EXPECT_NE(verdict.reason.find("without a report"), std::string::npos) << verdict.reason;
}

// Fake runners: shell scripts standing in for stitch-runner, to exercise the client end to end.
class FakeRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("runner_client_test_{}_{}", getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path script(const std::string& body) {
    fs::path path = dir_ / "fake-runner.sh";
    std::ofstream(path) << "#!/bin/sh\n"
                           "result=''\n"
                           "while [ $# -gt 0 ]; do\n"
                           "  case \"$1\" in --result) result=\"$2\"; shift;; esac; shift\n"
                           "done\n"
                        << body;
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }

  RunnerInvocation invocation(const fs::path& runner, double timeout_s = 20) {
    RunnerInvocation run;
    run.runner = runner;
    run.program = dir_ / "program.so";
    run.self_test = true;
    run.result = dir_ / "out" / "runner.json";
    run.work_dir = dir_ / "work";
    run.timeout_s = timeout_s;
    return run;
  }

  fs::path dir_;
};

TEST_F(FakeRunner, EchoedNoncePasses) {
  fs::path runner = script(
      "read nonce\n"
      "printf '{\"format\":\"stitchcuda.runner\",\"version\":1,\"status\":\"ok\",\"nonce\":\"%s\","
      "\"sandbox\":%s}' \"$nonce\" '" +
      test_support::complete_sandbox_json() + "' > \"$result\"\n");
  SystemProcessRunner processes;
  auto run = run_runner(processes, invocation(runner));
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_TRUE(run->report.has_value()) << run->report_error;
  EXPECT_EQ(run->verdict.outcome, Outcome::passed) << run->verdict.reason;
}

TEST_F(FakeRunner, StaleReportFromAnEarlierRunIsNotRead) {
  fs::path runner = script("exit 0\n");
  RunnerInvocation run_spec = invocation(runner);
  fs::create_directories(run_spec.result.parent_path());
  std::ofstream(run_spec.result) << R"({"format":"stitchcuda.runner","version":1,"status":"ok"})";
  SystemProcessRunner processes;
  auto run = run_runner(processes, run_spec);
  ASSERT_TRUE(run.ok());
  EXPECT_FALSE(run->report.has_value());
  EXPECT_EQ(run->verdict.outcome, Outcome::runtime_error);
}

TEST_F(FakeRunner, ForgedReportIsHacked) {
  fs::path runner = script(
      "printf '{\"format\":\"stitchcuda.runner\",\"version\":1,\"status\":\"ok\",\"nonce\":\"x\"}'"
      " > \"$result\"\n");
  SystemProcessRunner processes;
  auto run = run_runner(processes, invocation(runner));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->verdict.outcome, Outcome::hacked);
}

TEST_F(FakeRunner, SegfaultIsARuntimeError) {
  fs::path runner = script("kill -SEGV $$\n");
  SystemProcessRunner processes;
  auto run = run_runner(processes, invocation(runner));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->process.term_signal, SIGSEGV);
  EXPECT_EQ(run->verdict.outcome, Outcome::runtime_error);
  EXPECT_NE(run->verdict.reason.find("SIGSEGV"), std::string::npos);
}

TEST_F(FakeRunner, HangingRunnerIsKilledOnTimeout) {
  fs::path runner = script("exec sleep 300\n");
  SystemProcessRunner processes;
  auto start = std::chrono::steady_clock::now();
  auto run = run_runner(processes, invocation(runner, 1.0));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->process.timed_out);
  EXPECT_EQ(run->verdict.outcome, Outcome::timeout);
  EXPECT_LT(seconds, 15.0);
}

bool running(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  if (!stat) return false;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

TEST_F(FakeRunner, ChildrenThatHangDieWithTheGroup) {
  fs::path pids = dir_ / "pids";
  fs::path runner =
      script(fmt::format("sleep 300 &\n"
                         "echo $! >> {0}\n"
                         "(sleep 300 & echo $! >> {0}; wait) &\n"
                         "echo $! >> {0}\n"
                         "echo $$ >> {0}\n"
                         "wait\n",
                         pids.string()));
  SystemProcessRunner processes;
  auto run = run_runner(processes, invocation(runner, 1.0));
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->process.timed_out);
  std::vector<pid_t> started;
  std::ifstream list(pids);
  for (pid_t pid; list >> pid;)
    started.push_back(pid);
  ASSERT_EQ(started.size(), 4u);  // two sleeps, the subshell, the script
  // Killed processes are reaped by whoever inherits them; give that a moment.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (pid_t pid : started) {
    while (running(pid) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(running(pid)) << "process " << pid << " outlived the runner's group";
  }
}

}  // namespace
}  // namespace stitch
