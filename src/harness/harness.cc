#include "harness/harness.h"

#include <cstdlib>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/python_module.h"

#ifndef STITCH_SOURCE_DIR
#define STITCH_SOURCE_DIR ""
#endif

namespace stitch::harness {
namespace {

bool has_harness(const fs::path& home) {
  std::error_code ec;
  return fs::exists(home / "python" / "stitch_harness" / "__init__.py", ec);
}

// The first line of a (possibly multi-line) message, trimmed.
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// Reads <dir>/capture.json, the harness's own account of a capture.
CaptureOutcome read_capture_record(const fs::path& dir, const fs::path& task_file) {
  CaptureOutcome outcome;
  outcome.task_file = task_file;
  outcome.task = task_file.stem().string();
  outcome.dir = dir;
  auto text = read_file(dir / "capture.json");
  if (!text.ok()) {
    outcome.category = CaptureCategory::internal;
    outcome.message = "the harness wrote no capture.json";
    return outcome;
  }
  auto record = nlohmann::json::parse(*text, nullptr, false);
  if (record.is_discarded() || !record.is_object()) {
    outcome.category = CaptureCategory::internal;
    outcome.message = "capture.json is not valid JSON";
    return outcome;
  }
  outcome.captured = record.value("status", "") == "captured";
  outcome.category = capture_category_from_name(record.value("category", ""));
  outcome.message = first_line(record.value("message", ""));
  outcome.nodes = record.value("nodes", 0);
  if (record.contains("seconds") && record["seconds"].is_object())
    outcome.seconds = record["seconds"].value("total", 0.0);
  return outcome;
}

}  // namespace

Result<HarnessLocation> locate_harness() {
  std::vector<fs::path> homes;
  if (const char* home = std::getenv("STITCH_HOME")) homes.emplace_back(home);
  fs::path exe_dir = executable_dir();
  homes.push_back(exe_dir.parent_path());
  homes.push_back(exe_dir.parent_path().parent_path());
  if (std::string(STITCH_SOURCE_DIR).size()) homes.emplace_back(STITCH_SOURCE_DIR);

  HarnessLocation location;
  for (const auto& home : homes) {
    if (has_harness(home)) {
      location.python_dir = home / "python";
      break;
    }
  }
  if (location.python_dir.empty())
    return make_error("cannot find the Python harness (python/stitch_harness); set STITCH_HOME to the "
                      "StitchCUDA checkout");

  if (const char* python = std::getenv("STITCH_PYTHON")) {
    location.python = python;
  } else if (fs::path venv = location.python_dir.parent_path() / ".venv" / "bin" / "python";
             fs::exists(venv)) {
    location.python = venv.string();
  } else {
    location.python = find_in_path("python3");
  }
  if (location.python.empty())
    return make_error("no Python interpreter: run scripts/setup.sh or set STITCH_PYTHON");
  return location;
}

ProcessSpec PythonHarness::module_command(const std::vector<std::string>& args) const {
  return python_module_spec({location_.python, location_.python_dir}, "stitch_harness", args);
}

CaptureOutcome PythonHarness::capture(const CaptureRequest& request) {
  std::vector<std::string> args = {"capture", request.task_file.string(), "--out",
                                   request.out_dir.string(), "--seed",
                                   std::to_string(request.seed)};
  if (request.inference) args.push_back("--inference");
  if (!request.reference) args.push_back("--no-reference");
  ProcessSpec spec = module_command(args);
  spec.timeout_s = task_timeout_s(request.timeout_s);
  auto process = runner_.run(spec);
  if (!process.ok()) {
    CaptureOutcome outcome;
    outcome.task_file = request.task_file;
    outcome.task = request.task_file.stem().string();
    outcome.dir = request.out_dir;
    outcome.category = CaptureCategory::internal;
    outcome.message = process.error().message;
    return outcome;
  }
  // Keep the harness's own output beside its record, for the details a one-line error leaves out.
  (void)write_file_atomic(request.out_dir / "capture.log",
                          process->stdout_text + process->stderr_text);
  CaptureOutcome outcome = read_capture_record(request.out_dir, request.task_file);
  if (process->timed_out) {
    outcome.captured = false;
    outcome.category = CaptureCategory::timeout;
    outcome.message = fmt::format("capture {}", process->describe());
  } else if (!process->succeeded() && outcome.captured) {
    outcome.captured = false;
    outcome.category = CaptureCategory::internal;
    outcome.message = fmt::format("harness {} after writing capture.json", process->describe());
  } else if (!process->succeeded() && outcome.message.empty()) {
    outcome.message = fmt::format("harness {}: {}", process->describe(),
                                  first_line(process->stderr_text));
  }
  return outcome;
}

std::vector<CaptureOutcome> PythonHarness::capture_batch(
    const std::vector<fs::path>& task_files, const fs::path& out_dir, int jobs,
    double timeout_per_task_s, const std::function<void(const CaptureOutcome&)>& on_done) {
  std::vector<std::string> args = {"capture-batch", "--out", out_dir.string(), "--jobs",
                                   std::to_string(jobs), "--timeout",
                                   fmt::format("{}", timeout_per_task_s)};
  for (const auto& file : task_files) args.push_back(file.string());
  ProcessSpec spec = module_command(args);
  std::vector<CaptureOutcome> outcomes;
  std::map<std::string, fs::path> file_by_stem;
  for (const auto& file : task_files) file_by_stem[file.stem().string()] = file;

  spec.on_stdout_line = [&](std::string_view line) {
    auto record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object() || !record.contains("task")) return;
    std::string stem = record.value("task", "");
    fs::path file = file_by_stem.count(stem) ? file_by_stem[stem] : fs::path(stem + ".py");
    CaptureOutcome outcome = read_capture_record(out_dir / stem, file);
    // The batch line is authoritative for timeouts and crashes that left no capture.json.
    if (record.value("status", "") != "captured") {
      outcome.captured = false;
      if (outcome.category == CaptureCategory::none)
        outcome.category = capture_category_from_name(record.value("category", "internal"));
      if (outcome.message.empty()) outcome.message = first_line(record.value("message", ""));
    }
    if (record.contains("seconds") && record["seconds"].is_number())
      outcome.seconds = record["seconds"].get<double>();
    outcomes.push_back(outcome);
    if (on_done) on_done(outcome);
  };
  // The batch as a whole has no limit of its own beyond the per-task ones.
  auto process = runner_.run(spec);
  // Tasks the batch never reported on (it crashed) are failures, not silently missing.
  std::set<std::string> reported;
  for (const auto& outcome : outcomes) reported.insert(outcome.task);
  for (const auto& file : task_files) {
    if (reported.count(file.stem().string())) continue;
    CaptureOutcome outcome;
    outcome.task = file.stem().string();
    outcome.task_file = file;
    outcome.dir = out_dir / outcome.task;
    outcome.category = CaptureCategory::internal;
    outcome.message = process.ok()
                          ? fmt::format("not reported by the harness ({}): {}", process->describe(),
                                        first_line(process->stderr_text))
                          : process.error().message;
    outcomes.push_back(outcome);
    if (on_done) on_done(outcome);
  }
  return outcomes;
}

}  // namespace stitch::harness
