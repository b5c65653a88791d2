// `capture` (capture.h).
#include "app/capture.h"

#include <algorithm>

#include <fmt/format.h>

#include "app/task_capture.h"
#include "run/run_dir.h"
#include "util/fs.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;

// Task files of a folder in KernelBench order: by the leading number, then by name.
std::vector<fs::path> list_tasks(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".py") files.push_back(entry.path());
  auto number = [](const fs::path& path) {
    const std::string stem = path.stem().string();
    size_t digits = stem.find_first_not_of("0123456789");
    return digits == 0 ? -1 : std::stoi(stem.substr(0, digits));
  };
  std::sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
    return std::pair(number(a), a.filename()) < std::pair(number(b), b.filename());
  });
  return files;
}

// Loads and verifies what the harness wrote; a graph the C++ side rejects is a failed capture.
void check_with_ir(harness::CaptureOutcome& outcome) {
  if (!outcome.captured) return;
  auto graph = ir::load_graph((outcome.dir / "graph.json").string());
  if (!graph.ok()) {
    outcome.captured = false;
    outcome.category = harness::CaptureCategory::ir_rejected;
    outcome.message = graph.error().message;
  }
}

harness::CaptureRequest capture_request(const CaptureOptions& options, const fs::path& task,
                                        const fs::path& out_dir) {
  harness::CaptureRequest request;
  request.task_file = task;
  request.out_dir = out_dir;
  request.inference = options.inference;
  request.seed = options.seed;
  request.timeout_s = options.timeout_s;
  return request;
}

nlohmann::json capture_record(const std::string& folder, const harness::CaptureOutcome& outcome) {
  return {{"folder", folder},
          {"task", outcome.task},
          {"captured", outcome.captured},
          {"category", harness::capture_category_name(outcome.category)},
          {"message", outcome.message},
          {"seconds", outcome.seconds},
          {"nodes", outcome.nodes},
          {"dir", outcome.dir.string()}};
}

std::string folder_name(const std::string& path) {
  std::string folder = fs::path(path).lexically_normal().filename().string();
  if (folder.empty()) folder = fs::path(path).lexically_normal().parent_path().filename().string();
  return folder;
}

}  // namespace

int CapturedFolders::failed() const {
  int failed = 0;
  for (const auto& tally : tallies)
    failed += static_cast<int>(tally.failures.size());
  return failed;
}

Result<CapturedTask> capture_task(const CaptureOptions& options,
                                  harness::TorchHarness& torch_harness) {
  const fs::path task_file = options.paths.front();
  if (!fs::is_regular_file(task_file))
    return make_error(ErrorKind::bad_input, "{}: no such file", task_file.string());
  STITCH_ASSIGN_OR_RETURN(run::RunDir run,
                          run::RunDir::create(options.runs_dir, run::task_name_from_path(task_file)));
  if (auto source = read_file(task_file); source.ok()) (void)run.write_text("task.py", *source);
  (void)run.events().append("capture.start", {{"task_file", fs::absolute(task_file).string()}});
  say(options.progress, fmt::format("capturing {} → {}", task_file.string(), run.root().string()));
  harness::CaptureOutcome outcome =
      capture_into_run(torch_harness, capture_request(options, task_file, run.root()));
  check_with_ir(outcome);
  if (!outcome.captured) {
    record_capture_failure(run, outcome);
    Error error = capture_error(task_file, outcome);
    return Error{fmt::format("{}: {}\n  details: {}", task_file.string(), outcome.message,
                             (run.root() / "capture.json").string()),
                 error.kind};
  }
  STITCH_ASSIGN_OR_RETURN(ir::Graph graph, ir::load_graph((run.root() / "graph.json").string()));
  (void)run.events().append("capture.done",
                            {{"nodes", outcome.nodes}, {"seconds", outcome.seconds}});
  (void)run.set_status(run::RunStatus::complete,
                       {{"stage", "capture"}, {"nodes", graph.nodes.size()}});
  return CapturedTask{std::move(graph), run.root(), outcome.seconds};
}

Result<CapturedFolders> capture_folders(
    const CaptureOptions& options, harness::TorchHarness& torch_harness,
    const TaskCaptured& on_task) {
  for (const auto& path : options.paths)
    if (!fs::is_directory(path))
      return make_error(ErrorKind::bad_input,
                        "{}: not a directory (capture --all takes folders of tasks)", path);
  STITCH_ASSIGN_OR_RETURN(run::RunDir run, run::RunDir::create(options.runs_dir, "capture"));
  size_t total = 0;
  for (const auto& path : options.paths)
    total += list_tasks(path).size();
  say(options.progress, fmt::format("capturing {} tasks from {} folder(s) → {}", total,
                                    options.paths.size(), run.root().string()));
  CapturedFolders captured;
  captured.run_dir = run.root();
  nlohmann::json records = nlohmann::json::array();
  size_t done = 0;
  for (const auto& path : options.paths) {
    FolderTally tally{folder_name(path), 0, {}};
    auto report = [&](const harness::CaptureOutcome& reported) {
      harness::CaptureOutcome outcome = reported;
      check_with_ir(outcome);
      ++done;
      if (on_task) on_task(tally.folder, outcome, done, total);
      nlohmann::json record = capture_record(tally.folder, outcome);
      (void)run.events().append("capture.task", record);
      records.push_back(std::move(record));
      if (outcome.captured)
        ++tally.captured;
      else
        tally.failures.push_back(outcome);
    };
    torch_harness.capture_batch(list_tasks(path), run.root() / tally.folder, options.jobs,
                                options.timeout_s, report);
    captured.tallies.push_back(std::move(tally));
  }
  (void)run.write_json("captures.json", records);
  (void)run.set_status(run::RunStatus::complete, {{"stage", "capture-all"},
                                                  {"tasks", total},
                                                  {"failed", captured.failed()}});
  return captured;
}

}  // namespace stitch::app
