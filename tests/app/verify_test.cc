// `verify` over the Verifier's fakes (tests/verify/verifier_fakes.h) and a fake capture: the
// program is copied into a new attempt with its local headers and the libraries its includes need,
// every step is logged in order before verify.done, and the run's status follows the verdict; a
// judge that cannot start fails the run without an Error; bad input is bad_input before anything is
// made.
#include "app/verify.h"

#include <gtest/gtest.h>

#include "expect_error.h"
#include "run/events.h"
#include "temp_dir.h"
#include "util/fs.h"
#include "verify/verifier_fakes.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;
using namespace verify_fakes;

class VerifyProgram : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path program = dir_.path() / "prog";
    ASSERT_TRUE(write_file_atomic(program / "prog.cu",
                                  "#include \"local.h\"\n#include \"shared.h\"\n"
                                  "extern \"C\" int stitch_abi_version(void) { return 1; }\n")
                    .ok());
    ASSERT_TRUE(write_file_atomic(program / "local.h", "#include <cublasLt.h>\n").ok());
    ASSERT_TRUE(write_file_atomic(dir_.path() / "include" / "shared.h", "// shared\n").ok());
    ASSERT_TRUE(write_file_atomic(dir_.path() / "t.py", "class Model: pass\n").ok());
    options_.target = (dir_.path() / "t.py").string();
    options_.programs = {(program / "prog.cu").string()};
    options_.include_dirs = {(dir_.path() / "include").string()};
    options_.runs_dir = (dir_.path() / "runs").string();
    options_.verify.on_step = [this](const VerifyStep& step) { steps_seen_.push_back(step.name); };
    runner_.runner_json = runner_json();
    judge_.comparison = passing_comparison();
  }
  void TearDown() override { EXPECT_FALSE(judge_.running) << "the judge was not stopped"; }

  VerifyTools tools(std::optional<GpuInfo> gpu = GpuInfo{0, "NVIDIA H200", 9, 0, 132, 60 << 20,
                                                         int64_t{141} << 30}) {
    TaskCapture capture = [this](const fs::path&) -> Result<run::RunDir> {
      ++captures_;
      STITCH_ASSIGN_OR_RETURN(run::RunDir run, run::RunDir::create(options_.runs_dir, "t"));
      STITCH_TRY(run.write_text("graph.json", "{}"));
      return run;
    };
    return {capture, fakes_.deps(), gpu, "/stitch-runner"};
  }
  std::vector<json> events(const fs::path& attempt) const {
    return run::read_events(attempt.parent_path().parent_path() / "events.jsonl").value();
  }
  json summary(const fs::path& attempt) const {
    return json::parse(read_file(attempt.parent_path().parent_path() / "summary.json").value());
  }

  TempDir dir_{"verify"};
  VerifyProgramOptions options_;
  std::vector<std::string> steps_seen_;
  int captures_ = 0;
  VerifierFakes fakes_;
  FakeCompiler& compiler_ = fakes_.compiler;
  FakeRunner& runner_ = fakes_.runner;
  FakeJudge& judge_ = fakes_.judge;
};

TEST_F(VerifyProgram, CopiesTheProgramLogsEveryStepAndRecordsTheVerdict) {
  auto verified = verify_program(options_, tools());
  ASSERT_TRUE(verified.ok()) << verified.error().message;
  EXPECT_TRUE(verified->report.passed()) << verified->report.reason;
  const fs::path attempt = verified->attempt;
  EXPECT_EQ(attempt.filename(), "01");
  EXPECT_EQ(captures_, 1);

  // The source and the header beside it are copied; the -I header is checked where it is.
  ASSERT_EQ(compiler_.requests.size(), 1u);
  const BuildRequest& build = compiler_.requests[0];
  EXPECT_EQ(build.sources, std::vector<fs::path>{attempt / "src" / "prog.cu"});
  EXPECT_TRUE(fs::exists(attempt / "src" / "local.h"));
  EXPECT_FALSE(fs::exists(attempt / "src" / "shared.h"));
  EXPECT_EQ(build.libraries, std::vector<std::string>{"cublasLt"}) << "from local.h's include";
  ASSERT_EQ(runner_.invocations.size(), 1u);
  EXPECT_EQ(runner_.invocations[0].runner, "/stitch-runner");

  // events.jsonl: the start, each step as the Verifier reported it, in order, then the verdict.
  std::vector<std::string> logged;
  const std::vector<json> log = events(attempt);
  ASSERT_GE(log.size(), 3u);
  EXPECT_EQ(log.front()["event"], "verify.start");
  EXPECT_EQ(log.front()["gpu"], "NVIDIA H200");
  for (const auto& event : log)
    if (event["event"] == "verify.step") logged.push_back(event["step"]);
  std::vector<std::string> reported;
  for (const auto& step : verified->report.steps)
    reported.push_back(step.name);
  EXPECT_EQ(logged, reported);
  EXPECT_EQ(steps_seen_, reported);
  EXPECT_EQ(logged.front(), "build");
  EXPECT_EQ(logged.back(), "judge_stop");
  EXPECT_EQ(log.back()["event"], "verify.done");
  EXPECT_EQ(log.back()["outcome"], "passed");
  EXPECT_EQ(summary(attempt)["status"], "complete");
  EXPECT_EQ(summary(attempt)["outcome"], "passed");
  EXPECT_TRUE(fs::exists(attempt / "verify.json"));
  EXPECT_TRUE(fs::exists(attempt / "feedback.json"));
}

// Issue 13: with the checkout reached through a symbolic link, the project's kernels/ headers were
// statically checked as candidate code and a 3xTF32 program was reported hacked.
TEST_F(VerifyProgram, ProjectHeadersThroughASymbolicLinkAreNotCheckedAsCandidateCode) {
  const fs::path project = dir_.path() / "project";
  ASSERT_TRUE(write_file_atomic(project / "kernels" / "gemm.cuh",
                                "auto c = CUBLAS_COMPUTE_32F_FAST_TF32;\n")
                  .ok());
  const fs::path link = dir_.path() / "checkout-link";
  fs::create_directory_symlink(project, link);
  compiler_.search_dirs = {link};  // project_header_dirs() defaults to these
  ASSERT_TRUE(write_file_atomic(dir_.path() / "prog" / "prog.cu",
                                "#include \"kernels/gemm.cuh\"\n"
                                "extern \"C\" int stitch_abi_version(void) { return 1; }\n")
                  .ok());
  auto verified = verify_program(options_, tools());
  ASSERT_TRUE(verified.ok()) << verified.error().message;
  EXPECT_TRUE(verified->report.passed()) << verified->report.reason;
  for (const auto& finding : verified->report.findings)
    EXPECT_NE(finding.finding.kind, HackKind::precision_downgrade) << finding.finding.detail;
}

TEST_F(VerifyProgram, AJudgeThatCannotStartFailsTheRunWithoutAnError) {
  judge_.start_fails = true;
  auto verified = verify_program(options_, tools());
  ASSERT_TRUE(verified.ok()) << verified.error().message;
  EXPECT_EQ(verified->report.state, VerifyState::infrastructure_error);
  EXPECT_FALSE(verified->report.outcome);
  EXPECT_TRUE(runner_.invocations.empty());
  const json done = events(verified->attempt).back();
  EXPECT_EQ(done["state"], "infrastructure_error");
  EXPECT_TRUE(done["outcome"].is_null());
  EXPECT_EQ(summary(verified->attempt)["status"], "failed");
  EXPECT_EQ(verified->feedback.state, VerifyState::infrastructure_error);
}

TEST_F(VerifyProgram, WithoutAGpuItStopsAfterTheStaticChecks) {
  auto verified = verify_program(options_, tools(std::nullopt));
  ASSERT_TRUE(verified.ok()) << verified.error().message;
  EXPECT_EQ(verified->report.state, VerifyState::no_gpu);
  EXPECT_EQ(judge_.starts, 0);
  EXPECT_TRUE(runner_.invocations.empty());
  EXPECT_EQ(compiler_.requests.size(), 1u) << "still built";
  EXPECT_EQ(summary(verified->attempt)["status"], "complete");
}

TEST_F(VerifyProgram, BadInputIsCheckedBeforeAnythingIsMade) {
  auto expect_bad = [&](VerifyProgramOptions options, const std::string& part) {
    EXPECT_TRUE(testing::is_error(verify_program(options, tools()), ErrorKind::bad_input, part));
  };
  VerifyProgramOptions options = options_;
  options.programs = {(dir_.path() / "t.py").string()};
  expect_bad(options, "not a CUDA source");
  options = options_;
  ASSERT_TRUE(write_file_atomic(dir_.path() / "other" / "prog.cu", "// same name\n").ok());
  options.programs.push_back((dir_.path() / "other" / "prog.cu").string());
  expect_bad(options, "two program files have the same name");
  options = options_;
  options.track = "fp8";
  expect_bad(options, "unknown track 'fp8'");
  options = options_;
  options.target = (dir_.path() / "missing.py").string();
  expect_bad(options, "missing.py");
  EXPECT_EQ(captures_, 0);
  EXPECT_FALSE(fs::exists(options_.runs_dir));
  EXPECT_TRUE(compiler_.requests.empty());
}

}  // namespace
}  // namespace stitch::app
