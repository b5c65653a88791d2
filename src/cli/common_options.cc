// The options several subcommands take (common_options.h).
#include "cli/common_options.h"

#include "sandbox/layers.h"
#include "util/task_limits.h"

namespace stitch::cli {

void add_target_argument(CLI::App& app, std::string& target, TargetKinds kinds) {
  const char* help =
      kinds == TargetKinds::task_or_run_dir
          ? "The task (a KernelBench-style .py, captured first) or a run directory holding its "
            "capture"
          : "A task (.py, captured first), a run directory, or a graph.json";
  app.add_option("target", target, help)->required();
}

void add_runs_dir_option(CLI::App& app, std::string& runs_dir) {
  app.add_option("--runs-dir", runs_dir, "Where run directories are created")
      ->capture_default_str();
}

void add_track_option(CLI::App& app, std::string& track) {
  app.add_option("--track", track, "Precision track: fp32, tf32 or bf16")->capture_default_str();
}

void add_verification_options(CLI::App& app, int& sets, int& iters, double& timeout_s) {
  app.add_option("--sets", sets, "Correctness input sets drawn by the judge")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--iters", iters, "Timed iterations per verification")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--timeout", timeout_s, "Seconds allowed for each runner")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

void add_insecure_sandbox_option(CLI::App& app, std::vector<std::string>& layers) {
  std::vector<std::string> names = {"all"};
  for (auto name : sandbox::kLayerNames)
    names.emplace_back(name);
  app.add_option("--insecure-sandbox", layers,
                 "Accept a verification without this sandbox layer (repeatable; `all`): the "
                 "verdict then still passes, and verify.json, the printed verdict and the bench "
                 "report say it ran without it. Without it, a missing layer fails closed")
      ->check(CLI::IsMember(names))
      ->allow_extra_args(false);  // one layer per flag: never eats the target argument
}

void add_task_limit_options(CLI::App& app, TaskLimitOptions& options) {
  app.add_option("--task-timeout", options.timeout_s,
                 "Seconds any process running task code (capture, reference, judge, baselines) "
                 "may run; 0: each one's own limit")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--task-memory", options.memory_gib,
                 "GiB of private memory (RLIMIT_DATA) for each process running task code; "
                 "0: no limit (default: 3/4 of this machine's memory)")
      ->check(CLI::NonNegativeNumber);
}

void apply_task_limit_options(const TaskLimitOptions& options) {
  TaskLimits limits;
  limits.timeout_s = options.timeout_s;
  if (options.memory_gib >= 0)
    limits.memory_bytes = static_cast<uint64_t>(options.memory_gib * double(uint64_t{1} << 30));
  set_task_limits(limits);
}

}  // namespace stitch::cli
