// `verify` (verify.h).
#include "app/verify.h"

#include <cstdlib>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "agents/system_roles.h"
#include "app/doc_declarations.h"
#include "app/target.h"
#include "harness/harness.h"
#include "run/run_dir.h"
#include "util/fs.h"
#include "util/process.h"
#include "verify/build/build_cache.h"  // local_includes
#include "verify/build/gpu_info.h"
#include "verify/judge/judge_client.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;

fs::path runner_executable() {
  if (const char* path = std::getenv("STITCH_RUNNER")) return path;
  return executable_dir() / "stitch-runner";
}

Status check_programs(const std::vector<std::string>& programs) {
  std::error_code ec;
  std::set<std::string> names;
  for (const auto& program : programs) {
    constexpr ErrorKind bad = ErrorKind::bad_input;
    if (!fs::exists(program, ec)) return make_error(bad, "{}: no such file", program);
    if (!fs::is_regular_file(program, ec)) return make_error(bad, "{}: not a file", program);
    if (fs::path(program).extension() != ".cu")
      return make_error(bad, "{}: not a CUDA source (.cu); headers are found through its #includes",
                        program);
    if (!names.insert(fs::path(program).filename().string()).second)
      return make_error(bad, "{}: two program files have the same name", program);
  }
  return {};
}

// The project's own headers (stitch/program.h, kernels/*.cuh) come from the compiler's include
// directories. Both sides are compared with symbolic links resolved: local_includes resolves them,
// so a checkout reached through a link would otherwise have its kernels/ headers checked as
// candidate code (and matmul.cuh's TF32 engine reported as a precision downgrade).
bool is_project_header(const fs::path& header, const std::vector<fs::path>& include_dirs) {
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(header, ec);
  for (const auto& dir : include_dirs) {
    if (dir.empty()) continue;
    const fs::path root = fs::weakly_canonical(fs::absolute(dir), ec);
    fs::path relative = resolved.lexically_relative(root);
    if (!relative.empty() && *relative.begin() != "..") return true;
  }
  return false;
}

struct CopiedProgram {
  std::vector<fs::path> sources;
  std::vector<fs::path> headers;
  std::vector<fs::path> include_dirs;
};

// Copies the sources into attempt/src/, with the local headers they include that live under the
// source's directory (same relative path); headers elsewhere stay where they are, their including
// source's directory becomes an include directory, and they are statically checked in place.
// User include directories (-I) are searched for quoted includes after the source's directory;
// their headers stay in place and are statically checked like the others.
Result<CopiedProgram> copy_program(const std::vector<std::string>& programs, const fs::path& dir,
                                   const Compiler& compiler,
                                   const std::vector<fs::path>& user_include_dirs) {
  CopiedProgram copied;
  std::vector<fs::path> search = user_include_dirs;
  for (const auto& include_dir : compiler.include_dirs())
    search.push_back(include_dir);
  for (const auto& user_dir : user_include_dirs)
    copied.include_dirs.push_back(fs::absolute(user_dir).lexically_normal());
  STITCH_TRY(make_dirs(dir));
  std::set<fs::path> seen_headers;
  for (const auto& program : programs) {
    fs::path source = fs::absolute(program).lexically_normal();
    fs::path source_dir = source.parent_path();
    STITCH_ASSIGN_OR_RETURN(std::string text, read_file(source));
    fs::path target = dir / source.filename();
    STITCH_TRY(write_file_atomic(target, text));
    copied.sources.push_back(target);
    bool outside_headers = false;
    for (const auto& header : local_includes(source, search)) {
      fs::path absolute = fs::absolute(header).lexically_normal();
      if (!seen_headers.insert(absolute).second ||
          is_project_header(absolute, compiler.project_header_dirs()))
        continue;
      fs::path relative = absolute.lexically_relative(source_dir);
      if (!relative.empty() && *relative.begin() != "..") {
        STITCH_ASSIGN_OR_RETURN(std::string header_text, read_file(absolute));
        STITCH_TRY(make_dirs((dir / relative).parent_path()));
        STITCH_TRY(write_file_atomic(dir / relative, header_text));
        copied.headers.push_back(dir / relative);
      } else {
        copied.headers.push_back(absolute);
        outside_headers = true;
      }
    }
    if (outside_headers) copied.include_dirs.push_back(source_dir);
  }
  return copied;
}

VerifyRequest make_request(const VerifyProgramOptions& options, const run::RunDir& run,
                           const fs::path& attempt, const CopiedProgram& copied,
                           const VerifyTools& tools, Track track) {
  const Compiler& compiler = tools.verifier.compiler;
  // Libraries follow from every header the program pulls in, the project's kernel headers
  // included (kernels/matmul.cuh brings cublasLt.h), though those are not statically checked.
  std::vector<fs::path> search = copied.include_dirs;
  for (const auto& dir : compiler.include_dirs())
    search.push_back(dir);
  std::set<std::string> libraries(options.libraries.begin(), options.libraries.end());
  for (const auto& library : detect_program_libraries(copied.sources, search))
    libraries.insert(library);
  VerifyRequest request;
  request.capture_dir = run.root();
  request.attempt_dir = attempt;
  request.sources = copied.sources;
  request.headers = copied.headers;
  request.include_dirs = copied.include_dirs;
  request.libraries.assign(libraries.begin(), libraries.end());
  request.track = track;
  request.arch = options.arch;
  request.gpu = tools.gpu;
  return request;
}

VerifyOptions make_verify_options(const VerifyProgramOptions& options, const VerifyRequest& request,
                                  const VerifyTools& tools, run::EventLog& events) {
  VerifyOptions verify_options = options.verify;
  // The command line checked the names; an unknown one waives nothing (fails closed).
  if (auto insecure = sandbox::parse_insecure_layers(options.insecure_sandbox); insecure.ok())
    verify_options.insecure_sandbox = *insecure;
  verify_options.runner_path = tools.runner_path;
  verify_options.worker_id = fmt::format("gpu{}", request.gpu ? request.gpu->device : 0);
  verify_options.on_step = [&events, on_step = options.verify.on_step](const VerifyStep& step) {
    log_verify_step(events, step);
    if (on_step) on_step(step);
  };
  return verify_options;
}

// feedback.json, the log's verify.done and summary.json after a verification.
Feedback record_verdict(const VerifyProgramOptions& options, run::RunDir& run,
                        const fs::path& attempt, const VerifyReport& report) {
  std::optional<ProfileSummary> profile;
  if (!options.profile.empty()) {
    auto read = read_profile_summary(options.profile);
    if (read.ok())
      profile = *read;
    else
      say(options.progress, "warning: ignoring the profile: " + read.error().message);
  }
  Feedback feedback = build_feedback(report, profile);
  IndexDeclarationSource declarations({}, options.progress);
  attach_declarations(feedback, declarations);
  (void)write_feedback(attempt / "feedback.json", feedback);
  nlohmann::json outcome =
      report.outcome ? nlohmann::json(enum_name(*report.outcome)) : nlohmann::json(nullptr);
  (void)run.events().append("verify.done", {{"attempt", attempt.filename().string()},
                                            {"state", enum_name(report.state)},
                                            {"outcome", outcome},
                                            {"reason", report.reason}});
  (void)run.set_status(report.state == VerifyState::infrastructure_error
                           ? run::RunStatus::failed
                           : run::RunStatus::complete,
                       {{"stage", "verify"},
                        {"attempt", attempt.filename().string()},
                        {"state", enum_name(report.state)},
                        {"outcome", outcome}});
  return feedback;
}

Status check_inputs(const VerifyProgramOptions& options, const TargetRules& rules) {
  STITCH_TRY(classify_target(options.target, rules));
  STITCH_TRY(check_programs(options.programs));
  if (!enum_from_name<Track>(options.track))
    return make_error(ErrorKind::bad_input, "unknown track '{}' (fp32, tf32, bf16)", options.track);
  return {};
}

TargetRules verify_target_rules() {
  TargetRules rules;
  rules.adopt_bare_capture = true;
  return rules;
}

}  // namespace

void log_verify_step(run::EventLog& events, const VerifyStep& step) {
  (void)events.append("verify.step", {{"step", step.name},
                                      {"seconds", step.seconds},
                                      {"status", step.status},
                                      {"detail", step.detail}});
}

Result<VerifyProgramResult> verify_program(const VerifyProgramOptions& options,
                                           const VerifyTools& tools) {
  const TargetRules rules = verify_target_rules();
  STITCH_TRY(check_inputs(options, rules));
  STITCH_ASSIGN_OR_RETURN(ResolvedTarget target,
                          resolve_target(options.target, rules, tools.capture));
  run::RunDir& run = *target.run;
  STITCH_ASSIGN_OR_RETURN(fs::path attempt, run.new_attempt_dir());

  const std::vector<fs::path> user_include_dirs(options.include_dirs.begin(),
                                                options.include_dirs.end());
  STITCH_ASSIGN_OR_RETURN(
      CopiedProgram copied,
      copy_program(options.programs, attempt / "src", tools.verifier.compiler, user_include_dirs));
  VerifyRequest request =
      make_request(options, run, attempt, copied, tools, *enum_from_name<Track>(options.track));
  Verifier verifier(tools.verifier, make_verify_options(options, request, tools, run.events()));

  (void)run.events().append("verify.start", {{"attempt", attempt.filename().string()},
                                             {"sources", options.programs},
                                             {"track", options.track},
                                             {"gpu", request.gpu ? request.gpu->name : ""}});
  say(options.progress,
      fmt::format("verifying {} → {}", fmt::join(options.programs, " "), attempt.string()));
  auto report = verifier.verify(request);
  if (!report.ok()) {
    (void)run.events().append("verify.failed", {{"message", report.error().message}});
    return report.error();
  }
  Feedback feedback = record_verdict(options, run, attempt, *report);
  return VerifyProgramResult{std::move(*report), std::move(feedback), attempt};
}

Result<VerifyProgramResult> verify_program(const VerifyProgramOptions& options) {
  STITCH_TRY(check_inputs(options, verify_target_rules()));  // before looking for the harness
  STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
  agents::SystemVerifierDeps system({location.python, location.python_dir});
  VerifyTools tools{system_task_capture(options.runs_dir, options.progress), system.deps(),
                    query_gpu(0), runner_executable()};
  return verify_program(options, tools);
}

}  // namespace stitch::app
