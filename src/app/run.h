// `run`: the whole loop on one task (loop_session.h) — a task captured into a new run directory, or
// a run of the loop resumed from its state.json — with best/ exported and its adapters.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "app/loop_session.h"
#include "app/progress.h"
#include "util/result.h"

namespace stitch::app {

struct RunTaskOptions {
  std::string task;    // a task file (.py), or
  std::string resume;  // a run directory of the loop to continue
  std::string runs_dir = "runs";
  LoopOptions loop;
  std::filesystem::path build_cache;  // empty: build into each attempt directory
  bool export_main = true;            // build best/main
  ProgressSink on_line;               // one permanent line per step
  ProgressSink on_status;             // the verification in progress (a live line)
};

struct RunTaskResult {
  LoopOutcome outcome;
  std::filesystem::path run_dir;
};

// Bad input (both or neither of task and resume, not a task file, not a run of the loop, an
// unknown track) is bad_input; a loop that could not go on is an Error saying how to resume it.
Result<RunTaskResult> run_task(const RunTaskOptions& options);

}  // namespace stitch::app
