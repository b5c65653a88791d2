// `stitchcuda profile TASK.py|RUN_DIR PROGRAM.cu`: build the program, trace one forward with CUPTI
// in stitch-runner (shapes from the capture's graph.json), read ncu counters for the top kernels,
// classify each kernel's bottleneck, write profile.json into a new attempt directory and print a
// table. `--reference` profiles the task's PyTorch reference instead (torch.profiler, through
// python/stitch_harness/profile_reference.py), into the run directory's reference/profile.json.
// Without a GPU it says so and exits 1 before writing anything.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/task_capture.h"
#include "harness/harness.h"
#include "run/run_dir.h"
#include "util/fs.h"
#include "util/process.h"
#include "verify/build_cache.h"
#include "verify/compiler.h"
#include "verify/gpu_info.h"
#include "verify/profile_report.h"
#include "verify/profile_run.h"
#include "verify/verifier.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ProfileCommandOptions {
  std::string target;   // TASK.py or RUN_DIR
  std::string program;  // PROGRAM.cu (or a built .so)
  bool reference = false;
  int top = 3;
  bool no_ncu = false;
  bool print_json = false;
  std::string runs_dir = "runs";
  int warmup = 3;
  std::string arch;
  double peak_tflops = 0;
  double peak_gbps = 0;
  double timeout_s = 600;
  double ncu_timeout_s = 600;
  std::string build_cache;
  std::string track = "fp32";
};

// One line for input the command cannot take; empty when it can.
std::string check_inputs(const ProfileCommandOptions& options) {
  std::error_code ec;
  fs::path target = options.target;
  if (!fs::exists(target, ec)) return fmt::format("{}: no such file or directory", options.target);
  if (fs::is_directory(target, ec)) {
    const char* needed = options.reference ? "task.py" : "graph.json";
    if (!fs::is_regular_file(target / needed, ec))
      return fmt::format(
          "{}: not a run directory (no {}); give a task .py or a run directory "
          "made by `stitchcuda capture`",
          options.target, needed);
  } else if (target.extension() != ".py") {
    return fmt::format("{}: not a task (.py) or a run directory", options.target);
  }
  if (options.reference) {
    if (!options.program.empty())
      return "--reference profiles the task's PyTorch reference: give no program";
    return "";
  }
  if (options.program.empty()) return "a program (.cu) to profile is needed (or --reference)";
  fs::path program = options.program;
  if (!fs::is_regular_file(program, ec)) return fmt::format("{}: no such file", options.program);
  if (program.extension() != ".cu" && program.extension() != ".so")
    return fmt::format("{}: not a CUDA source (.cu) or a built program (.so)", options.program);
  if (options.top < 0) return "--top must be >= 0";
  if ((options.peak_tflops > 0) != (options.peak_gbps > 0))
    return "--peak-tflops and --peak-gbps go together";
  return "";
}

// The capture: the given run directory, or a new one captured from the task (graph.json only:
// profiling needs the shapes, not reference outputs).
Result<run::RunDir> prepare_run(const ProfileCommandOptions& options,
                                const std::optional<harness::HarnessLocation>& location,
                                bool capture) {
  fs::path target = options.target;
  if (fs::is_directory(target)) return run::RunDir::open_or_adopt(target);
  if (capture) {
    bool bad_input = false;  // profile reports every capture failure alike
    return capture_task_into_new_run(target, options.runs_dir, *location, bad_input);
  }
  STITCH_ASSIGN_OR_RETURN(run::RunDir run,
                          run::RunDir::create(options.runs_dir, run::task_name_from_path(target)));
  STITCH_ASSIGN_OR_RETURN(std::string source, read_file(target));
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

Result<fs::path> build_program(const ProfileCommandOptions& options, ProcessRunner& runner) {
  fs::path program = fs::absolute(options.program);
  if (program.extension() == ".so") return program;
  NvccCompiler compiler(runner);
  STITCH_ASSIGN_OR_RETURN(BuildCache cache, BuildCache::open(options.build_cache.empty()
                                                                 ? default_build_cache_dir()
                                                                 : fs::path(options.build_cache),
                                                             "gpu0", compiler));
  BuildRequest request;
  request.sources = {program};
  request.arch = options.arch.empty() ? detect_arch(0) : options.arch;
  request.libraries = detect_program_libraries({program}, compiler.include_dirs());
  fmt::print(stderr, "building {} for {}\n", program.string(), request.arch);
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

struct Profiled {
  ProfileReport report;
  json document;
  fs::path written;
};

Result<Profiled> profile_into_attempt(run::RunDir& run, const ProfileCommandOptions& options,
                                      const fs::path& runner_path) {
  SystemProcessRunner process_runner;
  STITCH_ASSIGN_OR_RETURN(json graph, run.read_json("graph.json"));
  STITCH_ASSIGN_OR_RETURN(json slots, self_test_slots_from_graph(graph));
  STITCH_ASSIGN_OR_RETURN(fs::path library, build_program(options, process_runner));
  ScratchDir scratch{run.root() / fmt::format(".profile-{}", getpid())};
  std::error_code ignored;
  fs::remove_all(scratch.path, ignored);
  STITCH_TRY(make_dirs(scratch.path));
  ProfileRequest request;
  request.runner = runner_path;
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
  fmt::print(stderr, "profiling {}{}\n", options.program,
             request.use_ncu ? fmt::format(" (ncu on the top {} kernels)", options.top) : "");
  STITCH_ASSIGN_OR_RETURN(ProfileReport report, profile_program(process_runner, request));
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

Result<Profiled> profile_reference_into(run::RunDir& run, const ProfileCommandOptions& options,
                                        const harness::HarnessLocation& location) {
  ScratchDir scratch{run.root() / fmt::format(".profile-{}", getpid())};
  STITCH_TRY(make_dirs(scratch.path));
  fs::path out = scratch.path / "profile.json";
  ProcessSpec spec;
  spec.argv = {location.python,
               "-m",
               "stitch_harness.profile_reference",
               "--task",
               (run.root() / "task.py").string(),
               "--out",
               out.string(),
               "--warmup",
               std::to_string(options.warmup),
               "--track",
               options.track};
  std::string python_path = location.python_dir.string();
  if (const char* existing = std::getenv("PYTHONPATH")) python_path += std::string(":") + existing;
  spec.env["PYTHONPATH"] = python_path;
  spec.timeout_s = options.timeout_s;
  SystemProcessRunner process_runner;
  fmt::print(stderr, "profiling the PyTorch reference of {}\n", options.target);
  STITCH_ASSIGN_OR_RETURN(ProcessResult process, process_runner.run(spec));
  if (!process.succeeded())
    return make_error("profile_reference {}: {}", process.describe(), process.stderr_text);
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(out));
  json document = json::parse(text, nullptr, false);
  STITCH_ASSIGN_OR_RETURN(ProfileReport report, profile_from_json(document));
  fs::path written = run.root() / "reference" / "profile.json";
  STITCH_TRY(make_dirs(written.parent_path()));
  STITCH_TRY(write_file_atomic(written, document.dump(2) + "\n"));
  return Profiled{std::move(report), std::move(document), written};
}

// Prints the outcome, logs it in events.jsonl, and settles summary.json when this command made the
// run directory (a run directory it was given keeps its status).
int finish(run::RunDir& run, bool created_run, const Result<Profiled>& outcome,
           const ProfileCommandOptions& options) {
  const char* stage = options.reference ? "profile-reference" : "profile";
  if (!outcome) {
    fmt::print(stderr, "error: {}\n", outcome.error().message);
    (void)run.events().append(std::string(stage) + ".failed",
                              {{"message", outcome.error().message}});
    if (created_run)
      (void)run.set_status(run::RunStatus::failed,
                           {{"stage", stage}, {"message", outcome.error().message}});
    return kExitFailure;
  }
  const ProfileReport& report = outcome->report;
  (void)run.events().append(
      std::string(stage) + ".done",
      {{"profile", outcome->written.string()},
       {"forward_ms", report.forward_ns / 1e6},
       {"bottleneck", std::string(bottleneck_name(report.forward_bottleneck))}});
  if (created_run) (void)run.set_status(run::RunStatus::complete, {{"stage", stage}});
  if (options.print_json)
    fmt::print("{}\n", outcome->document.dump(2));
  else
    fmt::print("{}", format_profile_table(report));
  fmt::print(stderr, "profile: {}\n", outcome->written.string());
  return kExitOk;
}

int run_profile(const ProfileCommandOptions& options) {
  std::optional<fs::path> runner_path;
  std::optional<harness::HarnessLocation> location;
  // Needed by either mode: found before a run directory is made for nothing.
  if (!options.reference) {
    runner_path = locate_stitch_runner();
    if (!runner_path) {
      fmt::print(stderr, "error: stitch-runner not found (build it, or set STITCH_RUNNER)\n");
      return kExitFailure;
    }
  }
  if (options.reference || !fs::is_directory(options.target)) {
    auto located = harness::locate_harness();
    if (!located) {
      fmt::print(stderr, "error: {}\n", located.error().message);
      return kExitFailure;
    }
    location = *located;
  }
  bool created_run = !fs::is_directory(options.target);
  auto run = prepare_run(options, location, /*capture=*/!options.reference);
  if (!run) {
    fmt::print(stderr, "error: {}\n", run.error().message);
    return kExitFailure;
  }
  Result<Profiled> outcome = options.reference ? profile_reference_into(*run, options, *location)
                                               : profile_into_attempt(*run, options, *runner_path);
  return finish(*run, created_run, outcome, options);
}

}  // namespace

CommandAction setup_profile(CLI::App& app) {
  auto options = std::make_shared<ProfileCommandOptions>();
  app.add_option("target", options->target,
                 "The task (a KernelBench-style .py, captured first) or a run directory holding "
                 "its capture")
      ->required();
  app.add_option("program", options->program,
                 "The program to profile: a CUDA source (.cu, built with the build cache) or a "
                 "built program (.so)");
  app.add_flag("--reference", options->reference,
               "Profile the task's PyTorch reference (torch.profiler) instead of a program");
  app.add_option("--top", options->top, "Kernels (by time) to read ncu counters for")
      ->capture_default_str();
  app.add_flag("--no-ncu", options->no_ncu, "Timeline only: no Nsight Compute counters");
  app.add_flag("--json", options->print_json, "Print profile.json instead of the table");
  app.add_option("--runs-dir", options->runs_dir, "Where a task's run directory is created")
      ->capture_default_str();
  app.add_option("--warmup", options->warmup, "Untraced forwards before the traced one")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--arch", options->arch, "nvcc target (default: the GPU's)");
  app.add_option("--peak-tflops", options->peak_tflops,
                 "Peak FP32 TFLOP/s for the roofline (default: the table for the GPU's name)");
  app.add_option("--peak-gbps", options->peak_gbps, "Peak DRAM GB/s for the roofline");
  app.add_option("--timeout", options->timeout_s, "Seconds allowed for the traced run")
      ->capture_default_str();
  app.add_option("--ncu-timeout", options->ncu_timeout_s, "Seconds allowed per ncu run")
      ->capture_default_str();
  app.add_option("--build-cache", options->build_cache,
                 "Build cache directory (default: $STITCH_BUILD_CACHE or ~/.cache/stitchcuda)");
  app.add_option("--track", options->track, "--reference: precision track of the reference")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
      ->capture_default_str();
  return [options]() -> int {
    if (std::string problem = check_inputs(*options); !problem.empty()) {
      fmt::print(stderr, "error: {}\n", problem);
      return kExitBadInput;
    }
    // Before anything is created: without a GPU there is nothing to measure.
    if (!query_gpu(0)) {
      fmt::print(stderr,
                 "error: no CUDA GPU visible (no driver or no device): profiling runs the "
                 "program on a GPU; nothing was written\n");
      return kExitFailure;
    }
    return run_profile(*options);
  };
}

}  // namespace stitch::cli
