// The one target resolver (target.h).
#include "app/target.h"

#include <fmt/format.h>

namespace stitch::app {

namespace fs = std::filesystem;

namespace {

// The messages are the ones each family of commands has always printed: run takes task files
// only; verify and profile a task or a run directory; plan and generate a graph.json too.
Error not_accepted(const fs::path& target, const TargetRules& rules) {
  const std::string name = target.string();
  if (!rules.run_dir && !rules.graph_file)
    return make_error(ErrorKind::bad_input, "{}: not a task file (.py)", name);
  if (rules.graph_file)
    return make_error(ErrorKind::bad_input,
                      "{}: not a task (.py), a run directory or a graph.json", name);
  return make_error(ErrorKind::bad_input, "{}: not a task (.py) or a run directory", name);
}

Error run_dir_lacks(const fs::path& target, const TargetRules& rules) {
  if (rules.graph_file)
    return make_error(ErrorKind::bad_input,
                      "{}: no {} here (not a captured run directory)", target.string(),
                      rules.needed_file);
  return make_error(ErrorKind::bad_input,
                    "{}: not a run directory (no {}); give a task .py or a run directory made by "
                    "`stitchcuda capture`",
                    target.string(), rules.needed_file);
}

}  // namespace

Result<TargetKind> classify_target(const fs::path& target, const TargetRules& rules) {
  std::error_code ec;
  if (!fs::exists(target, ec)) {
    if (rules.run_dir && !rules.graph_file)
      return make_error(ErrorKind::bad_input, "{}: no such file or directory", target.string());
    return not_accepted(target, rules);
  }
  if (fs::is_directory(target, ec)) {
    if (!rules.run_dir) return not_accepted(target, rules);
    if (!fs::is_regular_file(target / rules.needed_file, ec)) return run_dir_lacks(target, rules);
    return TargetKind::run_dir;
  }
  const bool file = fs::is_regular_file(target, ec);
  if (file && target.extension() == ".py") return TargetKind::task_file;
  if (file && rules.graph_file && target.extension() == ".json") return TargetKind::graph_file;
  return not_accepted(target, rules);
}

Result<ResolvedTarget> resolve_target(const fs::path& target, const TargetRules& rules,
                                      const TaskCapture& capture) {
  STITCH_ASSIGN_OR_RETURN(TargetKind kind, classify_target(target, rules));
  ResolvedTarget resolved;
  resolved.kind = kind;
  switch (kind) {
    case TargetKind::task_file: {
      STITCH_ASSIGN_OR_RETURN(run::RunDir run, capture(target));
      resolved.graph = run.path("graph.json");
      resolved.run.emplace(std::move(run));
      resolved.created_run = true;
      break;
    }
    case TargetKind::run_dir: {
      resolved.graph = target / "graph.json";
      if (rules.adopt_bare_capture) {
        STITCH_ASSIGN_OR_RETURN(run::RunDir run, run::RunDir::open_or_adopt(target));
        resolved.run.emplace(std::move(run));
      } else if (std::error_code ec; fs::exists(target / "summary.json", ec)) {
        // A run directory: refused while another process has it open (run_lock.h).
        STITCH_ASSIGN_OR_RETURN(run::RunDir run, run::RunDir::open(target));
        resolved.run.emplace(std::move(run));
      }
      break;
    }
    case TargetKind::graph_file:
      resolved.graph = target;
      break;
  }
  return resolved;
}

}  // namespace stitch::app
