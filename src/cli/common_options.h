// The options several subcommands take, declared once so that each is named, explained and checked
// the same way everywhere: the target a use resolves (app/target.h), --runs-dir, --track, and a
// verification's --sets, --iters and --timeout, and the task-process limits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace stitch::cli {

// What the target argument may be.
enum class TargetKinds : uint8_t {
  task_or_run_dir,        // verify, profile
  task_run_dir_or_graph,  // plan, generate
};
void add_target_argument(CLI::App& app, std::string& target, TargetKinds kinds);

// --runs-dir, with its default shown.
void add_runs_dir_option(CLI::App& app, std::string& runs_dir);

// --track fp32|tf32|bf16 (the app function says what an unknown one is).
void add_track_option(CLI::App& app, std::string& track);

// --sets, --iters and --timeout of a verification (verify, and each of the loop's).
void add_verification_options(CLI::App& app, int& sets, int& iters, double& timeout_s);

// --insecure-sandbox LAYER (repeatable; a sandbox::Layer name or `all`, checked at parse time):
// layers a verification may pass without, flagged in verify.json (sandbox/layers.h).
void add_insecure_sandbox_option(CLI::App& app, std::vector<std::string>& layers);
// --task-timeout and --task-memory: the limits of every process that runs task code
// (util/task_limits.h). main.cc adds them to every subcommand and applies them after parsing.
struct TaskLimitOptions {
  double timeout_s = 0;    // 0: each use's own limit
  double memory_gib = -1;  // < 0: the default (3/4 of the machine's memory); 0: no limit
};
void add_task_limit_options(CLI::App& app, TaskLimitOptions& options);
void apply_task_limit_options(const TaskLimitOptions& options);

}  // namespace stitch::cli
