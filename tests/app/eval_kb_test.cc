// `eval-kb` over a fake judge: the judge is asked with absolute paths into a new attempt, its
// report becomes the result, the run's log and summary say the outcome; a failed judge is logged
// and work_failed; bad input is bad_input before any run directory is made. And the Python judge
// through a fake process runner: its command, its log, a failed judge as an Error.
#include "app/eval_kb.h"

#include <fstream>

#include <gtest/gtest.h>

#include "expect_error.h"
#include "run/events.h"
#include "temp_dir.h"
#include "util/fs.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

class FakeJudge final : public KernelBenchJudge {
 public:
  std::optional<Outcome> outcome = Outcome::wrong;  // nullopt: the judge fails
  std::vector<EvalKbRequest> requests;
  Result<harness::EvalKbReport> evaluate(const EvalKbRequest& request) override {
    requests.push_back(request);
    if (!outcome) return make_error("eval-kb exit code 1: RuntimeError: CUDA out of memory");
    harness::EvalKbReport report;
    report.outcome = *outcome;
    report.reason = "check set 0: output 0 differs";
    return report;
  }
};

class EvalKb : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_.path() / "19_ReLU.py") << "class Model: pass\n";
    std::ofstream(dir_.path() / "solution.py") << "class ModelNew: pass\n";
    options_.task = (dir_.path() / "19_ReLU.py").string();
    options_.solution = (dir_.path() / "solution.py").string();
    options_.runs_dir = (dir_.path() / "runs").string();
    options_.judging.track = "tf32";
  }
  // The one run directory made under runs/.
  fs::path run_dir() const {
    std::vector<fs::path> runs;
    for (const auto& entry : fs::directory_iterator(dir_.path() / "runs"))
      runs.push_back(entry);
    EXPECT_EQ(runs.size(), 1u);
    return runs.empty() ? fs::path() : runs[0];
  }
  std::vector<json> events() const { return run::read_events(run_dir() / "events.jsonl").value(); }
  std::vector<std::string> event_names() const {
    std::vector<std::string> names;
    for (const auto& event : events())
      names.push_back(event["event"]);
    return names;
  }
  TempDir dir_{"eval_kb"};
  EvalKbOptions options_;
  FakeJudge judge_;
};

TEST_F(EvalKb, TheJudgesVerdictIsTheResultAndTheRunsStatus) {
  auto evaluated = evaluate_kernelbench(options_, judge_);
  ASSERT_TRUE(evaluated.ok()) << evaluated.error().message;
  EXPECT_FALSE(evaluated->passed());
  EXPECT_EQ(evaluated->report.outcome, Outcome::wrong);
  const fs::path attempt = run_dir() / "attempts" / "01";
  EXPECT_EQ(evaluated->result_path, attempt / "eval_kb.json");

  ASSERT_EQ(judge_.requests.size(), 1u);
  const EvalKbRequest& request = judge_.requests[0];
  EXPECT_TRUE(request.task.is_absolute());
  EXPECT_EQ(request.solution, fs::absolute(options_.solution));
  EXPECT_EQ(request.out, fs::absolute(attempt / "eval_kb.json"));
  EXPECT_EQ(request.log, attempt / "eval_kb.log");
  EXPECT_EQ(request.judging.track, "tf32");
  EXPECT_EQ(read_file(attempt / "solution.py").value(), "class ModelNew: pass\n");
  EXPECT_TRUE(fs::exists(run_dir() / "task.py"));

  EXPECT_EQ(event_names(), (std::vector<std::string>{"eval_kb.start", "eval_kb.done"}));
  const json done = events().back();
  EXPECT_EQ(done["outcome"], "wrong");
  EXPECT_EQ(done["reason"], "check set 0: output 0 differs");
  const json summary = json::parse(read_file(run_dir() / "summary.json").value());
  EXPECT_EQ(summary["status"], "complete");
  EXPECT_EQ(summary["outcome"], "wrong");

  judge_.outcome = Outcome::passed;
  fs::remove_all(dir_.path() / "runs");
  evaluated = evaluate_kernelbench(options_, judge_);
  ASSERT_TRUE(evaluated.ok());
  EXPECT_TRUE(evaluated->passed());
}

TEST_F(EvalKb, AFailedJudgeIsLoggedAndWorkFailed) {
  judge_.outcome = std::nullopt;
  auto evaluated = evaluate_kernelbench(options_, judge_);
  ASSERT_FALSE(evaluated.ok());
  EXPECT_EQ(evaluated.error().kind, ErrorKind::work_failed);
  EXPECT_EQ(event_names(), (std::vector<std::string>{"eval_kb.start", "eval_kb.failed"}));
  const json summary = json::parse(read_file(run_dir() / "summary.json").value());
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_EQ(summary["message"], "eval-kb exit code 1: RuntimeError: CUDA out of memory");
}

TEST_F(EvalKb, BadInputIsCheckedBeforeAnythingIsMade) {
  auto expect_bad = [&](EvalKbOptions options, const std::string& part) {
    EXPECT_TRUE(
        testing::is_error(evaluate_kernelbench(options, judge_), ErrorKind::bad_input, part));
  };
  EvalKbOptions options = options_;
  options.judging.track = "fp8";
  expect_bad(options, "unknown track 'fp8'");
  options = options_;
  options.solution = (dir_.path() / "missing.py").string();
  expect_bad(options, "no such file");
  options = options_;
  options.task = dir_.path().string();
  expect_bad(options, "not a file");
  EXPECT_TRUE(judge_.requests.empty());
  EXPECT_FALSE(fs::exists(dir_.path() / "runs"));
}

// Plays the judge: writes `result` (unless empty) where --out says, and ends with `process`.
class FakeJudgeProcess final : public ProcessRunner {
 public:
  std::string result;
  ProcessResult process{0, 0, false, 1.0, "passed, 3.00x eager\n", ""};
  std::vector<ProcessSpec> specs;
  Result<ProcessResult> run(const ProcessSpec& spec) override {
    specs.push_back(spec);
    for (size_t i = 0; i + 1 < spec.argv.size(); ++i)
      if (spec.argv[i] == "--out" && !result.empty())
        STITCH_TRY(write_file_atomic(spec.argv[i + 1], result));
    return process;
  }
};

class PythonJudge : public ::testing::Test {
 protected:
  void SetUp() override {
    request_.task = dir_.path() / "task.py";
    request_.solution = dir_.path() / "solution.py";
    request_.out = dir_.path() / "eval_kb.json";
    request_.log = dir_.path() / "eval_kb.log";
    request_.judging.timeout_s = 60;
  }
  TempDir dir_{"eval_kb_judge"};
  EvalKbRequest request_;
  FakeJudgeProcess runner_;
  PythonKernelBenchJudge judge_{{"python3", "/harness"}, runner_};
};

TEST_F(PythonJudge, RunsTheModuleAndReadsWhatItWrote) {
  runner_.result = R"({"outcome": "wrong", "reason": "check set 0: output 0 differs"})";
  auto report = judge_.evaluate(request_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->outcome, Outcome::wrong);
  ASSERT_EQ(runner_.specs.size(), 1u);
  const ProcessSpec& spec = runner_.specs[0];
  EXPECT_EQ(spec.argv[0], "python3");
  EXPECT_EQ(spec.argv[2], "stitch_harness.eval_kb");
  EXPECT_EQ(spec.argv[3], request_.task.string());
  EXPECT_EQ(spec.env.at("PYTHONPATH").substr(0, 8), "/harness");
  EXPECT_EQ(spec.timeout_s, 60 + 1800) << "the reference and the baseline run inside it too";
  EXPECT_EQ(read_file(request_.log).value(), "passed, 3.00x eager\n");
}

TEST_F(PythonJudge, AJudgeThatFailsOrWritesNoResultIsWorkFailed) {
  runner_.process = {1, 0, false, 1.0, "", "a\nb\nc\nerror: eval-kb failed: RuntimeError: x\n"};
  runner_.result = R"({"outcome": "passed"})";
  auto failed = judge_.evaluate(request_);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().kind, ErrorKind::work_failed);
  EXPECT_EQ(failed.error().message,
            "eval-kb exit code 1: b | c | error: eval-kb failed: RuntimeError: x");

  fs::remove(request_.out);
  runner_.process = {0, 0, false, 1.0, "", ""};
  runner_.result = "";
  EXPECT_FALSE(judge_.evaluate(request_).ok()) << "no eval_kb.json";

  runner_.result = "{not json";
  failed = judge_.evaluate(request_);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().kind, ErrorKind::work_failed);
  EXPECT_NE(failed.error().message.find("not an eval-kb result"), std::string::npos);
}

}  // namespace
}  // namespace stitch::app
