// stitch-runner: the sandbox for one candidate program (DESIGN.md §4, docs/verify-protocol.md).
// Parses the command line and reads the nonce; the supervisor (supervisor.h) then forks the worker,
// which reads slots.json, enters the sandbox and hands over to Session for the phases, sending its
// report over the channel; the supervisor writes runner.json and its status becomes the exit code.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <optional>

#include <CLI/CLI.hpp>

#include "runner/options.h"
#include "runner/profile_session.h"
#include "runner/report.h"
#include "runner/sandbox.h"
#include "runner/session.h"
#include "runner/spec.h"
#include "runner/supervisor.h"
#include "runner/watchdog.h"
#include "runner/worker_isolation.h"

namespace {

using namespace stitch::runner;
namespace fs = std::filesystem;

constexpr const char* kDescription =
    "stitch-runner: loads one candidate StitchCUDA program (a .so exporting the ABI of "
    "include/stitch/program.h) inside a sandbox, runs its correctness and timing calls with the "
    "dynamic reward-hacking checks, and writes runner.json. With --slots it follows "
    "docs/verify-protocol.md (params, check inputs and output slots are the judge's CUDA IPC "
    "buffers); with --self-test it needs no judge: params and inputs are random, every phase "
    "still runs, outputs are checked by the runner alone.";

constexpr const char* kFooter =
    "Exit codes:\n"
    "  0  runner.json written, status ok (findings, if any, are in the file)\n"
    "  1  runner.json written, the candidate failed: init_failed, forward_failed, cuda_error,\n"
    "     abi_mismatch, dlopen_failed, or crashed (the worker died without a valid report)\n"
    "  2  usage error (bad or missing flags); nothing written\n"
    "  3  no CUDA device visible (status no_device); prints 'no CUDA device: ...'\n"
    "  4  setup failed (slots.json, sandbox, IPC handles, runner memory; status setup_failed)\n"
    "  5  a call, init or device idle check exceeded its limit, or the worker the supervisor's\n"
    "     --deadline-s (status timeout)\n"
    "  6  runner.json could not be written\n"
    "The candidate runs in a forked worker; runner.json is written by the supervisor, which never\n"
    "loads it (docs/verify-protocol.md, \"Supervisor and worker\").";

// What the watchdog thread needs to finish the process when the main thread is stuck.
struct ExitContext {
  ReportBuilder* report = nullptr;
  const SandboxReport* sandbox = nullptr;
  std::atomic<int> exit_code{kExitOk};
};
ExitContext exit_context;

void write_or_complain(ReportBuilder& report) {
  stitch::Status written = report.write();
  if (!written) {
    std::fprintf(stderr, "stitch-runner: cannot write runner.json: %s\n",
                 written.error().message.c_str());
    std::fflush(stderr);
    _exit(kExitReportUnwritable);
  }
}

[[noreturn]] void on_deadline(const Deadline& deadline) {
  if (!deadline.write_report) {  // runner.json is written; only the program's cleanup hangs
    kill_processes(list_child_processes());
    if (exit_context.sandbox) leave_sandbox(*exit_context.sandbox);
    _exit(exit_context.exit_code.load());
  }
  ReportBuilder& report = *exit_context.report;
  if (!deadline.finding_kind.empty())
    report.add_finding(deadline.finding_kind, deadline.finding_detail);
  std::string message =
      fmt::format("{} did not finish within {} s", deadline.label, deadline.seconds);
  report.set_status(RunStatus::timeout, message);
  write_or_complain(report);
  std::fprintf(stderr, "stitch-runner: timeout: %s\n", message.c_str());
  std::fflush(stderr);
  kill_processes(list_child_processes());
  if (exit_context.sandbox) leave_sandbox(*exit_context.sandbox);
  _exit(kExitTimeout);  // no destructors: the main thread is inside the driver or the program
}

int fail_setup(ReportBuilder& report, const std::string& message) {
  report.set_status(RunStatus::setup_failed, message);
  write_or_complain(report);
  std::fprintf(stderr, "stitch-runner: setup failed: %s\n", message.c_str());
  return kExitSetupFailed;
}

// Flags that main turns into RunnerOptions fields after parsing.
struct RawFlags {
  std::string counting = "untimed";
  std::string worker_pid_namespace = "auto";
  std::string seccomp_mode = "allowlist";
  std::vector<std::string> insecure_sandbox;
  bool no_network_isolation = false, no_seccomp = false;
  uint64_t seed = 0;
  CLI::Option* seed_option = nullptr;
};

// What to run and how: the program, its inputs, the timing and the limits of each call.
void add_run_options(CLI::App& app, RunnerOptions& options) {
  app.add_option("--program", options.program, "Candidate program (.so) to load")->required();
  app.add_option("--slots", options.slots,
                 "slots.json written by the judge (required unless --self-test; with --self-test "
                 "only its shapes, dtypes and distributions are used)");
  app.add_option("--result", options.result,
                 "Where runner.json goes (written atomically); default with --self-test: stdout");
  app.add_flag("--self-test", options.self_test,
               "Run without a judge: random params and inputs; without --slots the built-in "
               "spec (params scale, shift [1024]; x, y [4096, 1024] float32)");
  app.add_option("--check-sets", options.self_test_check_sets,
                 "--self-test only: number of check sets (set 0 runs twice)")
      ->capture_default_str();
  app.add_option("--timing-iters", options.timing_iters, "Timed iterations")->capture_default_str();
  app.add_option("--warmup", options.warmup, "Untimed warm-up iterations")->capture_default_str();
  app.add_option("--timing-sets", options.timing_sets,
                 "Private input sets the timed calls rotate through (re-randomised before each "
                 "call)")
      ->capture_default_str();
  app.add_option("--rechecks", options.rechecks,
                 "Timed iterations re-run on fresh buffers and compared (at least the number of "
                 "spot slots)")
      ->capture_default_str();
  app.add_option("--recheck-atol", options.recheck_atol, "Absolute tolerance of the recheck")
      ->capture_default_str();
  app.add_option("--recheck-rtol", options.recheck_rtol, "Relative tolerance of the recheck")
      ->capture_default_str();
  app.add_option("--init-timeout-s", options.init_timeout_s,
                 "Limit for dlopen and stitch_init (seconds)")
      ->capture_default_str();
  app.add_option("--call-timeout-s", options.call_timeout_s,
                 "Limit for one stitch_forward and its device synchronize (seconds)")
      ->capture_default_str();
  app.add_option("--idle-timeout-s", options.idle_timeout_s,
                 "Limit for the device to become idle after init and before timing; exceeding "
                 "it reports persistent_kernel (seconds)")
      ->capture_default_str();
  app.add_option("--guard-bytes", options.guard_bytes,
                 "Canary band before and after every buffer handed to the program (bytes)")
      ->capture_default_str();
}

// How the runner watches and confines the program, and the profile mode.
void add_sandbox_options(CLI::App& app, RunnerOptions& options, RawFlags& raw) {
  app.add_option("--launch-counting", raw.counting,
                 "CUPTI kernel counting: off, untimed (init, checks, warm-up), all (timed calls "
                 "too; adds launch overhead)")
      ->check(CLI::IsMember({"off", "untimed", "all"}))
      ->capture_default_str();
  app.add_option("--work-dir", options.work_dir,
                 "Sandbox working directory, emptied first (default: a fresh directory under "
                 "$TMPDIR, removed at exit)");
  app.add_option("--profile", options.profile,
                 "Profile instead of verifying: warm up (--warmup, at least 1), trace one "
                 "forward with CUPTI (kernels, copies, memsets, gaps, GPU busy time) and one more "
                 "for launch overhead, and write the timeline JSON here (format in "
                 "src/runner/profile_timeline.h)");
  app.add_option("--max-file-mb", options.max_file_mb, "RLIMIT_FSIZE (MiB)")->capture_default_str();
  app.add_option("--max-open-files", options.max_open_files, "RLIMIT_NOFILE")
      ->capture_default_str();
  app.add_flag("--no-network-isolation", raw.no_network_isolation,
               "Do not unshare the network namespace");
  app.add_flag("--no-seccomp", raw.no_seccomp,
               "Do not install the seccomp filter refusing fork/exec after CUDA is initialised");
  app.add_option("--seccomp-mode", raw.seccomp_mode,
                 "allowlist: only the calls a CUDA program needs pass; denylist: only the "
                 "dangerous ones and process clones are refused (a fallback while CUDA on some "
                 "machine needs a call the allowlist lacks; runner.json's findings name it)")
      ->check(CLI::IsMember({"allowlist", "denylist"}))
      ->capture_default_str();
  app.add_option("--insecure-sandbox", raw.insecure_sandbox,
                 "Do not set up this isolation layer of the worker (repeatable; a layer name of "
                 "src/sandbox/layers.h, or all): the orchestrator's --insecure-sandbox, passed on")
      ->allow_extra_args(false);
  app.add_flag("--under-profiler", options.under_profiler,
               "Nsight Compute started this runner: keep inherited descriptors and LD_PRELOAD "
               "(profiling a verified program only; implies nothing about its verdict)");
  app.add_flag("--nonce-stdin", options.nonce_stdin,
               "Read one line from stdin before loading anything and echo it in runner.json "
               "(lets the orchestrator tell the runner's file from a forged one; the supervisor "
               "keeps it, the worker never holds it)");
  app.add_option("--deadline-s", options.deadline_s,
                 "The supervisor's limit for the whole worker: killed after it, status timeout "
                 "(0: none)")
      ->capture_default_str();
  app.add_option("--worker-pid-namespace", raw.worker_pid_namespace,
                 "Fork the worker as PID 1 of its own PID namespace: on, off, or auto (on with "
                 "--self-test unless --under-profiler or --profile, whose worker keeps the host's /proc, "
                 "in which CUDA does not start; off with a judge: its CUDA IPC handles "
                 "open only within one PID namespace, which the orchestrator gives the judge and "
                 "the runner together)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  app.add_option("--orchestrator-pid-namespace", options.orchestrator_pid_namespace,
                 "The orchestrator's PID namespace (\"pid:[N]\"), so runner.json can say whether "
                 "the runner lives in another one");
  raw.seed_option =
      app.add_option("--seed", raw.seed,
                     "Fixed seed for the runner's generator (debugging; default /dev/urandom)");
}

// Parses and completes `options`; an exit code when the runner stops here (--help, bad usage).
std::optional<int> parse_command_line(int argc, char** argv, RunnerOptions& options) {
  CLI::App app{kDescription, "stitch-runner"};
  app.footer(kFooter);
  RawFlags raw;
  add_run_options(app, options);
  add_sandbox_options(app, options, raw);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);
    std::fprintf(stderr, "stitch-runner: %s\nRun with --help for usage.\n", error.what());
    return kExitUsage;
  }
  if (!options.self_test && (options.slots.empty() || options.result.empty())) {
    std::fprintf(stderr, "stitch-runner: --slots and --result are required without --self-test\n");
    return kExitUsage;
  }
  if (options.timing_sets < 1 || options.timing_iters < 0 || options.warmup < 0) {
    std::fprintf(stderr, "stitch-runner: --timing-sets must be >= 1, iterations >= 0\n");
    return kExitUsage;
  }
  options.launch_counting = raw.counting == "off"   ? LaunchCounting::off
                            : raw.counting == "all" ? LaunchCounting::all
                                                    : LaunchCounting::untimed;
  options.isolate_network = !raw.no_network_isolation;
  // Without a judge's handles to open (self-test), without a profiler to follow the worker, and
  // only where the worker gets its sandbox's mount view: CUDA needs the namespace's own /proc.
  options.worker_pid_namespace =
      raw.worker_pid_namespace == "on" ||
      (raw.worker_pid_namespace == "auto" && options.self_test && !options.under_profiler &&
       options.profile.empty());
  auto insecure = stitch::sandbox::parse_insecure_layers(raw.insecure_sandbox);
  if (!insecure) {
    std::fprintf(stderr, "stitch-runner: %s\n", insecure.error().message.c_str());
    return kExitUsage;
  }
  options.insecure_sandbox = *insecure;
  options.seccomp = !raw.no_seccomp && !insecure->waives(stitch::sandbox::Layer::seccomp);
  options.seccomp_mode = raw.seccomp_mode == "denylist" ? stitch::sandbox::SeccompMode::denylist
                                                        : stitch::sandbox::SeccompMode::allowlist;
  if (raw.no_network_isolation)
    options.insecure_sandbox.layers.push_back(stitch::sandbox::Layer::network_namespace);
  if (raw.seed_option->count() > 0) options.seed = raw.seed;
  // The sandbox changes directory: every path the runner needs later is made absolute now.
  options.program = fs::absolute(options.program);
  if (!options.result.empty()) options.result = fs::absolute(options.result);
  if (!options.slots.empty()) options.slots = fs::absolute(options.slots);
  if (!options.profile.empty()) options.profile = fs::absolute(options.profile);
  return std::nullopt;
}

// A verification (or self-test) isolates the worker with src/sandbox's layers; a profile run, of
// a program verified already and under a profiler that must follow it, keeps only enter_sandbox's.
bool isolates_worker(const RunnerOptions& options) {
  return options.profile.empty();
}

SandboxOptions sandbox_options(const RunnerOptions& options) {
  SandboxOptions sandbox;
  sandbox.work_dir = options.work_dir;
  sandbox.max_file_bytes = options.max_file_mb << 20;
  sandbox.max_open_files = options.max_open_files;
  // The isolation makes the network namespace itself, with the others.
  sandbox.isolate_network = options.isolate_network && !isolates_worker(options);
  sandbox.under_profiler = options.under_profiler;
  sandbox.keep_fd = 3;  // the channel to the supervisor
  for (const fs::path& path : {options.slots, options.result, options.program, options.profile})
    if (!path.empty()) sandbox.private_paths.push_back(path.parent_path().string());
  return sandbox;
}

void record_sandbox(ReportBuilder& report, const SandboxReport& sandbox) {
  report.update([&](nlohmann::json& doc) {
    doc["sandbox"] = {{"work_dir", sandbox.work_dir.string()},
                      {"network_namespace", sandbox.network_namespace},
                      {"network_detail", sandbox.network_detail},
                      {"removed_environment", sandbox.removed_environment},
                      {"notes", sandbox.notes}};
  });
}

// Runs the check (or profile) session inside the sandbox, writes runner.json, leaves the
// sandbox and exits with the session's code.
[[noreturn]] void run_and_exit(const RunnerOptions& options, RunSpec spec, ReportBuilder& report,
                               const SandboxReport& sandbox) {
  // Started after the sandbox: unsharing a user namespace needs a single-threaded process.
  Watchdog watchdog(on_deadline);
  std::optional<Session> session;
  std::optional<ProfileSession> profile;
  if (options.profile.empty())
    session.emplace(options, std::move(spec), report, watchdog);
  else
    profile.emplace(options, std::move(spec), report, watchdog);
  int code = session ? session->run() : profile->run();
  exit_context.exit_code = code;
  write_or_complain(report);
  if (code != kExitOk) {
    std::string status, message;
    report.update([&](nlohmann::json& doc) {
      status = doc["status"].get<std::string>();
      message = doc["message"].get<std::string>();
    });
    std::fprintf(stderr, "stitch-runner: %s: %s\n", status.c_str(), message.c_str());
  }
  if (session) session->finish();
  if (profile) profile->finish();
  leave_sandbox(sandbox);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);  // skips the program's static destructors and atexit handlers
}

// The worker's body (runs in the forked child; never sees the nonce): slots.json, the sandbox,
// the session; the report goes to the supervisor over `channel`.
int run_worker(const RunnerOptions& options, WorkerChannel& channel, int argc, char** argv) {
  ReportBuilder report(options.result);
  report.send_through(&channel);
  exit_context.report = &report;
  report.update([&](nlohmann::json& doc) {
    doc["self_test"] = options.self_test;
    doc["program"] = options.program.string();
  });

  auto spec = options.slots.empty()
                  ? stitch::Result<RunSpec>(default_self_test_spec(options.self_test_check_sets))
                  : load_slots(options.slots, options.self_test, options.self_test_check_sets);
  if (!spec) return fail_setup(report, spec.error().message);

  auto sandbox = enter_sandbox(sandbox_options(options), argc, argv);
  if (!sandbox) return fail_setup(report, sandbox.error().message);
  exit_context.sandbox = &*sandbox;
  record_sandbox(report, *sandbox);
  if (isolates_worker(options)) {
    // Before CUDA and the watchdog thread: the isolation needs a single-threaded process.
    auto layers = stitch::sandbox::apply_isolation(worker_isolation(
        sandbox->work_dir, options.program, channel.fd(), options.insecure_sandbox));
    report.update([&](nlohmann::json& doc) {
      for (const auto& layer : layers)
        doc["sandbox"]["layers"].push_back(stitch::sandbox::layer_to_json(layer));
    });
  }
  run_and_exit(options, std::move(*spec), report, *sandbox);
}

}  // namespace

int main(int argc, char** argv) {
  RunnerOptions options;
  if (std::optional<int> code = parse_command_line(argc, argv, options)) return *code;

  SecretNonce nonce;
  if (options.nonce_stdin) {
    if (stitch::Status read = nonce.read_line(0); !read) {
      std::fprintf(stderr, "stitch-runner: %s\n", read.error().message.c_str());
      return kExitSetupFailed;
    }
  }
  SupervisorOptions supervisor;
  supervisor.result = options.result;
  supervisor.deadline_s = options.deadline_s;
  supervisor.worker_pid_namespace =
      options.worker_pid_namespace ? WorkerPidNamespace::own : WorkerPidNamespace::inherit;
  supervisor.orchestrator_pid_namespace = options.orchestrator_pid_namespace;
  supervisor.verification = options.profile.empty();
  // The default working directory is the supervisor's to make and remove: an isolated worker
  // sees it only as a mount point of its own view, which it cannot remove.
  std::filesystem::path made_work_dir;
  if (options.work_dir.empty()) {
    auto made = create_temp_work_dir();
    if (!made) {
      std::fprintf(stderr, "stitch-runner: %s\n", made.error().message.c_str());
      return kExitSetupFailed;
    }
    options.work_dir = made_work_dir = *made;
  }
  int code = supervise(supervisor, nonce, [&](WorkerChannel& channel) {
    return run_worker(options, channel, argc, argv);
  });
  std::error_code ec;
  if (!made_work_dir.empty()) std::filesystem::remove_all(made_work_dir, ec);
  return code;
}
