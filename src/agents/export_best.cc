// best/ from the best attempt (export_best.h).
#include "agents/export_best.h"

#include <fmt/format.h>

#include "adapters/export.h"
#include "agents/attempt_files.h"
#include "util/fs.h"
#include "verify/verify_report.h"

namespace stitch::agents {

using nlohmann::json;

Result<BestExport> export_best_attempt(const std::filesystem::path& run_dir, const RunState& state,
                                       const std::vector<std::filesystem::path>& include_dirs,
                                       bool build_main, ProcessRunner& runner) {
  const AttemptRecord* best = state.best();
  if (best == nullptr) return make_error("the run has no passing attempt to export");
  const std::filesystem::path attempt_dir = run_dir / best->dir;
  STITCH_ASSIGN_OR_RETURN(CodeDraft draft, read_draft(attempt_dir));
  STITCH_ASSIGN_OR_RETURN(VerifyReport verify, read_verify_report(attempt_dir / "verify.json"));
  const json verify_json = verify_report_to_json(verify);  // the provenance quotes its parts

  adapters::ExportRequest request;
  request.capture_dir = run_dir;
  request.sources = draft.sources;
  request.include_dirs = include_dirs;
  request.include_dirs.insert(request.include_dirs.end(), draft.include_dirs.begin(),
                              draft.include_dirs.end());
  request.library = verify.library_path;
  request.libraries = draft.libraries;
  request.build_command = verify.build_command;
  if (!verify.arch.empty()) request.arch = verify.arch;
  request.out_dir = run_dir / "best";
  request.build_main = build_main;
  request.provenance = {{"attempt", best->number},
                        {"attempt_dir", best->dir},
                        {"label", best->label},
                        {"variant", best->variant},
                        {"track", enum_name(verify.track)},
                        {"gpu", verify.gpu_name},
                        {"timing", verify_json["timing"]},
                        {"speedups", verify_json["speedups"]}};
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
