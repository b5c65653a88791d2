// The one target resolver: task files are captured into a new run, run directories and graph.json
// files resolve to their graph, and every target a use does not take is bad_input with the message
// that use has always printed.
#include "app/target.h"

#include <fstream>

#include <gtest/gtest.h>

#include "app/task_capture.h"
#include "temp_dir.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

void touch(const fs::path& path, const std::string& text = "{}") {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

class TargetTest : public ::testing::Test {
 protected:
  TargetTest() : dir_("target") {}
  // A capture that makes a run directory holding graph.json, counting its calls.
  TaskCapture fake_capture() {
    return [this](const fs::path& task) -> Result<run::RunDir> {
      ++captures_;
      STITCH_ASSIGN_OR_RETURN(run::RunDir run, run::RunDir::create(dir_.path() / "runs", "t"));
      STITCH_TRY(run.write_text("graph.json", "{}"));
      captured_ = task;
      return run;
    };
  }
  TaskCapture no_capture() {
    return [](const fs::path&) -> Result<run::RunDir> {
      ADD_FAILURE() << "nothing should be captured";
      return make_error("no capture");
    };
  }
  TempDir dir_;
  int captures_ = 0;
  fs::path captured_;
};

TargetRules plan_rules() {
  TargetRules rules;
  rules.graph_file = true;
  return rules;
}

TEST_F(TargetTest, TaskFileIsCapturedIntoANewRun) {
  touch(dir_.path() / "task.py", "class Model: pass\n");
  auto resolved = resolve_target(dir_.path() / "task.py", TargetRules{}, fake_capture());
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->kind, TargetKind::task_file);
  EXPECT_EQ(captures_, 1);
  EXPECT_EQ(captured_, dir_.path() / "task.py");
  ASSERT_TRUE(resolved->run);
  EXPECT_TRUE(resolved->created_run);
  EXPECT_EQ(resolved->graph, resolved->run->path("graph.json"));
}

TEST_F(TargetTest, RunDirectoryResolvesToItsGraphWithoutCapturing) {
  auto run = run::RunDir::create(dir_.path(), "captured");
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(run->write_text("graph.json", "{}").ok());
  auto resolved = resolve_target(run->root(), plan_rules(), no_capture());
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->kind, TargetKind::run_dir);
  EXPECT_EQ(resolved->graph, run->root() / "graph.json");
  ASSERT_TRUE(resolved->run);  // a run directory: opened, to log into
  EXPECT_FALSE(resolved->created_run);
}

TEST_F(TargetTest, BareCaptureIsAdoptedOnlyWhenTheUseAsks) {
  touch(dir_.path() / "bare" / "graph.json");
  auto opened = resolve_target(dir_.path() / "bare", plan_rules(), no_capture());
  ASSERT_TRUE(opened.ok());
  EXPECT_FALSE(opened->run);  // plan leaves a bare capture as it is
  EXPECT_FALSE(fs::exists(dir_.path() / "bare" / "summary.json"));
  TargetRules verify_rules;
  verify_rules.adopt_bare_capture = true;
  auto adopted = resolve_target(dir_.path() / "bare", verify_rules, no_capture());
  ASSERT_TRUE(adopted.ok()) << adopted.error().message;
  EXPECT_TRUE(adopted->run);
  EXPECT_TRUE(fs::exists(dir_.path() / "bare" / "summary.json"));
}

TEST_F(TargetTest, GraphFileOnlyWhereAccepted) {
  touch(dir_.path() / "g.json");
  auto resolved = resolve_target(dir_.path() / "g.json", plan_rules(), no_capture());
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(resolved->kind, TargetKind::graph_file);
  EXPECT_EQ(resolved->graph, dir_.path() / "g.json");
  EXPECT_FALSE(resolved->run);
  auto refused = classify_target(dir_.path() / "g.json", TargetRules{});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(refused.error().message,
            (dir_.path() / "g.json").string() + ": not a task (.py) or a run directory");
}

TEST_F(TargetTest, BadTargetsAreBadInputWithEachUsesMessage) {
  const fs::path missing = dir_.path() / "none";
  const fs::path empty_dir = dir_.path() / "empty";
  fs::create_directories(empty_dir);
  struct Case {
    fs::path target;
    TargetRules rules;
    std::string message;
  };
  TargetRules run_rules;
  run_rules.run_dir = false;
  TargetRules reference_rules;
  reference_rules.needed_file = "task.py";
  const std::vector<Case> cases = {
      {missing, TargetRules{}, missing.string() + ": no such file or directory"},
      {missing, plan_rules(),
       missing.string() + ": not a task (.py), a run directory or a graph.json"},
      {missing, run_rules, missing.string() + ": not a task file (.py)"},
      {empty_dir, run_rules, empty_dir.string() + ": not a task file (.py)"},
      {empty_dir, plan_rules(),
       empty_dir.string() + ": no graph.json here (not a captured run directory)"},
      {empty_dir, TargetRules{},
       empty_dir.string() + ": not a run directory (no graph.json); give a task .py or a run "
                            "directory made by `stitchcuda capture`"},
      {empty_dir, reference_rules,
       empty_dir.string() + ": not a run directory (no task.py); give a task .py or a run "
                            "directory made by `stitchcuda capture`"},
  };
  for (const auto& c : cases) {
    auto resolved = resolve_target(c.target, c.rules, no_capture());
    ASSERT_FALSE(resolved.ok()) << c.target;
    EXPECT_EQ(resolved.error().kind, ErrorKind::bad_input) << c.message;
    EXPECT_EQ(resolved.error().message, c.message);
  }
}

TEST_F(TargetTest, ACaptureFailureKeepsItsKind) {
  touch(dir_.path() / "task.py");
  TaskCapture failing = [](const fs::path&) -> Result<run::RunDir> {
    return make_error(ErrorKind::bad_input, "capturing task.py: not a KernelBench task");
  };
  auto resolved = resolve_target(dir_.path() / "task.py", TargetRules{}, failing);
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.error().kind, ErrorKind::bad_input);
}

}  // namespace
}  // namespace stitch::app
