// The one target resolver: what `plan`, `generate`, `verify`, `profile` and `run` are pointed at —
// a task file (.py, captured into a new run directory), a run directory holding a capture, or a
// graph.json — checked and resolved to the run directory and graph it names. A target the use does
// not accept is an ErrorKind::bad_input Error whose message says why.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "app/task_capture.h"
#include "run/run_dir.h"
#include "util/result.h"

namespace stitch::app {

enum class TargetKind : uint8_t { task_file, run_dir, graph_file };

// What a use accepts.
struct TargetRules {
  bool run_dir = true;     // a run directory (holding `needed_file`)
  bool graph_file = false;  // a graph.json on its own (plan, generate)
  std::string needed_file = "graph.json";  // what a run directory must hold
  // A run directory that is a bare capture (graph.json, no summary.json) is made a run directory
  // (verify, profile: they record attempts there); otherwise it is opened only if it is one.
  bool adopt_bare_capture = false;
};

// The kind of `target`, or a bad_input Error saying why the use does not take it. No side effects.
Result<TargetKind> classify_target(const std::filesystem::path& target, const TargetRules& rules);

struct ResolvedTarget {
  TargetKind kind = TargetKind::task_file;
  std::optional<run::RunDir> run;  // captured into, or the run directory given (when it is one)
  std::filesystem::path graph;     // the graph.json
  bool created_run = false;        // `run` was made here (by capturing the task)
};

// Classifies `target` and, for a task file, captures it with `capture` into a new run directory.
Result<ResolvedTarget> resolve_target(const std::filesystem::path& target, const TargetRules& rules,
                                      const TaskCapture& capture);

}  // namespace stitch::app
