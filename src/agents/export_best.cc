// best/ from the best attempt (export_best.h).
#include "agents/export_best.h"

#include <fmt/format.h>

#include "adapters/export.h"
#include "agents/workflow.h"
#include "util/fs.h"

namespace stitch::agents {

using nlohmann::json;

Result<BestExport> export_best_attempt(const std::filesystem::path& run_dir, const RunState& state,
                                       const std::vector<std::filesystem::path>& include_dirs,
                                       bool build_main, ProcessRunner& runner) {
  const AttemptRecord* best = state.best();
  if (best == nullptr) return make_error("the run has no passing attempt to export");
  const std::filesystem::path attempt_dir = run_dir / best->dir;
  STITCH_ASSIGN_OR_RETURN(CodeDraft draft, Workflow::read_draft(attempt_dir));
  STITCH_ASSIGN_OR_RETURN(json verify, read_json_file(attempt_dir / "verify.json"));
  const json build = verify.value("build", json::object());

  adapters::ExportRequest request;
  request.capture_dir = run_dir;
  request.sources = draft.sources;
  request.include_dirs = include_dirs;
  request.include_dirs.insert(request.include_dirs.end(), draft.include_dirs.begin(),
                              draft.include_dirs.end());
  request.library = build.value("library", "");
  request.libraries = draft.libraries;
  for (const auto& arg : build.value("command", json::array()))
    if (arg.is_string()) request.build_command.push_back(arg.get<std::string>());
  if (std::string arch = verify.value("arch", ""); !arch.empty()) request.arch = arch;
  request.out_dir = run_dir / "best";
  request.build_main = build_main;
  request.provenance = {{"attempt", best->number},
                        {"attempt_dir", best->dir},
                        {"label", best->label},
                        {"variant", best->variant},
                        {"track", verify.value("track", "")},
                        {"gpu", verify.value("gpu", "")},
                        {"timing", verify.value("timing", json())},
                        {"speedups", verify.value("speedups", json())}};
  STITCH_ASSIGN_OR_RETURN(adapters::ExportReport report, adapters::export_best(request, runner));
  BestExport exported;
  exported.dir = request.out_dir;
  exported.note =
      fmt::format("best/ holds attempt {:02} ({} files{})", best->number, report.files.size(),
                  !build_main         ? ""
                  : report.main_built ? ", main built"
                                      : ", main NOT built: see best/README.md");
  return exported;
}

}  // namespace stitch::agents
