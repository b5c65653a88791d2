// `stitchcuda verify TASK.py|RUN_DIR PROGRAM.cu...`: capture the task (or reuse a run directory's
// capture), copy the program into a new attempt directory, run the Verifier (verify/verifier.h) and
// write verify.json, feedback.json and events. Exit 0 passed, 1 anything else, 2 bad input.
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/task_capture.h"
#include "harness/harness.h"
#include "run/run_dir.h"
#include "util/fs.h"
#include "verify/build_cache.h"
#include "verify/feedback.h"
#include "verify/gpu_info.h"
#include "verify/verifier.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

struct VerifyCommandOptions {
  std::string target;  // TASK.py or a run directory
  std::vector<std::string> programs;
  std::string track = "fp32";
  std::string arch;
  std::string runs_dir = "runs";
  int sets = 3;
  int iters = 50;
  double timeout_s = 120;
  bool json = false;
  bool no_baselines = false;
  std::vector<std::string> include_dirs;  // -I: where the program's other headers live
  std::vector<std::string> libraries;
  std::string profile;
  std::string build_cache;
  bool no_build_cache = false;
};

fs::path runner_executable() {
  if (const char* path = std::getenv("STITCH_RUNNER")) return path;
  return executable_dir() / "stitch-runner";
}

// One clear line for input the command cannot take; empty when everything is fine.
std::string check_inputs(const VerifyCommandOptions& options) {
  std::error_code ec;
  fs::path target = options.target;
  if (!fs::exists(target, ec)) return fmt::format("{}: no such file or directory", options.target);
  if (fs::is_directory(target, ec)) {
    if (!fs::is_regular_file(target / "graph.json", ec))
      return fmt::format(
          "{}: not a run directory (no graph.json); give a task .py or a run "
          "directory made by `stitchcuda capture`",
          options.target);
  } else if (target.extension() != ".py") {
    return fmt::format("{}: not a task (.py) or a run directory", options.target);
  }
  std::set<std::string> names;
  for (const auto& program : options.programs) {
    if (!fs::exists(program, ec)) return fmt::format("{}: no such file", program);
    if (!fs::is_regular_file(program, ec)) return fmt::format("{}: not a file", program);
    if (fs::path(program).extension() != ".cu")
      return fmt::format("{}: not a CUDA source (.cu); headers are found through its #includes",
                         program);
    if (!names.insert(fs::path(program).filename().string()).second)
      return fmt::format("{}: two program files have the same name", program);
  }
  return "";
}

// The capture: a new run directory captured from the task, or the given run directory.
Result<run::RunDir> prepare_run(const VerifyCommandOptions& options,
                                const harness::HarnessLocation& location, bool& bad_input) {
  fs::path target = options.target;
  if (fs::is_directory(target)) return run::RunDir::open_or_adopt(target);
  return capture_task_into_new_run(target, options.runs_dir, location, bad_input);
}

// The project's own headers (stitch/program.h) come from the compiler's include directories.
bool is_project_header(const fs::path& header, const std::vector<fs::path>& include_dirs) {
  for (const auto& dir : include_dirs) {
    if (dir.empty()) continue;
    fs::path relative = header.lexically_relative(fs::absolute(dir).lexically_normal());
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
                                   const std::vector<fs::path>& compiler_include_dirs,
                                   const std::vector<fs::path>& project_header_dirs,
                                   const std::vector<fs::path>& user_include_dirs) {
  CopiedProgram copied;
  std::vector<fs::path> search = user_include_dirs;
  search.insert(search.end(), compiler_include_dirs.begin(), compiler_include_dirs.end());
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
      if (!seen_headers.insert(absolute).second || is_project_header(absolute, project_header_dirs))
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

void print_report(const VerifyReport& report, const Feedback& feedback, const fs::path& attempt) {
  for (const auto& line : report.summary)
    fmt::print("{}\n", line);
  if (!feedback.suggestion.text.empty() && !report.passed())
    fmt::print("suggestion: {}\n", feedback.suggestion.text);
  fmt::print("details: {}\n", (attempt / "verify.json").string());
}

int run_verify(const VerifyCommandOptions& options) {
  if (std::string problem = check_inputs(options); !problem.empty()) {
    fmt::print(stderr, "error: {}\n", problem);
    return kExitBadInput;
  }
  auto track = parse_track(options.track);
  if (!track) {
    fmt::print(stderr, "error: unknown track '{}' (fp32, tf32, bf16)\n", options.track);
    return kExitBadInput;
  }
  auto location = harness::locate_harness();
  if (!location.ok()) {
    fmt::print(stderr, "error: {}\n", location.error().message);
    return kExitFailure;
  }
  bool bad_input = false;
  auto run = prepare_run(options, *location, bad_input);
  if (!run.ok()) {
    fmt::print(stderr, "error: {}\n", run.error().message);
    return bad_input ? kExitBadInput : kExitFailure;
  }
  auto attempt = run->new_attempt_dir();
  if (!attempt.ok()) {
    fmt::print(stderr, "error: {}\n", attempt.error().message);
    return kExitFailure;
  }

  SystemProcessRunner process_runner;
  NvccCompiler compiler(process_runner);
  std::vector<fs::path> user_include_dirs(options.include_dirs.begin(), options.include_dirs.end());
  auto copied = copy_program(options.programs, *attempt / "src", compiler.include_dirs(),
                             compiler.project_header_dirs(), user_include_dirs);
  if (!copied.ok()) {
    fmt::print(stderr, "error: {}\n", copied.error().message);
    return kExitFailure;
  }
  // Libraries follow from every header the program pulls in, the project's kernel headers
  // included (kernels/matmul.cuh brings cublasLt.h), though those are not statically checked.
  std::vector<fs::path> search = copied->include_dirs;
  for (const auto& dir : compiler.include_dirs())
    search.push_back(dir);
  std::set<std::string> libraries(options.libraries.begin(), options.libraries.end());
  for (const auto& library : detect_program_libraries(copied->sources, search))
    libraries.insert(library);

  VerifyRequest request;
  request.capture_dir = run->root();
  request.attempt_dir = *attempt;
  request.sources = copied->sources;
  request.headers = copied->headers;
  request.include_dirs = copied->include_dirs;
  request.libraries.assign(libraries.begin(), libraries.end());
  request.track = *track;
  request.arch = options.arch;
  request.gpu = query_gpu(0);

  VerifyOptions verify_options;
  verify_options.sets = options.sets;
  verify_options.timing_iters = options.iters;
  verify_options.runner_timeout_s = options.timeout_s;
  verify_options.baselines = !options.no_baselines;
  verify_options.runner_path = runner_executable();
  if (!options.no_build_cache)
    verify_options.build_cache_dir =
        options.build_cache.empty() ? default_build_cache_dir() : fs::path(options.build_cache);
  verify_options.worker_id = fmt::format("gpu{}", request.gpu ? request.gpu->device : 0);
  run::EventLog& events = run->events();
  verify_options.on_step = [&](const VerifyStep& step) {
    (void)events.append("verify.step", {{"step", step.name},
                                        {"seconds", step.seconds},
                                        {"status", step.status},
                                        {"detail", step.detail}});
    fmt::print(stderr, "  {:<14} {:>8.2f} s  {}{}\n", step.name, step.seconds, step.status,
               step.detail.empty() ? "" : "  " + step.detail.substr(0, 120));
  };

  ElfLibraryAuditor auditor;
  SandboxRunnerLauncher runner(process_runner);
  PythonLocation python{location->python, location->python_dir};
  PythonJudgeSession judge(python);
  PythonBaselineSource baselines(python, process_runner);
  Verifier verifier({compiler, auditor, runner, judge, &baselines}, verify_options);

  (void)events.append("verify.start", {{"attempt", attempt->filename().string()},
                                       {"sources", options.programs},
                                       {"track", options.track},
                                       {"gpu", request.gpu ? request.gpu->name : ""}});
  fmt::print(stderr, "verifying {} → {}\n", fmt::join(options.programs, " "), attempt->string());
  auto report = verifier.verify(request);
  if (!report.ok()) {
    (void)events.append("verify.failed", {{"message", report.error().message}});
    fmt::print(stderr, "error: {}\n", report.error().message);
    return kExitFailure;
  }

  std::optional<ProfileSummary> profile;
  if (!options.profile.empty()) {
    auto read = read_profile_summary(options.profile);
    if (read.ok())
      profile = *read;
    else
      fmt::print(stderr, "warning: ignoring the profile: {}\n", read.error().message);
  }
  Feedback feedback = build_feedback(*report, profile);
  (void)write_file_atomic(*attempt / "feedback.json", feedback_to_json(feedback).dump(2) + "\n");

  nlohmann::json outcome =
      report->outcome ? nlohmann::json(outcome_name(*report->outcome)) : nlohmann::json(nullptr);
  (void)events.append("verify.done", {{"attempt", attempt->filename().string()},
                                      {"state", verify_state_name(report->state)},
                                      {"outcome", outcome},
                                      {"reason", report->reason}});
  (void)run->set_status(report->state == VerifyState::infrastructure_error
                            ? run::RunStatus::failed
                            : run::RunStatus::complete,
                        {{"stage", "verify"},
                         {"attempt", attempt->filename().string()},
                         {"state", verify_state_name(report->state)},
                         {"outcome", outcome}});
  if (options.json)
    fmt::print("{}\n", verify_report_to_json(*report).dump(2));
  else
    print_report(*report, feedback, *attempt);
  return report->passed() ? kExitOk : kExitFailure;
}

}  // namespace

CommandAction setup_verify(CLI::App& app) {
  auto options = std::make_shared<VerifyCommandOptions>();
  app.add_option("target", options->target,
                 "The task (a KernelBench-style .py, captured first) or a run directory holding "
                 "its capture")
      ->required();
  app.add_option("programs", options->programs, "The program: one or more .cu files")->required();
  app.add_option("--track", options->track, "Precision track: fp32, tf32 or bf16")
      ->capture_default_str();
  app.add_option("--arch", options->arch, "nvcc target (default: the GPU's, else sm_90)");
  app.add_option("--runs-dir", options->runs_dir, "Where run directories are created")
      ->capture_default_str();
  app.add_option("--sets", options->sets, "Correctness input sets drawn by the judge")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--iters", options->iters, "Timed iterations")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--timeout", options->timeout_s, "Seconds allowed for the runner")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--json", options->json, "Print verify.json instead of the summary");
  app.add_flag("--no-baselines", options->no_baselines,
               "Skip the eager / torch.compile baseline timings (no speedups)");
  app.add_option("-I,--include-dir", options->include_dirs,
                 "Directory searched for the program's quoted #includes (repeatable); headers "
                 "found there are statically checked too")
      ->check(CLI::ExistingDirectory);
  app.add_option("--lib", options->libraries,
                 "Extra library to link (-l); cuBLAS(Lt)/cuDNN/... are detected from #includes");
  app.add_option("--profile", options->profile,
                 "A profile.json (from `stitchcuda profile`) for the feedback");
  app.add_option(
      "--build-cache", options->build_cache,
      "Build cache directory (default $STITCH_BUILD_CACHE or ~/.cache/stitchcuda/builds)");
  app.add_flag("--no-build-cache", options->no_build_cache, "Build into the attempt directory");
  return [options]() -> int { return run_verify(*options); };
}

}  // namespace stitch::cli
