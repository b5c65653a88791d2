// `generate` as a library (also bench's prepare step) with a fake compiler: a covered graph gives
// program.cu, plan.json and a compiled program; a build failure is data naming the diagnostics;
// a refused plan is work_failed; a task file goes through the capture it is given.
#include "app/generate.h"

#include <fstream>

#include <gtest/gtest.h>

#include "temp_dir.h"
#include "util/fs.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const fs::path kPlanData = fs::path(STITCH_TEST_DATA_DIR) / "plan" / "data";

class FakeCompiler final : public Compiler {
 public:
  Result<BuildResult> build(const BuildRequest& request) override {
    requests.push_back(request);
    BuildResult result;
    result.ok = compiles;
    if (compiles) {
      result.library_path = request.output_path;
      std::ofstream(request.output_path) << "ELF";
    } else {
      result.failure = "nvcc: exit code 2";
      result.diagnostics.push_back({"program.cu", 12, "error", "identifier undefined", ""});
    }
    return result;
  }
  Result<std::string> identity() override { return std::string("fake nvcc"); }
  std::vector<fs::path> include_dirs() const override { return {}; }
  bool compiles = true;
  std::vector<BuildRequest> requests;
};

TaskCapture no_capture() {
  return [](const fs::path&) -> Result<run::RunDir> { return make_error("no capture here"); };
}

TEST(Generate, CoveredGraphIsPlannedEmittedAndCompiled) {
  TempDir dir("generate_ok");
  GenerateOptions options;
  options.target = (kPlanData / "plan_gemm_bias_relu.graph.json").string();
  options.out = (dir.path() / "out").string();
  options.arch = "sm_90";
  FakeCompiler compiler;
  auto generated = generate_program(options, no_capture(), compiler);
  ASSERT_TRUE(generated.ok()) << generated.error().message;
  EXPECT_EQ(generated->source, dir.path() / "out" / "program.cu");
  EXPECT_TRUE(fs::exists(dir.path() / "out" / "plan.json"));
  EXPECT_GE(generated->subtasks, 1u);
  EXPECT_NE(std::find(generated->libraries.begin(), generated->libraries.end(), "cublasLt"),
            generated->libraries.end());
  ASSERT_TRUE(generated->compiled);
  ASSERT_TRUE(generated->compiled->ok()) << generated->compiled->error().message;
  EXPECT_EQ((*generated->compiled)->library, dir.path() / "out" / "program.so");
  ASSERT_EQ(compiler.requests.size(), 1u);  // no build cache: one build into out/
  EXPECT_EQ(compiler.requests[0].arch, "sm_90");
}

TEST(Generate, ABuildFailureIsDataWithTheDiagnostics) {
  TempDir dir("generate_broken");
  GenerateOptions options;
  options.target = (kPlanData / "plan_gemm_bias_relu.graph.json").string();
  options.out = (dir.path() / "out").string();
  FakeCompiler compiler;
  compiler.compiles = false;
  auto generated = generate_program(options, no_capture(), compiler);
  ASSERT_TRUE(generated.ok()) << generated.error().message;
  ASSERT_TRUE(generated->compiled);
  ASSERT_FALSE(generated->compiled->ok());
  EXPECT_EQ(generated->compiled->error().message,
            "the generated program does not compile (nvcc: exit code 2):\n"
            "  program.cu:12: identifier undefined");
  EXPECT_TRUE(fs::exists(dir.path() / "out" / "program.cu"));  // the source is kept to look at
}

TEST(Generate, RefusedPlanIsWorkFailedAndWritesNoProgram) {
  TempDir dir("generate_refused");
  GenerateOptions options;
  options.target = (kPlanData / "plan_scan_refused.graph.json").string();
  options.out = (dir.path() / "out").string();
  FakeCompiler compiler;
  auto generated = generate_program(options, no_capture(), compiler);
  ASSERT_FALSE(generated.ok());
  EXPECT_EQ(generated.error().kind, ErrorKind::work_failed);
  EXPECT_NE(generated.error().message.find("logcumsumexp"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir.path() / "out" / "program.cu"));
  EXPECT_TRUE(compiler.requests.empty());
}

TEST(Generate, TaskFileIsCapturedAndGeneratedIntoItsRun) {
  TempDir dir("generate_task");
  std::ofstream(dir.path() / "t.py") << "class Model: pass\n";
  TaskCapture capture = [&](const fs::path&) -> Result<run::RunDir> {
    STITCH_ASSIGN_OR_RETURN(run::RunDir run, run::RunDir::create(dir.path() / "runs", "t"));
    STITCH_ASSIGN_OR_RETURN(std::string graph,
                            read_file(kPlanData / "plan_gemm_bias_relu.graph.json"));
    STITCH_TRY(run.write_text("graph.json", graph));
    return run;
  };
  GenerateOptions options;
  options.target = (dir.path() / "t.py").string();
  options.compile = false;
  FakeCompiler compiler;
  auto generated = generate_program(options, capture, compiler);
  ASSERT_TRUE(generated.ok()) << generated.error().message;
  EXPECT_EQ(generated->source.parent_path().filename(), "generated");
  EXPECT_EQ(generated->source.parent_path().parent_path().parent_path(), dir.path() / "runs");
  EXPECT_FALSE(generated->compiled);
}

}  // namespace
}  // namespace stitch::app
