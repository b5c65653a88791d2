// `stitchcuda eval-kb TASK.py SOLUTION.py`: score a KernelBench ModelNew file from another system
// with the same hardened judge (`python -m stitch_harness.eval_kb`, which never imports the
// solution into the judge's process). The result goes into a new run directory
// (attempts/NN/eval_kb.json, events.jsonl, summary.json). Exit 0 only when the solution passed; 1
// otherwise; 2 bad input.
#include <fmt/format.h>

#include "cli/commands.h"
#include "harness/harness.h"
#include "run/run_dir.h"
#include "util/fs.h"
#include "verify/judge_client.h"
#include "verify/track.h"
#include "verify/verify_report.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

struct EvalKbOptions {
  std::string task;
  std::string solution;
  std::string track = "fp32";
  int trials = 3;
  int iters = 50;
  std::string device = "cuda";
  double timeout_s = 900;
  std::string runs_dir = "runs";
  bool json = false;
};

std::string check_python_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return fmt::format("{}: no such file", path);
  if (!fs::is_regular_file(path, ec)) return fmt::format("{}: not a file", path);
  if (fs::path(path).extension() != ".py") return fmt::format("{}: not a {} (.py)", path, what);
  return "";
}

std::string last_lines(const std::string& text, size_t count) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::string joined;
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i)
    joined += (joined.empty() ? "" : " | ") + lines[i];
  return joined;
}

void print_summary(const nlohmann::json& result, const fs::path& result_path) {
  std::string outcome = result.value("outcome", std::string("unknown"));
  std::string reason = result.value("reason", std::string());
  fmt::print("{} ({} track, {}){}\n", outcome, result.value("track", std::string("?")),
             result.value("device", std::string("?")), reason.empty() ? "" : ": " + reason);
  auto number = [&](const char* key) -> std::optional<double> {
    if (result.contains(key) && result[key].is_number()) return result[key].get<double>();
    return std::nullopt;
  };
  if (auto median = number("median_ms")) {
    std::string line = fmt::format("time: {} median", format_duration_ms(*median));
    if (auto eager = number("eager_median_ms"))
      line += fmt::format(", eager {}", format_duration_ms(*eager));
    if (auto speedup = number("speedup_vs_eager"))
      line += fmt::format(" → {:.2f}x eager", *speedup);
    fmt::print("{}\n", line);
  }
  if (result.contains("findings") && result["findings"].is_array() && !result["findings"].empty())
    fmt::print("findings: {}\n", result["findings"].size());
  fmt::print("details: {}\n", result_path.string());
}

int run_eval_kb(const EvalKbOptions& options) {
  for (auto [path, what] : {std::pair{&options.task, "task"}, {&options.solution, "solution"}}) {
    if (std::string problem = check_python_file(*path, what); !problem.empty()) {
      fmt::print(stderr, "error: {}\n", problem);
      return kExitBadInput;
    }
  }
  if (!parse_track(options.track)) {
    fmt::print(stderr, "error: unknown track '{}' (fp32, tf32, bf16)\n", options.track);
    return kExitBadInput;
  }
  auto location = harness::locate_harness();
  if (!location.ok()) {
    fmt::print(stderr, "error: {}\n", location.error().message);
    return kExitFailure;
  }
  auto run = run::RunDir::create(options.runs_dir, run::task_name_from_path(options.task));
  if (!run.ok()) {
    fmt::print(stderr, "error: {}\n", run.error().message);
    return kExitFailure;
  }
  auto attempt = run->new_attempt_dir();
  auto task_text = read_file(options.task);
  auto solution_text = read_file(options.solution);
  if (!attempt.ok() || !task_text.ok() || !solution_text.ok()) {
    fmt::print(stderr, "error: {}\n",
               !attempt.ok()     ? attempt.error().message
               : !task_text.ok() ? task_text.error().message
                                 : solution_text.error().message);
    return kExitFailure;
  }
  (void)run->write_text("task.py", *task_text);
  (void)write_file_atomic(*attempt / "solution.py", *solution_text);
  fs::path result_path = *attempt / "eval_kb.json";

  ProcessSpec spec = python_module_spec(
      {location->python, location->python_dir}, "stitch_harness.eval_kb",
      {fs::absolute(options.task).string(), fs::absolute(options.solution).string(), "--out",
       fs::absolute(result_path).string(), "--track", options.track, "--trials",
       std::to_string(options.trials), "--iters", std::to_string(options.iters), "--device",
       options.device, "--timeout", fmt::format("{}", options.timeout_s)});
  // The candidate's limit is enforced inside; this one covers the reference and the eager
  // baseline too, and catches a judge that hangs.
  spec.timeout_s = options.timeout_s + 1800;
  (void)run->events().append("eval_kb.start",
                             {{"task", fs::absolute(options.task).string()},
                              {"solution", fs::absolute(options.solution).string()},
                              {"track", options.track},
                              {"device", options.device}});
  fmt::print(stderr, "evaluating {} on {} → {}\n", options.solution, options.task,
             attempt->string());
  SystemProcessRunner process_runner;
  auto process = process_runner.run(spec);
  if (process.ok())
    (void)write_file_atomic(*attempt / "eval_kb.log", process->stdout_text + process->stderr_text);

  auto fail = [&](const std::string& message) {
    (void)run->events().append("eval_kb.failed", {{"message", message}});
    (void)run->set_status(run::RunStatus::failed, {{"stage", "eval-kb"}, {"message", message}});
    fmt::print(stderr, "error: {}\n", message);
    return kExitFailure;
  };
  if (!process.ok()) return fail(process.error().message);
  std::error_code ec;
  if (!process->succeeded() || !fs::is_regular_file(result_path, ec))
    return fail(
        fmt::format("eval-kb {}: {}", process->describe(), last_lines(process->stderr_text, 3)));
  auto text = read_file(result_path);
  nlohmann::json result =
      text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  if (!result.is_object() || !result.contains("outcome"))
    return fail(fmt::format("{}: not an eval-kb result", result_path.string()));

  std::string outcome = result.value("outcome", std::string());
  (void)run->events().append("eval_kb.done", {{"attempt", attempt->filename().string()},
                                              {"outcome", outcome},
                                              {"reason", result.value("reason", std::string())}});
  (void)run->set_status(
      run::RunStatus::complete,
      {{"stage", "eval-kb"}, {"attempt", attempt->filename().string()}, {"outcome", outcome}});
  if (options.json)
    fmt::print("{}\n", result.dump(2));
  else
    print_summary(result, result_path);
  return outcome == "passed" ? kExitOk : kExitFailure;
}

}  // namespace

CommandAction setup_eval_kb(CLI::App& app) {
  auto options = std::make_shared<EvalKbOptions>();
  app.add_option("task", options->task, "The KernelBench task (.py with Model)")->required();
  app.add_option("solution", options->solution, "The solution (.py with ModelNew)")->required();
  app.add_option("--track", options->track, "Precision track: fp32, tf32 or bf16")
      ->capture_default_str();
  app.add_option("--trials", options->trials, "Correctness input sets")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--iters", options->iters, "Timed iterations (0: no timing)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_option("--device", options->device, "cuda, cuda:N or cpu")->capture_default_str();
  app.add_option("--timeout", options->timeout_s, "Seconds allowed for the solution's process")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--runs-dir", options->runs_dir, "Where run directories are created")
      ->capture_default_str();
  app.add_flag("--json", options->json, "Print the result JSON instead of the summary");
  return [options]() -> int { return run_eval_kb(*options); };
}

}  // namespace stitch::cli
