// `capture`: the Python harness on one task (or every task of some folders), each graph it writes
// loaded and verified by the C++ IR (a graph the IR rejects is a failed capture), recorded in a run
// directory's events and summary.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "app/progress.h"
#include "harness/harness.h"
#include "ir/ir.h"
#include "util/result.h"

namespace stitch::app {

struct CaptureOptions {
  std::vector<std::string> paths;  // one task file; with capture_folders, folders of them
  std::string runs_dir = "runs";
  bool inference = false;
  int seed = 42;
  int jobs = 2;
  double timeout_s = 600;
  ProgressSink progress;
};

struct CapturedTask {
  ir::Graph graph;
  std::filesystem::path run_dir;
  double seconds = 0;
};

// One task into a new run directory. A file that is not a task is bad_input; a failed capture a
// work_failed Error naming the task and its capture.json.
Result<CapturedTask> capture_task(const CaptureOptions& options,
                                  harness::TorchHarness& torch_harness);

struct FolderTally {
  std::string folder;
  int captured = 0;
  std::vector<harness::CaptureOutcome> failures;
};

struct CapturedFolders {
  std::vector<FolderTally> tallies;
  std::filesystem::path run_dir;  // captures.json: one record per task
  int failed() const;
};

// What capture_folders says of each task as it finishes: its folder, outcome, and how many of the
// total are done.
using TaskCaptured = std::function<void(const std::string& folder, const harness::CaptureOutcome&,
                                        size_t done, size_t total)>;

// Every task (.py) of the folders, in KernelBench order, `jobs` at a time; `on_task` sees each
// outcome as it finishes. A path that is not a folder is bad_input.
Result<CapturedFolders> capture_folders(
    const CaptureOptions& options, harness::TorchHarness& torch_harness,
    const TaskCaptured& on_task);

}  // namespace stitch::app
