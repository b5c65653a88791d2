// `stitchcuda capture`: run the Python harness on one task (or every task of some folders), load
// the graph it wrote into the C++ IR, and print it.
#include <algorithm>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "cli/commands.h"
#include "harness/harness.h"
#include "ir/ir.h"
#include "ir/print.h"
#include "run/run_dir.h"
#include "util/fs.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

struct CaptureOptions {
  std::vector<std::string> paths;
  bool all = false;
  std::string runs_dir = "runs";
  bool inference = false;
  int seed = 42;
  int jobs = 2;
  double timeout_s = 600;
};

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
    outcome.category = "ir_rejected";
    outcome.message = graph.error().message;
  }
}

int capture_one(const CaptureOptions& options, harness::TorchHarness& torch_harness) {
  fs::path task_file = options.paths.front();
  if (!fs::is_regular_file(task_file)) {
    fmt::print(stderr, "error: {}: no such file\n", task_file.string());
    return kExitBadInput;
  }
  auto run = run::RunDir::create(options.runs_dir, run::task_name_from_path(task_file));
  if (!run.ok()) {
    fmt::print(stderr, "error: {}\n", run.error().message);
    return kExitFailure;
  }
  auto source = read_file(task_file);
  if (source.ok()) (void)run->write_text("task.py", *source);
  (void)run->events().append("capture.start", {{"task_file", fs::absolute(task_file).string()}});
  fmt::print(stderr, "capturing {} → {}\n", task_file.string(), run->root().string());

  harness::CaptureRequest request;
  request.task_file = task_file;
  request.out_dir = run->root();
  request.inference = options.inference;
  request.seed = options.seed;
  request.timeout_s = options.timeout_s;
  harness::CaptureOutcome outcome = torch_harness.capture(request);
  check_with_ir(outcome);

  if (!outcome.captured) {
    (void)run->events().append("capture.failed",
                               {{"category", outcome.category}, {"message", outcome.message}});
    (void)run->set_status(
        run::RunStatus::failed,
        {{"stage", "capture"}, {"category", outcome.category}, {"message", outcome.message}});
    fmt::print(stderr, "error: {}: {}\n  details: {}\n", task_file.string(), outcome.message,
               (run->root() / "capture.json").string());
    return outcome.category == "not_a_task" ? kExitBadInput : kExitFailure;
  }
  auto graph = ir::load_graph((run->root() / "graph.json").string());
  fmt::print("{}", ir::format_node_table(*graph));
  fmt::print("\n{}\n", ir::format_graph_summary(*graph));
  (void)run->events().append("capture.done",
                             {{"nodes", outcome.nodes}, {"seconds", outcome.seconds}});
  (void)run->set_status(run::RunStatus::complete,
                        {{"stage", "capture"}, {"nodes", graph->nodes.size()}});
  fmt::print(stderr, "captured {} nodes in {:.1f} s → {}\n", graph->nodes.size(), outcome.seconds,
             (run->root() / "graph.json").string());
  return kExitOk;
}

int capture_all(const CaptureOptions& options, harness::TorchHarness& torch_harness) {
  for (const auto& path : options.paths) {
    if (!fs::is_directory(path)) {
      fmt::print(stderr, "error: {}: not a directory (capture --all takes folders of tasks)\n",
                 path);
      return kExitBadInput;
    }
  }
  auto run = run::RunDir::create(options.runs_dir, "capture");
  if (!run.ok()) {
    fmt::print(stderr, "error: {}\n", run.error().message);
    return kExitFailure;
  }
  size_t total = 0;
  for (const auto& path : options.paths)
    total += list_tasks(path).size();
  fmt::print(stderr, "capturing {} tasks from {} folder(s) → {}\n", total, options.paths.size(),
             run->root().string());

  struct FolderTally {
    std::string folder;
    int captured = 0;
    std::vector<harness::CaptureOutcome> failures;
  };
  std::vector<FolderTally> tallies;
  nlohmann::json records = nlohmann::json::array();
  size_t done = 0;
  for (const auto& path : options.paths) {
    std::string folder = fs::path(path).lexically_normal().filename().string();
    if (folder.empty())
      folder = fs::path(path).lexically_normal().parent_path().filename().string();
    FolderTally tally{folder, 0, {}};
    auto report = [&](const harness::CaptureOutcome& reported) {
      harness::CaptureOutcome outcome = reported;
      check_with_ir(outcome);
      ++done;
      fmt::print(stderr, "[{:>4}/{}] {}/{:<48} {:<9} {:6.1f} s  {}\n", done, total, folder,
                 outcome.task, outcome.captured ? "captured" : "FAILED", outcome.seconds,
                 outcome.captured ? fmt::format("{} nodes", outcome.nodes)
                                  : outcome.category + ": " + outcome.message);
      (void)run->events().append("capture.task", {{"folder", folder},
                                                  {"task", outcome.task},
                                                  {"captured", outcome.captured},
                                                  {"category", outcome.category},
                                                  {"message", outcome.message},
                                                  {"seconds", outcome.seconds}});
      records.push_back({{"folder", folder},
                         {"task", outcome.task},
                         {"captured", outcome.captured},
                         {"category", outcome.category},
                         {"message", outcome.message},
                         {"seconds", outcome.seconds},
                         {"nodes", outcome.nodes},
                         {"dir", outcome.dir.string()}});
      if (outcome.captured)
        ++tally.captured;
      else
        tally.failures.push_back(outcome);
    };
    torch_harness.capture_batch(list_tasks(path), run->root() / folder, options.jobs,
                                options.timeout_s, report);
    tallies.push_back(std::move(tally));
  }

  fmt::print("\n{:<24} {:>9} {:>7}\n", "folder", "captured", "failed");
  int failed_total = 0;
  for (const auto& tally : tallies) {
    fmt::print("{:<24} {:>9} {:>7}\n", tally.folder, tally.captured, tally.failures.size());
    failed_total += static_cast<int>(tally.failures.size());
  }
  for (const auto& tally : tallies)
    for (const auto& failure : tally.failures)
      fmt::print("  FAILED {}/{}: {}: {}\n", tally.folder, failure.task, failure.category,
                 failure.message);
  (void)run->write_json("captures.json", records);
  (void)run->set_status(run::RunStatus::complete,
                        {{"stage", "capture-all"}, {"tasks", total}, {"failed", failed_total}});
  fmt::print(stderr, "details: {}\n", (run->root() / "captures.json").string());
  return failed_total == 0 ? kExitOk : kExitFailure;
}

}  // namespace

CommandAction setup_capture(CLI::App& app) {
  auto options = std::make_shared<CaptureOptions>();
  app.add_option("paths", options->paths,
                 "A KernelBench-style task file (Model, get_inputs, get_init_inputs); with --all, "
                 "one or more folders of them")
      ->required();
  app.add_flag("--all", options->all, "Capture every *.py task in the given folders and summarise");
  app.add_option("--runs-dir", options->runs_dir, "Where run directories are created")
      ->capture_default_str();
  app.add_flag("--inference", options->inference,
               "Capture in eval mode (BatchNorm uses running statistics); default is KernelBench's "
               "training mode");
  app.add_option("--seed", options->seed, "Seed for model construction and the reference inputs")
      ->capture_default_str();
  app.add_option("--jobs", options->jobs, "Parallel captures with --all")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--timeout", options->timeout_s, "Seconds allowed per task")
      ->capture_default_str();
  return [options]() -> int {
    auto location = harness::locate_harness();
    if (!location.ok()) {
      fmt::print(stderr, "error: {}\n", location.error().message);
      return kExitFailure;
    }
    SystemProcessRunner runner;
    harness::PythonHarness torch_harness(*location, runner);
    if (options->all) return capture_all(*options, torch_harness);
    if (options->paths.size() != 1) {
      fmt::print(stderr, "error: capture takes one task file (use --all for folders)\n");
      return kExitBadInput;
    }
    return capture_one(*options, torch_harness);
  };
}

}  // namespace stitch::cli
