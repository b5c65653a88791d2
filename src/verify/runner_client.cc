// Launching stitch-runner and reading runner.json; see runner_client.h.
#include "verify/runner_client.h"

#include <signal.h>
#include <sys/random.h>

#include <array>
#include <cstring>

#include <nlohmann/json.hpp>

#include "util/fs.h"

extern char** environ;

namespace stitch {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 9> kStatusNames = {
    "ok",      "init_failed", "forward_failed", "cuda_error", "abi_mismatch", "dlopen_failed",
    "timeout", "no_device",   "setup_failed"};
static_assert(kStatusNames.size() == static_cast<size_t>(RunnerStatus::setup_failed) + 1);

// Variables naming the orchestrator's Python or the run never reach the candidate's process.
bool scrubbed_name(std::string_view name) {
  for (std::string_view prefix : {"PYTHON", "TORCH", "STITCH", "CONDA", "VIRTUAL_ENV", "PYTEST"})
    if (name.starts_with(prefix)) return true;
  return false;
}

template <typename T>
std::vector<T> array_of(const json& parent, const char* key) {
  std::vector<T> values;
  if (!parent.is_object() || !parent.contains(key) || !parent[key].is_array()) return values;
  for (const auto& value : parent[key])
    if (value.is_number()) values.push_back(value.get<T>());
  return values;
}

const json& child(const json& parent, const char* key) {
  static const json empty = json::object();
  if (parent.is_object() && parent.contains(key) && parent[key].is_object()) return parent[key];
  return empty;
}

Result<RunnerReport> parse_document(const json& doc) {
  if (!doc.is_object()) return make_error("runner.json: not a JSON object");
  if (doc.value("format", std::string()) != "stitchcuda.runner")
    return make_error("runner.json: format is not stitchcuda.runner");
  if (doc.value("version", 0) != 1)
    return make_error("runner.json: version {} (expected 1)", doc.value("version", json()).dump());
  RunnerReport report;
  std::string status = doc.value("status", std::string());
  auto parsed_status = runner_status_from_name(status);
  if (!parsed_status) return make_error("runner.json: unknown status '{}'", status);
  report.status = *parsed_status;
  report.message = doc.value("message", std::string());
  report.phase = doc.value("phase", std::string());
  report.nonce = doc.value("nonce", std::string());
  report.self_test = doc.value("self_test", false);
  report.device_name = child(doc, "device").value("name", std::string());
  report.init_ms = doc.value("init_ms", 0.0);

  if (doc.contains("findings")) {
    if (!doc["findings"].is_array()) return make_error("runner.json: findings is not an array");
    for (const auto& entry : doc["findings"]) {
      std::string kind = entry.value("kind", std::string());
      auto parsed = hack_kind_from_name(kind);
      HackFinding finding{parsed.value_or(HackKind::undefined_behaviour),
                          entry.value("detail", std::string()), entry.value("fatal", true)};
      // A kind this build does not know is kept, fatal, with its name: never silently dropped.
      if (!parsed) finding.detail = fmt::format("[{}] {}", kind, finding.detail);
      report.findings.push_back(std::move(finding));
    }
  }
  if (doc.contains("check_sets") && doc["check_sets"].is_array()) {
    for (const auto& entry : doc["check_sets"]) {
      RunnerCheckSet set;
      set.index = entry.value("index", 0);
      set.run = entry.value("run", 0);
      set.canaries_intact = entry.value("canaries_intact", true);
      set.inputs_unchanged = entry.value("inputs_unchanged", true);
      set.poison_remaining = array_of<int64_t>(entry, "poison_remaining");
      set.unjoined_elements = array_of<int64_t>(entry, "unjoined_elements");
      set.launches = entry.value("launches", -1);
      set.gpu_ms = entry.value("gpu_ms", 0.0);
      set.copied_to_slot = entry.value("copied_to_slot", false);
      report.check_sets.push_back(std::move(set));
    }
  }
  const json& determinism = child(doc, "determinism");
  report.determinism_checked = determinism.value("checked", false);
  report.deterministic = determinism.value("identical", true);
  if (determinism.contains("outputs") && determinism["outputs"].is_array())
    for (const auto& output : determinism["outputs"]) {
      report.determinism_bit_mismatches.push_back(output.value("bit_mismatches", int64_t{0}));
      report.determinism_max_abs_diff.push_back(output.value("max_abs_diff", 0.0));
    }
  const json& timing = child(doc, "timing");
  report.gpu_ms = array_of<double>(timing, "gpu_ms");
  report.synced_ms = array_of<double>(timing, "synced_ms");
  report.empty_sync_gap_ms = array_of<double>(timing, "empty_sync_gap_ms");
  report.wall_ms = array_of<double>(timing, "wall_ms");
  report.spot_iterations = array_of<int>(timing, "spot_iterations");
  report.timing_canaries_intact = timing.value("canaries_intact", true);
  report.timing_inputs_unchanged = timing.value("inputs_unchanged", true);
  if (timing.contains("rechecks") && timing["rechecks"].is_array())
    for (const auto& entry : timing["rechecks"])
      report.rechecks.push_back({entry.value("iteration", 0), entry.value("output", 0),
                                 entry.value("bit_mismatches", int64_t{0}),
                                 entry.value("tolerance_mismatches", int64_t{0}),
                                 entry.value("max_abs_diff", 0.0)});
  const json& launches = child(doc, "launches");
  report.launches_available = launches.value("available", false);
  report.launches_detail = launches.value("detail", std::string());
  report.launches_per_forward = array_of<int>(launches, "per_forward");
  const json& names = child(launches, "kernel_names");
  for (const auto& [name, count] : names.items())
    if (count.is_number_integer()) report.kernel_names.emplace_back(name, count.get<int>());
  const json& sandbox = child(doc, "sandbox");
  report.network_namespace = sandbox.value("network_namespace", false);
  report.seccomp = sandbox.value("seccomp", false);
  const json& threads = child(doc, "threads");
  report.threads_before_dlopen = threads.value("before_dlopen", 0);
  report.threads_after_init = threads.value("after_init", 0);
  return report;
}

std::string signal_name(int signal_number) {
  const char* name = sigabbrev_np(signal_number);
  return name ? fmt::format("SIG{}", name) : fmt::format("signal {}", signal_number);
}

}  // namespace

std::string_view runner_status_name(RunnerStatus status) {
  return kStatusNames[static_cast<size_t>(status)];
}

std::optional<RunnerStatus> runner_status_from_name(std::string_view name) {
  for (size_t i = 0; i < kStatusNames.size(); ++i)
    if (kStatusNames[i] == name) return static_cast<RunnerStatus>(i);
  return std::nullopt;
}

bool RunnerReport::canaries_intact() const {
  for (const auto& set : check_sets)
    if (!set.canaries_intact) return false;
  return timing_canaries_intact;
}

bool RunnerReport::inputs_unchanged() const {
  for (const auto& set : check_sets)
    if (!set.inputs_unchanged) return false;
  return timing_inputs_unchanged;
}

bool RunnerReport::has_fatal_finding() const {
  for (const auto& finding : findings)
    if (finding.fatal) return true;
  return false;
}

Result<RunnerReport> parse_runner_report(std::string_view json_text) {
  json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return make_error("runner.json: not valid JSON");
  try {  // nlohmann's typed accessors throw on a mistyped field
    return parse_document(doc);
  } catch (const std::exception& error) {
    return make_error("runner.json: malformed: {}", error.what());
  }
}

Result<RunnerReport> read_runner_report(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return make_error("{}: missing (the runner did not write it)", path.string());
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(path));
  auto report = parse_runner_report(text);
  if (!report) return report.error().with_context(path.string());
  return report;
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
           {"--idle-timeout-s", number(invocation.idle_timeout_s)}}) {
    spec.argv.push_back(flag);
    spec.argv.push_back(value);
  }
  if (!invocation.work_dir.empty()) {
    spec.argv.push_back("--work-dir");
    spec.argv.push_back(invocation.work_dir.string());
    spec.cwd = invocation.work_dir;
  }
  spec.argv.push_back("--nonce-stdin");
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

RunnerVerdict classify_runner_run(const ProcessResult& process, const Result<RunnerReport>& report,
                                  std::string_view expected_nonce) {
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
      verdict.reason = fmt::format("{}: {}", hack_kind_name(finding.kind), finding.detail);
      return verdict;
    }
  }
  if (process.timed_out) {
    verdict.outcome = Outcome::timeout;
    verdict.reason = fmt::format("runner killed after {:.1f} s (wall-clock limit)", process.wall_s);
    return verdict;
  }
  if (!report.ok()) {
    verdict.outcome = Outcome::runtime_error;
    if (process.term_signal != 0) {
      verdict.reason = fmt::format("the runner died of {} (the candidate crashed it)",
                                   signal_name(process.term_signal));
    } else if (process.exit_code == 2) {
      verdict.runner_fault = true;
      verdict.reason = "stitch-runner rejected its command line: " + process.stderr_text;
    } else {
      verdict.reason = fmt::format(
          "the runner exited with code {} without a valid runner.json "
          "({})",
          process.exit_code, report.error().message);
    }
    return verdict;
  }
  switch (report->status) {
    case RunnerStatus::ok:
      break;
    case RunnerStatus::timeout:
      verdict.outcome = Outcome::timeout;
      verdict.reason = report->message;
      return verdict;
    case RunnerStatus::no_device:
    case RunnerStatus::setup_failed:
      verdict.outcome = Outcome::runtime_error;
      verdict.runner_fault = true;
      verdict.reason = fmt::format("{}: {}", runner_status_name(report->status), report->message);
      return verdict;
    default:
      verdict.outcome = Outcome::runtime_error;
      verdict.reason = fmt::format("{}: {}", runner_status_name(report->status), report->message);
      return verdict;
  }
  if (process.term_signal != 0) {  // after runner.json: in stitch_destroy or at exit
    verdict.outcome = Outcome::runtime_error;
    verdict.reason = fmt::format("the runner died of {} after writing runner.json",
                                 signal_name(process.term_signal));
    return verdict;
  }
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
  run.verdict = classify_runner_run(run.process, report, nonce);
  return run;
}

}  // namespace stitch
