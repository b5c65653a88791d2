// The real Verifier and profiler roles (system_roles.h).
#include "agents/system_roles.h"

#include "util/fs.h"
#include "verify/feedback.h"
#include "verify/profile/profile_report.h"
#include "verify/profile/profile_run.h"
#include "verify/verify_report.h"

namespace stitch::agents {
namespace {

using nlohmann::json;

}  // namespace

Result<AttemptResult> VerifierRole::verify(const VerifyJob& job) {
  if (job.draft == nullptr || job.draft->sources.empty())
    return make_error("verify: the attempt has no sources");
  VerifyRequest request;
  request.capture_dir = job.run_dir;
  request.attempt_dir = job.attempt_dir;
  request.sources = job.draft->sources;
  request.headers = job.draft->headers;
  request.include_dirs = job.draft->include_dirs;
  request.libraries = job.draft->libraries;
  request.track = config_.track;
  request.arch = config_.arch;
  // A subtask on its own has no reference to run against: it is built and checked statically
  // (state no_gpu); the whole program gets the full verification.
  request.gpu = job.subtask < 0 ? config_.gpu : std::nullopt;
  Verifier verifier(deps_, config_.options);
  STITCH_ASSIGN_OR_RETURN(VerifyReport report, verifier.verify(request));
  std::optional<ProfileSummary> profile;
  if (auto read = read_profile_summary(job.attempt_dir / "profile.json"); read.ok())
    profile = *read;
  Feedback feedback = build_feedback(report, profile);
  if (config_.declarations) attach_declarations(feedback, *config_.declarations);
  STITCH_TRY(write_feedback(job.attempt_dir / "feedback.json", feedback));
  return read_attempt_result(job.attempt_dir);
}

std::optional<ProfileSummary> SystemProgramProfiler::profile(const fs::path& run_dir,
                                                             const fs::path& attempt_dir,
                                                             const CodeDraft&) {
  auto fail = [&](const std::string& why) -> std::optional<ProfileSummary> {
    last_error_ = why;
    return std::nullopt;
  };
  auto verify = read_verify_report(attempt_dir / "verify.json");
  if (!verify.ok()) return fail(verify.error().message);
  const std::string library = verify->library_path;
  if (library.empty() || !fs::exists(library)) return fail("the built library is gone: " + library);
  auto graph = read_json_file(run_dir / "graph.json");
  if (!graph.ok()) return fail(graph.error().message);
  auto slots = self_test_slots_from_graph(*graph);
  if (!slots.ok()) return fail(slots.error().message);
  ProfileRequest request;
  request.runner = runner_path_;
  request.program = library;
  request.work_dir = attempt_dir / "profile";
  request.slots = request.work_dir / "slots.json";
  request.use_ncu = false;
  request.runner_timeout_s = 300;
  if (Status made = make_dirs(request.work_dir); !made.ok()) return fail(made.error().message);
  if (Status written = write_file_atomic(request.slots, slots->dump(1) + "\n"); !written.ok())
    return fail(written.error().message);
  auto report = profile_program(process_runner_, request);
  if (!report.ok()) return fail(report.error().message);
  const json document = profile_to_json(*report);
  (void)write_file_atomic(attempt_dir / "profile.json", document.dump(2) + "\n");
  std::error_code ignored;
  for (const char* sandbox : {"sandbox", "ncu-sandbox"})
    fs::remove_all(request.work_dir / sandbox, ignored);
  auto summary = parse_profile_summary(document);
  if (!summary.ok()) return fail(summary.error().message);
  return *summary;
}

}  // namespace stitch::agents
