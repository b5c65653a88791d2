// Launching stitch-runner and classifying its run; see runner_client.h (runner.json itself is read
// by runner/runner_report.h).
#include "verify/judge/runner_client.h"

#include <signal.h>
#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "util/fs.h"
#include "util/pid_namespace.h"

extern char** environ;

namespace stitch {
namespace {

// Variables naming the orchestrator's Python or the run never reach the candidate's process.
bool scrubbed_name(std::string_view name) {
  for (std::string_view prefix : {"PYTHON", "TORCH", "STITCH", "CONDA", "VIRTUAL_ENV", "PYTEST"})
    if (name.starts_with(prefix)) return true;
  return false;
}

std::string signal_name(int signal_number) {
  const char* name = sigabbrev_np(signal_number);
  return name ? fmt::format("SIG{}", name) : fmt::format("signal {}", signal_number);
}

}  // namespace

double supervisor_deadline_s(double timeout_s) {
  return timeout_s > 0 ? std::max(0.9 * timeout_s, timeout_s - 10) : 0;
}

ProcessSpec build_runner_spec(const RunnerInvocation& invocation, const std::string& nonce) {
  ProcessSpec spec;
  auto number = [](double value) { return fmt::format("{}", value); };
  spec.argv = {invocation.runner.string(), "--program", invocation.program.string(), "--result",
               invocation.result.string()};
  if (invocation.self_test) spec.argv.push_back("--self-test");
  if (!invocation.slots.empty()) {
    spec.argv.push_back("--slots");
    spec.argv.push_back(invocation.slots.string());
  }
  for (auto [flag, value] : std::initializer_list<std::pair<const char*, std::string>>{
           {"--timing-iters", std::to_string(invocation.timing_iters)},
           {"--warmup", std::to_string(invocation.warmup)},
           {"--timing-sets", std::to_string(invocation.timing_sets)},
           {"--call-timeout-s", number(invocation.call_timeout_s)},
           {"--init-timeout-s", number(invocation.init_timeout_s)},
           {"--idle-timeout-s", number(invocation.idle_timeout_s)},
           {"--deadline-s", number(supervisor_deadline_s(invocation.timeout_s))}}) {
    spec.argv.push_back(flag);
    spec.argv.push_back(value);
  }
  if (!invocation.work_dir.empty()) {
    spec.argv.push_back("--work-dir");
    spec.argv.push_back(invocation.work_dir.string());
    spec.cwd = invocation.work_dir;
  }
  if (std::string ours = pid_namespace_id(); !ours.empty()) {
    spec.argv.push_back("--orchestrator-pid-namespace");
    spec.argv.push_back(ours);
  }
  if (invocation.judge_pid > 0) spec.pid_namespace = PidNamespace::join(invocation.judge_pid);
  spec.argv.push_back("--nonce-stdin");
  // A waived layer is not set up at all: the escape hatch for a machine where one breaks CUDA.
  for (const std::string& layer : sandbox::insecure_layer_names(invocation.insecure_sandbox)) {
    spec.argv.push_back("--insecure-sandbox");
    spec.argv.push_back(layer);
  }
  spec.stdin_text = nonce + "\n";
  spec.argv.insert(spec.argv.end(), invocation.extra_args.begin(), invocation.extra_args.end());
  spec.timeout_s = invocation.timeout_s;
  spec.kill_grace_s = 2.0;
  spec.limits.no_core_dumps = true;
  spec.limits.file_size_bytes = 1ull << 30;
  spec.limits.open_files = 4096;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text = *entry;
    std::string_view name = text.substr(0, text.find('='));
    if (scrubbed_name(name)) spec.env_remove.emplace_back(name);
  }
  return spec;
}

namespace {

// The runner ended without a runner.json that reads back.
RunnerVerdict verdict_without_report(const ProcessResult& process, const Error& report_error) {
  RunnerVerdict verdict;
  verdict.outcome = Outcome::runtime_error;
  if (process.term_signal != 0) {
    verdict.reason = fmt::format("the runner died of {} (the candidate crashed it)",
                                 signal_name(process.term_signal));
  } else if (process.exit_code == 2) {
    verdict.runner_fault = true;
    verdict.reason = "stitch-runner rejected its command line: " + process.stderr_text;
  } else {
    verdict.reason = fmt::format("the runner exited with code {} without a valid runner.json ({})",
                                 process.exit_code, report_error.message);
  }
  return verdict;
}

}  // namespace

RunnerVerdict classify_runner_run(const ProcessResult& process, const Result<RunnerReport>& report,
                                  std::string_view expected_nonce,
                                  const sandbox::InsecureLayers& insecure) {
  RunnerVerdict verdict;
  if (report.ok()) {
    verdict.findings = report->findings;
    if (!expected_nonce.empty() && report->nonce != expected_nonce) {
      HackFinding forged{HackKind::tampers_judge,
                         "runner.json does not carry this run's nonce: written by someone else",
                         true};
      verdict.findings.push_back(forged);
      verdict.outcome = Outcome::hacked;
      verdict.reason = forged.detail;
      return verdict;
    }
    for (const auto& finding : report->findings) {
      if (!finding.fatal) continue;
      verdict.outcome = Outcome::hacked;
      verdict.reason = fmt::format("{}: {}", enum_name(finding.kind), finding.detail);
      return verdict;
    }
  }
  if (process.timed_out) {
    verdict.outcome = Outcome::timeout;
    verdict.reason = fmt::format("runner killed after {:.1f} s (wall-clock limit)", process.wall_s);
    return verdict;
  }
  if (!report.ok()) return verdict_without_report(process, report.error());
  switch (report->status) {
    case RunnerStatus::ok:
      break;
    case RunnerStatus::timeout:
      verdict.outcome = Outcome::timeout;
      verdict.reason = report->message;
      return verdict;
    case RunnerStatus::crashed:  // the supervisor saw the worker die or cheat: the candidate's
                                 // doing
      verdict.outcome = Outcome::runtime_error;
      verdict.reason = fmt::format("crashed: {}", report->message);
      return verdict;
    case RunnerStatus::no_device:
    case RunnerStatus::setup_failed:
      verdict.outcome = Outcome::runtime_error;
      verdict.runner_fault = true;
      verdict.reason = fmt::format("{}: {}", enum_name(report->status), report->message);
      return verdict;
    default:
      verdict.outcome = Outcome::runtime_error;
      verdict.reason = fmt::format("{}: {}", enum_name(report->status), report->message);
      return verdict;
  }
  if (process.term_signal != 0) {  // after runner.json: in stitch_destroy or at exit
    verdict.outcome = Outcome::runtime_error;
    verdict.reason = fmt::format("the runner died of {} after writing runner.json",
                                 signal_name(process.term_signal));
    return verdict;
  }
  sandbox::LayerGaps gaps =
      sandbox::find_layer_gaps(report->sandbox_layers, sandbox::kRequiredRunnerLayers, insecure);
  if (!gaps.missing.empty()) {  // fail closed: nothing the candidate did is trusted
    verdict.outcome = Outcome::runtime_error;
    verdict.runner_fault = true;
    verdict.reason = sandbox::incomplete_reason(gaps, report->sandbox_layers);
    return verdict;
  }
  verdict.insecure_layers = gaps.waived;
  verdict.outcome = Outcome::passed;
  return verdict;
}

std::string make_nonce() {
  std::array<unsigned char, 16> bytes{};
  if (getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()))
    for (auto& byte : bytes)
      byte = static_cast<unsigned char>(std::rand());
  std::string text;
  for (unsigned char byte : bytes)
    text += fmt::format("{:02x}", byte);
  return text;
}

Result<RunnerRun> run_runner(ProcessRunner& process_runner, const RunnerInvocation& invocation) {
  std::string nonce = invocation.nonce.empty() ? make_nonce() : invocation.nonce;
  std::error_code ec;
  std::filesystem::remove(invocation.result, ec);  // never read a previous run's file
  if (!invocation.work_dir.empty()) STITCH_TRY(make_dirs(invocation.work_dir));
  if (invocation.result.has_parent_path()) STITCH_TRY(make_dirs(invocation.result.parent_path()));
  STITCH_ASSIGN_OR_RETURN(ProcessResult process,
                          process_runner.run(build_runner_spec(invocation, nonce)));
  RunnerRun run;
  run.process = std::move(process);
  Result<RunnerReport> report = read_runner_report(invocation.result);
  if (report.ok())
    run.report = *report;
  else
    run.report_error = report.error().message;
  run.verdict = classify_runner_run(run.process, report, nonce, invocation.insecure_sandbox);
  return run;
}

}  // namespace stitch
