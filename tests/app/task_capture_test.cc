// Capturing a task into a new run with a fake harness: the run holds task.py and the capture's
// events; a file that is not a task is a bad_input Error, any other failure work_failed, and both
// leave the failed status and capture.failed behind.
#include "app/task_capture.h"

#include <fstream>

#include <gtest/gtest.h>

#include "temp_dir.h"
#include "util/fs.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

class FakeHarness final : public harness::TorchHarness {
 public:
  explicit FakeHarness(std::string category) : category_(std::move(category)) {}
  harness::CaptureOutcome capture(const harness::CaptureRequest& request) override {
    harness::CaptureOutcome outcome;
    outcome.dir = request.out_dir;
    outcome.captured = category_.empty();
    outcome.category = harness::capture_category_from_name(category_);
    outcome.message = category_.empty() ? "" : "it failed: " + category_;
    // What the harness writes: the artefacts of a capture, its record in either case.
    if (outcome.captured) {
      fs::create_directories(request.out_dir / "reference");
      std::ofstream(request.out_dir / "reference" / "reference.json") << "{}";
      std::ofstream(request.out_dir / "weights.safetensors") << "weights";
      std::ofstream(request.out_dir / "graph.json") << "{}";
    }
    std::ofstream(request.out_dir / "capture.json") << "{\"status\": \"" << category_ << "\"}";
    seen_in_run.push_back(fs::exists(request.out_dir.parent_path() / "graph.json"));
    requests.push_back(request);
    return outcome;
  }
  std::vector<harness::CaptureOutcome> capture_batch(
      const std::vector<fs::path>&, const fs::path&, int, double,
      const std::function<void(const harness::CaptureOutcome&)>&) override {
    return {};
  }
  std::vector<harness::CaptureRequest> requests;
  std::vector<bool> seen_in_run;  // whether the run held a graph.json while capturing

 private:
  std::string category_;
};

TEST(TaskCapture, CapturesIntoANewRunWithTheTaskAndEvents) {
  TempDir dir("capture_ok");
  std::ofstream(dir.path() / "19_ReLU.py") << "class Model: pass\n";
  FakeHarness harness("");
  std::vector<std::string> lines;
  auto run = capture_task_into_new_run(dir.path() / "19_ReLU.py", dir.path() / "runs", harness,
                                       [&](const std::string& line) { lines.push_back(line); });
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->root().parent_path(), dir.path() / "runs");
  EXPECT_EQ(run->root().filename().string().rfind("19_ReLU-", 0), 0u);
  EXPECT_TRUE(fs::exists(run->path("task.py")));
  EXPECT_TRUE(fs::exists(run->path("graph.json")));
  ASSERT_EQ(harness.requests.size(), 1u);
  EXPECT_FALSE(harness.requests[0].reference);  // graph and weights only
  // Written aside, moved in once complete.
  EXPECT_EQ(harness.requests[0].out_dir, run->path(std::string(kCapturePartialDir)));
  EXPECT_FALSE(fs::exists(run->path(std::string(kCapturePartialDir))));
  EXPECT_TRUE(fs::exists(run->path("weights.safetensors")));
  EXPECT_TRUE(fs::exists(run->path("reference/reference.json")));
  EXPECT_TRUE(capture_complete(run->root()));
  auto events = read_file(run->path("events.jsonl"));
  ASSERT_TRUE(events.ok());
  EXPECT_NE(events->find("capture.done"), std::string::npos);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("capturing ", 0), 0u);
}

TEST(TaskCapture, NotATaskIsBadInputAndOtherFailuresAreNot) {
  for (const auto& [category, kind] :
       {std::pair{std::string("not_a_task"), ErrorKind::bad_input},
        std::pair{std::string("export_failed"), ErrorKind::work_failed}}) {
    TempDir dir("capture_" + category);
    std::ofstream(dir.path() / "x.py") << "x = 1\n";
    FakeHarness harness(category);
    auto run = capture_task_into_new_run(dir.path() / "x.py", dir.path() / "runs", harness, {});
    ASSERT_FALSE(run.ok());
    EXPECT_EQ(run.error().kind, kind) << category;
    EXPECT_EQ(run.error().message,
              "capturing " + (dir.path() / "x.py").string() + ": it failed: " + category);
    // The failed run directory says why.
    std::vector<fs::path> runs;
    for (const auto& entry : fs::directory_iterator(dir.path() / "runs"))
      runs.push_back(entry.path());
    ASSERT_EQ(runs.size(), 1u);
    auto summary = read_file(runs[0] / "summary.json");
    ASSERT_TRUE(summary.ok());
    EXPECT_NE(summary->find("\"failed\""), std::string::npos);
    EXPECT_NE(summary->find("\"category\": \"" + category + "\""), std::string::npos) << *summary;
    EXPECT_NE(read_file(runs[0] / "events.jsonl")->find("capture.failed"), std::string::npos);
    // Its record moved in, no artefact.
    EXPECT_TRUE(fs::exists(runs[0] / "capture.json"));
    EXPECT_FALSE(capture_complete(runs[0]));
    EXPECT_FALSE(fs::exists(runs[0] / std::string(kCapturePartialDir)));
  }
}

// What an orchestrator killed during a capture leaves (files in capture.partial, a reference/
// moved in before graph.json) is replaced by the next capture, which the run holds only once it
// is complete.
TEST(TaskCapture, ACaptureAfterAnInterruptedOneReplacesWhatItLeft) {
  TempDir dir("capture_again");
  std::ofstream(dir.path() / "t.py") << "class Model: pass\n";
  FakeHarness failing("export_failed");
  ASSERT_FALSE(capture_task_into_new_run(dir.path() / "t.py", dir.path() / "runs", failing, {}).ok());
  const fs::path root = fs::directory_iterator(dir.path() / "runs")->path();
  fs::create_directories(root / std::string(kCapturePartialDir));
  std::ofstream(root / std::string(kCapturePartialDir) / "graph.json") << "{\"torn";
  fs::create_directories(root / "reference");
  std::ofstream(root / "reference" / "stale.json") << "{}";
  EXPECT_FALSE(capture_complete(root));

  auto run = run::RunDir::open(root);
  ASSERT_TRUE(run.ok());
  FakeHarness harness("");
  ASSERT_TRUE(capture_run_task(*run, run->path("task.py"), harness, {}).ok());
  ASSERT_EQ(harness.seen_in_run.size(), 1u);
  EXPECT_FALSE(harness.seen_in_run[0]);  // no graph.json in the run while capturing
  EXPECT_EQ(*read_file(root / "graph.json"), "{}");
  EXPECT_FALSE(fs::exists(root / "reference" / "stale.json"));
  EXPECT_TRUE(fs::exists(root / "reference" / "reference.json"));
  EXPECT_FALSE(fs::exists(root / std::string(kCapturePartialDir)));
}

}  // namespace
}  // namespace stitch::app
