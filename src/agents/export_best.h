// The loop's last step: the best attempt of a finished run → best/ with its adapters
// (adapters/export.h), from what the attempt directory recorded (draft.json: sources and
// libraries; verify.json: the built library, the build command, arch, timing and speedups).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "agents/run_state.h"
#include "util/process.h"
#include "util/result.h"

namespace stitch::agents {

struct BestExport {
  std::filesystem::path dir;  // best/
  std::string note;           // one line: what was exported
};

// `include_dirs`: where the program's quoted includes are found (the compiler's: repo include/
// and repo root). An Error when the run has no passing attempt or the export cannot be made.
Result<BestExport> export_best_attempt(const std::filesystem::path& run_dir, const RunState& state,
                                       const std::vector<std::filesystem::path>& include_dirs,
                                       bool build_main, ProcessRunner& runner);

}  // namespace stitch::agents
