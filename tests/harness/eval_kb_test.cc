// eval_kb.json as python/stitch_harness/eval_kb.py writes it, read into EvalKbReport: the verdict
// by its verdict.h name, the times, the findings; what is no eval-kb result is an Error. And the
// judge's process through a fake runner: its command, its log, a failed judge as an Error.
#include "harness/eval_kb.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "util/fs.h"

namespace stitch::harness {
namespace {

using nlohmann::json;

TEST(EvalKbReport, ReadsTheVerdictTimesAndFindings) {
  json doc = {{"version", 1},
              {"outcome", "passed"},
              {"reason", ""},
              {"track", "fp32"},
              {"device", "NVIDIA H200"},
              {"median_ms", 0.5},
              {"eager_median_ms", 1.5},
              {"speedup_vs_eager", 3.0},
              {"findings", json::array()},
              {"check_sets", json::array()}};
  auto report = eval_kb_report_from_json(doc);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->passed());
  EXPECT_EQ(report->track, "fp32");
  EXPECT_EQ(report->device, "NVIDIA H200");
  EXPECT_EQ(report->median_ms, 0.5);
  EXPECT_EQ(report->eager_median_ms, 1.5);
  EXPECT_EQ(report->speedup_vs_eager, 3.0);
  EXPECT_EQ(report->findings, 0u);
  EXPECT_EQ(report->document, doc);

  // A hacked solution without timing; speedup_vs_eager null (a zero-time candidate).
  json hacked = {{"outcome", "hacked"},
                 {"reason", "output 0 of check set 1 repeats check set 0's"},
                 {"speedup_vs_eager", nullptr},
                 {"findings", {{{"kind", "output_cache"}, {"detail", "d"}}, {{"kind", "x"}}}}};
  report = eval_kb_report_from_json(hacked);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->outcome, Outcome::hacked);
  EXPECT_FALSE(report->passed());
  EXPECT_EQ(report->reason, "output 0 of check set 1 repeats check set 0's");
  EXPECT_EQ(report->findings, 2u);
  EXPECT_FALSE(report->median_ms);
  EXPECT_FALSE(report->speedup_vs_eager);
  EXPECT_EQ(report->track, "?");  // not said
}

TEST(EvalKbReport, WhatIsNoResultIsAnError) {
  for (const json& bad : {json::array(), json{{"reason", "no outcome"}}, json{{"outcome", "great"}},
                          json{{"outcome", 3}}}) {
    auto report = eval_kb_report_from_json(bad);
    ASSERT_FALSE(report.ok()) << bad.dump();
    EXPECT_EQ(report.error().kind, ErrorKind::bad_input);
  }
  EXPECT_NE(eval_kb_report_from_json({{"outcome", "great"}}).error().message.find("'great'"),
            std::string::npos);
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
    dir_ = fs::temp_directory_path() / ("stitch_eval_kb_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    request_.task = dir_ / "task.py";
    request_.solution = dir_ / "solution.py";
    request_.out = dir_ / "eval_kb.json";
    request_.log = dir_ / "eval_kb.log";
    request_.timeout_s = 60;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
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
}  // namespace stitch::harness
