// `profile` (profile.h).
#include "app/profile.h"

#include <unistd.h>

#include <fmt/format.h>

#include "app/target.h"
#include "app/task_capture.h"
#include "harness/harness.h"
#include "run/run_dir.h"
#include "util/fs.h"
#include "util/process.h"
#include "verify/build/build_cache.h"
#include "verify/build/compiler.h"
#include "verify/build/gpu_info.h"
#include "verify/judge/judge_client.h"  // python_module_spec
#include "verify/profile/profile_run.h"
#include "verify/verifier.h"  // detect_program_libraries

namespace stitch::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The options besides the target that the command cannot take.
Status check_options(const ProfileOptions& options) {
  constexpr ErrorKind bad = ErrorKind::bad_input;
  if (options.reference) {
    if (!options.program.empty())
      return make_error(bad, "--reference profiles the task's PyTorch reference: give no program");
    return {};
  }
  if (options.program.empty())
    return make_error(bad, "a program (.cu) to profile is needed (or --reference)");
  std::error_code ec;
  const fs::path program = options.program;
  if (!fs::is_regular_file(program, ec))
    return make_error(bad, "{}: no such file", options.program);
  if (program.extension() != ".cu" && program.extension() != ".so")
    return make_error(bad, "{}: not a CUDA source (.cu) or a built program (.so)",
                      options.program);
  if (options.top < 0) return make_error(bad, "--top must be >= 0");
  if ((options.peak_tflops > 0) != (options.peak_gbps > 0))
    return make_error(bad, "--peak-tflops and --peak-gbps go together");
  return {};
}

// --reference needs no capture, only the task beside the run: a new run directory holding task.py.
Result<run::RunDir> copy_task_into_new_run(const fs::path& task, const fs::path& runs_dir) {
  STITCH_ASSIGN_OR_RETURN(run::RunDir run,
                          run::RunDir::create(runs_dir, run::task_name_from_path(task)));
  STITCH_ASSIGN_OR_RETURN(std::string source, read_file(task));
  STITCH_TRY(run.write_text("task.py", source));
  return run;
}

// A scratch directory inside the run directory, removed unless kept (moved into the attempt).
struct ScratchDir {
  fs::path path;
  ~ScratchDir() {
    std::error_code ignored;
    if (!path.empty()) fs::remove_all(path, ignored);
  }
};

Result<fs::path> build_program(const ProfileOptions& options, const ProfileTools& tools) {
  fs::path program = fs::absolute(options.program);
  if (program.extension() == ".so") return program;
  STITCH_ASSIGN_OR_RETURN(BuildCache cache, BuildCache::open(options.build_cache.empty()
                                                                 ? default_build_cache_dir()
                                                                 : fs::path(options.build_cache),
                                                             "gpu0", tools.compiler));
  BuildRequest request;
  request.sources = {program};
  request.arch = options.arch.empty() ? tools.arch : options.arch;
  request.libraries = detect_program_libraries({program}, tools.compiler.include_dirs());
  say(options.progress, fmt::format("building {} for {}", program.string(), request.arch));
  STITCH_ASSIGN_OR_RETURN(BuildResult built, cache.build(request));
  if (!built.ok) {
    std::string errors;
    for (const Diagnostic& d : built.diagnostics)
      if (d.severity == "error") errors += fmt::format("\n  {}:{}: {}", d.file, d.line, d.message);
    return make_error("{} does not build ({}){}", program.string(), built.failure,
                      errors.empty() ? "\n" + built.log.substr(0, 2000) : errors);
  }
  return built.library_path;
}

Result<Profiled> profile_into_attempt(run::RunDir& run, const ProfileOptions& options,
                                      const ProfileTools& tools) {
  STITCH_ASSIGN_OR_RETURN(json graph, run.read_json("graph.json"));
  STITCH_ASSIGN_OR_RETURN(json slots, self_test_slots_from_graph(graph));
  STITCH_ASSIGN_OR_RETURN(fs::path library, build_program(options, tools));
  ScratchDir scratch{run.root() / fmt::format(".profile-{}", getpid())};
  std::error_code ignored;
  fs::remove_all(scratch.path, ignored);
  STITCH_TRY(make_dirs(scratch.path));
  ProfileRequest request;
  request.runner = tools.runner;
  request.program = library;
  request.slots = scratch.path / "slots.json";
  request.work_dir = scratch.path;
  request.warmup = options.warmup;
  request.top_kernels = options.top;
  request.use_ncu = !options.no_ncu && options.top > 0;
  request.runner_timeout_s = options.timeout_s;
  request.ncu_timeout_s = options.ncu_timeout_s;
  if (options.peak_tflops > 0)
    request.peaks = GpuPeaks{"override", options.peak_tflops * 1e12, options.peak_gbps * 1e9,
                             "--peak-tflops / --peak-gbps"};
  STITCH_TRY(write_file_atomic(request.slots, slots.dump(1) + "\n"));
  say(options.progress,
      fmt::format("profiling {}{}", options.program,
                  request.use_ncu ? fmt::format(" (ncu on the top {} kernels)", options.top) : ""));
  STITCH_ASSIGN_OR_RETURN(ProfileReport report, tools.profilers.program(request));
  report.program = fs::absolute(options.program).string();
  json document = profile_to_json(report);

  // Only a complete profile gets an attempt directory.
  STITCH_ASSIGN_OR_RETURN(fs::path attempt, run.new_attempt_dir());
  // The raw material (timeline, ncu logs) goes with the profile; the sandboxes do not.
  for (const char* sandbox : {"sandbox", "ncu-sandbox"})
    fs::remove_all(scratch.path / sandbox, ignored);
  std::error_code moved;
  fs::rename(scratch.path, attempt / "profile", moved);
  if (!moved) scratch.path.clear();  // kept: nothing for the destructor to remove
  if (fs::path(options.program).extension() == ".cu") {
    STITCH_TRY(make_dirs(attempt / "src"));
    fs::copy_file(options.program, attempt / "src" / fs::path(options.program).filename(),
                  fs::copy_options::overwrite_existing, ignored);
  }
  fs::path written = attempt / "profile.json";
  STITCH_TRY(write_file_atomic(written, document.dump(2) + "\n"));
  return Profiled{std::move(report), std::move(document), written};
}

Result<Profiled> profile_reference_into(run::RunDir& run, const ProfileOptions& options,
                                        Profilers& profilers) {
  ScratchDir scratch{run.root() / fmt::format(".profile-{}", getpid())};
  STITCH_TRY(make_dirs(scratch.path));
  ReferenceProfileRequest request;
  request.task = run.root() / "task.py";
  request.out = scratch.path / "profile.json";
  request.warmup = options.warmup;
  request.track = options.track;
  request.timeout_s = options.timeout_s;
  say(options.progress, fmt::format("profiling the PyTorch reference of {}", options.target));
  STITCH_TRY(profilers.reference(request));
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(request.out));
  json document = json::parse(text, nullptr, false);
  STITCH_ASSIGN_OR_RETURN(ProfileReport report, profile_from_json(document));
  fs::path written = run.root() / "reference" / "profile.json";
  STITCH_TRY(make_dirs(written.parent_path()));
  STITCH_TRY(write_file_atomic(written, document.dump(2) + "\n"));
  return Profiled{std::move(report), std::move(document), written};
}

// Logs the outcome in events.jsonl, and settles summary.json when this use made the run directory
// (a run directory it was given keeps its status).
void record_outcome(run::RunDir& run, bool created_run, const Result<Profiled>& outcome,
                    const ProfileOptions& options) {
  const std::string stage = options.reference ? "profile-reference" : "profile";
  if (!outcome) {
    (void)run.events().append(stage + ".failed", {{"message", outcome.error().message}});
    if (created_run)
      (void)run.set_status(run::RunStatus::failed,
                           {{"stage", stage}, {"message", outcome.error().message}});
    return;
  }
  const ProfileReport& report = outcome->report;
  (void)run.events().append(
      stage + ".done",
      {{"profile", outcome->written.string()},
       {"forward_ms", report.forward_ns / 1e6},
       {"bottleneck", std::string(enum_name(report.forward_bottleneck))}});
  if (created_run) (void)run.set_status(run::RunStatus::complete, {{"stage", stage}});
}

TargetRules profile_target_rules(const ProfileOptions& options) {
  TargetRules rules;
  rules.needed_file = options.reference ? "task.py" : "graph.json";
  rules.adopt_bare_capture = true;
  return rules;
}

Status check_inputs(const ProfileOptions& options) {
  STITCH_TRY(classify_target(options.target, profile_target_rules(options)));
  return check_options(options);
}

// The profilers of this machine: stitch-runner (with ncu) through profile_program, and
// python -m stitch_harness.profile_reference.
class SystemProfilers final : public Profilers {
 public:
  explicit SystemProfilers(std::optional<harness::HarnessLocation> harness)
      : harness_(std::move(harness)) {}
  Result<ProfileReport> program(const ProfileRequest& request) override {
    return profile_program(process_runner_, request);
  }
  Status reference(const ReferenceProfileRequest& request) override {
    if (!harness_) return make_error(ErrorKind::machine, "the Python harness was not located");
    ProcessSpec spec = python_module_spec(
        {harness_->python, harness_->python_dir}, "stitch_harness.profile_reference",
        {"--task", request.task.string(), "--out", request.out.string(), "--warmup",
         std::to_string(request.warmup), "--track", request.track});
    spec.timeout_s = task_timeout_s(request.timeout_s);
    STITCH_ASSIGN_OR_RETURN(ProcessResult process, process_runner_.run(spec));
    if (!process.succeeded())
      return make_error("profile_reference {}: {}", process.describe(), process.stderr_text);
    return {};
  }
  SystemProcessRunner& process_runner() { return process_runner_; }

 private:
  std::optional<harness::HarnessLocation> harness_;
  SystemProcessRunner process_runner_;
};

// What profiling needs from this machine, found before a run directory is made for nothing.
struct MachineTools {
  std::optional<fs::path> runner;                   // stitch-runner (programs)
  std::optional<harness::HarnessLocation> harness;  // captures and the reference
};

Result<MachineTools> locate_tools(const ProfileOptions& options) {
  // Before anything is created: without a GPU there is nothing to measure.
  if (!query_gpu(0))
    return make_error(ErrorKind::machine,
                      "no CUDA GPU visible (no driver or no device): profiling runs the program on "
                      "a GPU; nothing was written");
  MachineTools tools;
  if (!options.reference) {
    tools.runner = locate_stitch_runner();
    if (!tools.runner)
      return make_error(ErrorKind::machine,
                        "stitch-runner not found (build it, or set STITCH_RUNNER)");
  }
  if (options.reference || !fs::is_directory(options.target)) {
    STITCH_ASSIGN_OR_RETURN(tools.harness, harness::locate_harness());
  }
  return tools;
}

}  // namespace

Result<Profiled> profile_target(const ProfileOptions& options, const ProfileTools& tools) {
  const TargetRules rules = profile_target_rules(options);
  STITCH_TRY(check_inputs(options));
  const fs::path runs_dir = options.runs_dir;
  TaskCapture capture = [&](const fs::path& task) -> Result<run::RunDir> {
    if (options.reference) return copy_task_into_new_run(task, runs_dir);
    auto run = tools.capture(task);
    // profile has always reported every capture failure alike (exit 1)
    if (!run.ok()) return run.error().with_kind(ErrorKind::work_failed);
    return run;
  };
  STITCH_ASSIGN_OR_RETURN(ResolvedTarget target, resolve_target(options.target, rules, capture));
  run::RunDir& run = *target.run;
  Result<Profiled> outcome = options.reference
                                 ? profile_reference_into(run, options, tools.profilers)
                                 : profile_into_attempt(run, options, tools);
  record_outcome(run, target.created_run, outcome, options);
  return outcome;
}

Result<Profiled> profile_target(const ProfileOptions& options) {
  STITCH_TRY(check_inputs(options));  // before the machine is asked
  STITCH_ASSIGN_OR_RETURN(MachineTools machine, locate_tools(options));
  SystemProfilers profilers(machine.harness);
  NvccCompiler compiler(profilers.process_runner());
  TaskCapture capture = [&](const fs::path& task) -> Result<run::RunDir> {
    harness::PythonHarness torch_harness(*machine.harness, profilers.process_runner());
    return capture_task_into_new_run(task, options.runs_dir, torch_harness, options.progress);
  };
  const ProfileTools tools{capture, compiler, profilers, machine.runner.value_or(fs::path()),
                           options.arch.empty() ? detect_arch(0) : options.arch};
  return profile_target(options, tools);
}

}  // namespace stitch::app
