// The judge client (LineChild itself is tested in tests/util): the JSON parsers (compared result,
// baseline file), PythonJudgeSession against a fake judge script (ready, errors, a judge that dies,
// hangs or ignores `exit`) and against the real judge on the CPU (`--device cpu --fake-ipc`,
// skipped when the Python harness or torch is missing).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "../util/process_test_support.h"
#include "util/fs.h"
#include "util/pid_namespace.h"
#include "util/process.h"
#include "verify/judge/judge_client.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using test_support::make_temp_dir;
using test_support::process_gone;
using test_support::read_pid;

// ---- parsers -------------------------------------------------------------------------------------

TEST(JudgeComparison, TracksWithoutANormBoundParse) {
  // tf32 / bf16: the judge sends "rel_err_norm_max": null (no bound); a passing result must parse.
  json result = json::parse(R"({
    "passed": true, "track": "tf32", "atol": 1e-2, "rtol": 1e-2, "rel_err_norm_max": null,
    "check_sets": [], "spot_slots": [], "degenerate_reference": false, "degenerate_reasons": [],
    "findings": [], "messages": [], "compare_s": 0.1})");
  auto parsed = parse_judge_comparison(result);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_TRUE(parsed->passed);
  EXPECT_DOUBLE_EQ(parsed->rel_err_norm_max, 0.0);
}

TEST(JudgeComparison, ParsesTheJudgesResult) {
  json result = json::parse(R"({
    "passed": false, "track": "fp32", "atol": 1e-4, "rtol": 1e-4, "rel_err_norm_max": 5e-5,
    "check_sets": [{"set": 0, "passed": false, "inputs_unchanged": true, "outputs": [
      {"output_index": 0, "passed": false, "message": "output 0: 8 NaN/Inf elements",
       "max_abs_error": null, "max_abs_error_index": 3, "relative_error_norm": null,
       "mismatches": 8, "first_mismatch_index": 3, "nan_or_inf": 8, "elements": 64,
       "degenerate_reference": false, "degenerate_reason": ""},
      {"output_index": 1, "passed": true, "message": "output 1: ok: the 2 elements ...",
       "max_abs_error": 3e-4, "max_abs_error_index": 7, "relative_error_norm": 1e-7,
       "mismatches": 0, "first_mismatch_index": -1, "nan_or_inf": 0, "elements": 64,
       "exact_reference_elements": 2}]}],
    "spot_slots": [{"slot": 0, "filled": false, "passed": false, "outputs": [],
                    "message": "the runner did not fill this spot slot's inputs"}],
    "degenerate_reference": false, "degenerate_reasons": [],
    "findings": [{"kind": "output_cache", "fatal": true, "detail": "repeats"},
                 {"kind": "something_new", "fatal": true, "detail": "x"}],
    "messages": ["spot slot 0: not filled"], "compare_s": 0.5})");
  auto parsed = parse_judge_comparison(result);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_FALSE(parsed->passed);
  EXPECT_DOUBLE_EQ(parsed->rel_err_norm_max, 5e-5);
  ASSERT_EQ(parsed->sets.size(), 2u);
  EXPECT_EQ(parsed->sets[0].where, "check set 0");
  EXPECT_EQ(parsed->sets[1].where, "spot slot 0");
  EXPECT_FALSE(parsed->sets[1].filled);
  const OutputCheck& check = parsed->sets[0].outputs[0].check;
  EXPECT_TRUE(std::isinf(check.max_abs_error)) << "null is an infinite error";
  EXPECT_EQ(check.nan_or_inf, 8);
  EXPECT_EQ(check.first_mismatch_index, 3);
  EXPECT_EQ(parsed->sets[0].outputs[0].elements, 64);
  EXPECT_EQ(parsed->sets[0].outputs[0].exact_reference_elements, 0);
  EXPECT_EQ(parsed->sets[0].outputs[1].exact_reference_elements, 2);
  ASSERT_EQ(parsed->findings.size(), 2u);
  EXPECT_EQ(parsed->findings[0].kind, HackKind::output_cache);
  EXPECT_NE(parsed->findings[1].detail.find("something_new"), std::string::npos)
      << "an unknown kind is kept, fatal, with its name";
  EXPECT_TRUE(parsed->findings[1].fatal);
}

TEST(JudgeComparison, RejectsMalformedResults) {
  EXPECT_FALSE(parse_judge_comparison(json::array()).ok());
  EXPECT_FALSE(parse_judge_comparison(json::parse(R"({"track": "fp32"})")).ok());
  EXPECT_FALSE(parse_judge_comparison(json::parse(R"({"passed": true, "atol": "x"})")).ok());
}

TEST(BaselineReport, ParsesModesInCanonicalOrder) {
  json doc = json::parse(R"({"gpu": "NVIDIA H200", "track": "fp32", "from_cache": true, "modes": {
    "reduce-overhead": {"error": "timed out"},
    "compile": {"compile_s": 20.5, "timing": {"stats": {"median_ms": 1.0, "p10_ms": 0.9,
                "p90_ms": 1.2, "min_ms": 0.8, "iterations": 50}}},
    "eager": {"timing": {"stats": {"median_ms": 2.0, "p10_ms": 1.9, "p90_ms": 2.1,
              "min_ms": 1.8, "iterations": 50}}}}})");
  auto report = parse_baseline_report(doc);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->from_cache);
  ASSERT_EQ(report->modes.size(), 3u);
  EXPECT_EQ(report->modes[0].mode, "eager");
  EXPECT_EQ(report->modes[1].mode, "compile");
  EXPECT_EQ(report->modes[2].mode, "reduce-overhead");
  ASSERT_TRUE(report->modes[0].stats);
  EXPECT_DOUBLE_EQ(report->modes[0].stats->median_ms, 2.0);
  EXPECT_DOUBLE_EQ(report->modes[1].compile_s, 20.5);
  EXPECT_FALSE(report->modes[2].stats);
  EXPECT_EQ(report->modes[2].error, "timed out");
  EXPECT_FALSE(parse_baseline_report(json::parse(R"({"gpu": "x"})")).ok());
}

// ---- PythonJudgeSession against a fake judge -------------------------------------------------

// Stands in for `python`: ignores "-m stitch_harness.judge serve", reads --work-dir, and behaves as
// $FAKE_JUDGE_MODE says. It starts a grandchild (sleep) so tests can see the group killed.
constexpr const char* kFakeJudge = R"SH(#!/bin/bash
work=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--work-dir" ]; then work="$2"; fi
  shift
done
mkdir -p "$work"
sleep 300 &
echo $! > "$work/grandchild.pid"
echo "starting (noise on stderr)" >&2
case "$FAKE_JUDGE_MODE" in
  die) exit 3 ;;
  error) echo '{"event": "error", "message": "setup failed: no module named torch"}'; exit 1 ;;
  hang) sleep 300 ;;
esac
echo '{}' > "$work/slots.json"
echo "a line that is not a protocol event"
echo "{\"event\": \"ready\", \"slots\": \"$work/slots.json\", \"sets\": 3, \"spot_slots\": 2, \"timing_sets\": 2, \"memory_note\": \"memory: fewer sets\", \"setup_s\": 0.25}"
while read -r line; do
  case "$line" in
    *compare*) echo '{"event": "compared", "result": {"passed": true, "check_sets": [{"set": 0, "passed": true, "outputs": [{"output_index": 0, "passed": true, "relative_error_norm": 0.0}]}]}}' ;;
    *exit*)
      if [ "$FAKE_JUDGE_MODE" = "stubborn" ]; then trap '' TERM; sleep 300; fi
      echo '{"event": "bye"}'; exit 0 ;;
  esac
done
)SH";

class FakeJudgeProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("fake-judge");
    fs::path script = dir_ / "fake_python";
    std::ofstream(script) << kFakeJudge;
    chmod(script.c_str(), 0755);
    location_ = {script.string(), dir_};
    request_.graph_dir = dir_;
    request_.work_dir = dir_ / "judge";
    request_.log_path = dir_ / "judge.log";
    request_.ready_timeout_s = 10;
  }
  void TearDown() override {
    unsetenv("FAKE_JUDGE_MODE");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void expect_all_gone(pid_t judge_pid) {
    if (judge_pid > 0) {
      EXPECT_TRUE(process_gone(judge_pid)) << "the judge is still running";
    }
    pid_t grandchild = read_pid(request_.work_dir / "grandchild.pid");
    ASSERT_GT(grandchild, 0);
    EXPECT_TRUE(process_gone(grandchild)) << "a process the judge started is still running";
  }

  fs::path dir_;
  PythonLocation location_;
  JudgeServeRequest request_;
};

TEST_F(FakeJudgeProcess, StartCompareStop) {
  PythonJudgeSession judge(location_);
  auto ready = judge.start(request_);
  ASSERT_TRUE(ready.ok()) << ready.error().message;
  EXPECT_EQ(ready->slots_path, request_.work_dir / "slots.json");
  EXPECT_EQ(ready->sets, 3);
  EXPECT_EQ(ready->timing_sets, 2);
  EXPECT_EQ(ready->memory_note, "memory: fewer sets");
  EXPECT_DOUBLE_EQ(ready->setup_s, 0.25);
  pid_t pid = judge.pid();
  auto comparison = judge.compare(10);
  ASSERT_TRUE(comparison.ok()) << comparison.error().message;
  EXPECT_TRUE(comparison->passed);
  ASSERT_EQ(comparison->sets.size(), 1u);
  judge.stop();
  EXPECT_EQ(judge.exit_result().exit_code, 0) << "it left on the exit command";
  EXPECT_FALSE(judge.exit_result().timed_out);
  expect_all_gone(pid);
  EXPECT_NE(read_file(request_.log_path)->find("noise on stderr"), std::string::npos);
  judge.stop();  // idempotent
}

TEST_F(FakeJudgeProcess, CommandLineCarriesTheRequest) {
  PythonJudgeSession judge(location_);
  request_.track = Track::tf32;
  request_.sets = 5;
  request_.extra_args = {"--fake-ipc"};
  std::vector<std::string> argv = judge.serve_command(request_);
  std::string joined;
  for (const auto& arg : argv) joined += arg + " ";
  EXPECT_NE(joined.find("-m stitch_harness.judge serve"), std::string::npos) << joined;
  EXPECT_NE(joined.find("--track tf32"), std::string::npos);
  EXPECT_NE(joined.find("--sets 5"), std::string::npos);
  EXPECT_NE(joined.find("--fake-ipc"), std::string::npos);
}

TEST_F(FakeJudgeProcess, SetupErrorIsReported) {
  setenv("FAKE_JUDGE_MODE", "error", 1);
  PythonJudgeSession judge(location_);
  auto ready = judge.start(request_);
  ASSERT_FALSE(ready.ok());
  EXPECT_NE(ready.error().message.find("no module named torch"), std::string::npos)
      << ready.error().message;
  expect_all_gone(-1);
}

TEST_F(FakeJudgeProcess, JudgeThatDiesIsReportedWithItsExit) {
  setenv("FAKE_JUDGE_MODE", "die", 1);
  PythonJudgeSession judge(location_);
  auto ready = judge.start(request_);
  ASSERT_FALSE(ready.ok());
  EXPECT_NE(ready.error().message.find("exit code 3"), std::string::npos) << ready.error().message;
  EXPECT_NE(ready.error().message.find("noise on stderr"), std::string::npos)
      << "the log's tail explains the exit";
  expect_all_gone(-1);
}

TEST_F(FakeJudgeProcess, JudgeThatNeverBecomesReadyIsKilled) {
  setenv("FAKE_JUDGE_MODE", "hang", 1);
  request_.ready_timeout_s = 0.5;
  PythonJudgeSession judge(location_);
  judge.set_stop_grace(0.5);
  auto started = std::chrono::steady_clock::now();
  auto ready = judge.start(request_);
  ASSERT_FALSE(ready.ok());
  EXPECT_NE(ready.error().message.find("within"), std::string::npos) << ready.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  expect_all_gone(-1);
}

TEST_F(FakeJudgeProcess, JudgeThatIgnoresExitIsKilledWithItsGroup) {
  setenv("FAKE_JUDGE_MODE", "stubborn", 1);
  PythonJudgeSession judge(location_);
  judge.set_stop_grace(0.5);
  ASSERT_TRUE(judge.start(request_).ok());
  pid_t pid = judge.pid();
  judge.stop();
  EXPECT_TRUE(judge.exit_result().timed_out) << "it had to be killed";
  expect_all_gone(pid);
}

// The fake judge's background sleep as we see it (its grandchild.pid holds the namespace's view).
pid_t child_in_namespace(pid_t judge) {
  std::ifstream children(fmt::format("/proc/{}/task/{}/children", judge, judge));
  pid_t child = -1;
  children >> child;
  return child;
}

TEST_F(FakeJudgeProcess, InItsOwnPidNamespaceARunnerCanJoinIt) {
  if (!can_create_pid_namespace()) GTEST_SKIP() << "no permission to create PID namespaces";
  request_.own_pid_namespace = true;
  PythonJudgeSession judge(location_);
  ASSERT_TRUE(judge.start(request_).ok());
  pid_t pid = judge.pid();
  EXPECT_EQ(judge.namespace_pid(), pid);
  std::string judge_namespace = pid_namespace_id(pid);
  EXPECT_NE(judge_namespace, pid_namespace_id());
  ProcessSpec runner;
  runner.argv = {"readlink", "/proc/self/ns/pid"};
  runner.pid_namespace = PidNamespace::join(judge.namespace_pid());
  runner.timeout_s = 10;
  SystemProcessRunner processes;
  auto joined = processes.run(runner);
  ASSERT_TRUE(joined.ok()) << joined.error().message;
  EXPECT_EQ(joined->stdout_text, judge_namespace + "\n");
  pid_t background = child_in_namespace(pid);
  judge.stop();  // the exit command works for PID 1 as for any judge
  EXPECT_EQ(judge.exit_result().exit_code, 0);
  EXPECT_FALSE(judge.exit_result().timed_out);
  EXPECT_EQ(judge.namespace_pid(), -1);
  EXPECT_TRUE(process_gone(pid));
  ASSERT_GT(background, 0);
  EXPECT_TRUE(process_gone(background)) << "its background sleep outlived the namespace";
}

TEST_F(FakeJudgeProcess, AStubbornJudgeAsPid1IsStillKilled) {
  if (!can_create_pid_namespace()) GTEST_SKIP() << "no permission to create PID namespaces";
  setenv("FAKE_JUDGE_MODE", "stubborn", 1);
  request_.own_pid_namespace = true;
  PythonJudgeSession judge(location_);
  judge.set_stop_grace(0.5);
  ASSERT_TRUE(judge.start(request_).ok());
  pid_t pid = judge.pid();
  pid_t background = child_in_namespace(pid);
  judge.stop();  // SIGTERM means nothing to PID 1 without a handler: SIGKILL after the grace
  EXPECT_TRUE(judge.exit_result().timed_out);
  EXPECT_EQ(judge.exit_result().term_signal, SIGKILL);
  EXPECT_TRUE(process_gone(pid));
  ASSERT_GT(background, 0);
  EXPECT_TRUE(process_gone(background));
}

TEST_F(FakeJudgeProcess, DestructorStopsTheJudge) {
  pid_t pid = -1;
  {
    PythonJudgeSession judge(location_);
    ASSERT_TRUE(judge.start(request_).ok());
    pid = judge.pid();
  }
  expect_all_gone(pid);
}

TEST_F(FakeJudgeProcess, CompareWithoutAJudgeIsAnError) {
  PythonJudgeSession judge(location_);
  EXPECT_FALSE(judge.compare(1).ok());
}

// ---- the real judge, on the CPU ----------------------------------------------------------------

TEST(RealJudgeOnCpu, ServesSlotsAndComparesPoisonedOutputsAsWrong) {
  std::string python = STITCH_PYTHON_PATH;
  fs::path python_dir = fs::path(STITCH_SOURCE_DIR) / "python";
  SystemProcessRunner runner;
  ProcessSpec probe;
  probe.argv = {python, "-c", "import torch, safetensors"};
  auto has_torch = runner.run(probe);
  if (!has_torch.ok() || !has_torch->succeeded()) GTEST_SKIP() << "no Python with torch at " << python;

  fs::path dir = make_temp_dir("real-judge");
  ProcessSpec capture = python_module_spec(
      {python, python_dir}, "stitch_harness",
      {"capture", std::string(STITCH_TEST_DATA_DIR) + "/tasks/scale_shift_relu.py", "--out",
       (dir / "capture").string(), "--no-reference"});
  capture.timeout_s = 300;
  auto captured = runner.run(capture);
  ASSERT_TRUE(captured.ok() && captured->succeeded())
      << (captured.ok() ? captured->stderr_text : captured.error().message);

  PythonJudgeSession judge({python, python_dir});
  JudgeServeRequest request;
  request.graph_dir = dir / "capture";
  request.work_dir = dir / "judge";
  request.log_path = dir / "judge.log";
  request.sets = 2;
  request.device = "cpu";
  request.extra_args = {"--fake-ipc"};
  request.ready_timeout_s = 300;
  request.own_pid_namespace = use_verification_pid_namespace();  // as verify starts it: PID 1
  auto ready = judge.start(request);
  ASSERT_TRUE(ready.ok()) << ready.error().message;
  EXPECT_EQ(ready->sets, 2);
  auto slots = read_file(ready->slots_path);
  ASSERT_TRUE(slots.ok());
  json doc = json::parse(*slots);
  EXPECT_EQ(doc["check_sets"].size(), 2u);
  EXPECT_EQ(doc["outputs"].size(), 1u);

  // Nobody wrote the outputs: they still hold the judge's NaN poison.
  auto comparison = judge.compare(300);
  ASSERT_TRUE(comparison.ok()) << comparison.error().message;
  EXPECT_FALSE(comparison->passed);
  ASSERT_GE(comparison->sets.size(), 2u);
  const JudgeOutput& output = comparison->sets[0].outputs.at(0);
  EXPECT_FALSE(output.check.passed);
  EXPECT_EQ(output.check.nan_or_inf, output.elements);
  EXPECT_GT(output.elements, 0);
  pid_t pid = judge.pid();
  judge.stop();
  EXPECT_EQ(judge.exit_result().exit_code, 0);
  EXPECT_TRUE(process_gone(pid));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stitch
