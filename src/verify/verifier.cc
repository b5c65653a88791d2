// The Verifier's steps and their routing into an Outcome; see verifier.h.
#include "verify/verifier.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "util/fs.h"
#include "verify/build/build_cache.h"
#include "verify/checks/library_audit.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The first decision wins: a later step never overrides why verification already ended.
bool decided(const VerifyReport& report) {
  return report.outcome.has_value() || report.state != VerifyState::verified;
}

void decide(VerifyReport& report, Outcome outcome, std::string reason) {
  if (decided(report)) return;
  report.outcome = outcome;
  report.reason = std::move(reason);
}

void fail_infrastructure(VerifyReport& report, std::string reason) {
  if (decided(report)) return;
  report.state = VerifyState::infrastructure_error;
  report.reason = std::move(reason);
}

// A path as findings and verify.json show it: relative to the attempt directory when inside it.
std::string display_path(const fs::path& path, const fs::path& attempt_dir) {
  fs::path relative = fs::absolute(path).lexically_normal().lexically_relative(
      fs::absolute(attempt_dir).lexically_normal());
  if (relative.empty() || *relative.begin() == "..") return path.filename().string();
  return relative.string();
}

std::string first_error(const BuildResult& build) {
  for (const auto& d : build.diagnostics)
    if (d.severity == "error")
      return d.line > 0 ? fmt::format("{}:{}: {}", d.file, d.line, d.message)
                        : fmt::format("{}: {}", d.file, d.message);
  return build.failure.empty() ? "the build failed" : build.failure;
}

std::string finding_reason(const FindingRecord& record) {
  return fmt::format("{} ({}): {}", enum_name(record.finding.kind), record.origin,
                     record.finding.detail);
}

const FindingRecord* first_fatal(const std::vector<FindingRecord>& findings, size_t from = 0) {
  for (size_t i = from; i < findings.size(); ++i)
    if (findings[i].finding.fatal) return &findings[i];
  return nullptr;
}

double median_of(std::vector<int> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

Result<std::vector<HackFinding>> ElfLibraryAuditor::audit(const fs::path& library) {
  return audit_library(library);
}

Result<RunnerRun> SandboxRunnerLauncher::run(const RunnerInvocation& invocation) {
  return run_runner(runner_, invocation);
}

struct Verifier::Context {
  const VerifyRequest& request;
  VerifyReport report;
  fs::path library;
  std::optional<JudgeReady> ready;
};

namespace {

void record_step(VerifyReport& report, const VerifyOptions& options, std::string name,
                 double seconds, std::string status = "ok", std::string detail = "") {
  report.steps.push_back({std::move(name), seconds, std::move(status), std::move(detail)});
  if (options.on_step) options.on_step(report.steps.back());
}

void begin_step(const VerifyOptions& options, const std::string& name) {
  if (options.on_step_start) options.on_step_start(name);
}

}  // namespace

bool Verifier::build(Context& context) {
  const VerifyRequest& request = context.request;
  VerifyReport& report = context.report;
  begin_step(options_, "build");
  double started = now_s();
  BuildRequest build_request;
  build_request.sources = request.sources;
  build_request.arch = report.arch;
  build_request.libraries = request.libraries;
  build_request.include_dirs = request.include_dirs;
  build_request.timeout_s = options_.build_timeout_s;
  build_request.allow_incomplete_sandbox =
      options_.insecure_sandbox.waives(sandbox::Layer::compiler);
  build_request.output_path = request.attempt_dir / "build" / "program.so";

  Result<BuildResult> built = build_maybe_cached(deps_.compiler, build_request,
                                                 options_.build_cache_dir, options_.worker_id);
  if (!built.ok()) {
    fail_infrastructure(report, "build: " + built.error().message);
    record_step(report, options_, "build", now_s() - started, "failed", built.error().message);
    return false;
  }
  (void)write_file_atomic(request.attempt_dir / "build.log", built->log);
  (void)write_file_atomic(request.attempt_dir / "build.json",
                          build_result_to_json(*built).dump(2) + "\n");
  report.built = built->ok;
  report.build_cache_hit = built->cache_hit;
  report.build_seconds = built->seconds;
  report.library_path = built->library_path.string();
  report.build_failure = built->failure;
  report.build_command = built->command;
  report.build_sandbox = built->sandbox_layers;
  if (!built->sandbox_layers.empty())  // a compile that ran without a layer only when waived
    for (const auto& name : sandbox::find_layer_gaps(built->sandbox_layers,
                                                     sandbox::kRequiredCompilerLayers, {})
                                .missing)
      report.insecure_sandbox.push_back("compiler." + name);
  report.diagnostics = built->diagnostics;
  report.kernels = built->kernels;
  if (!built->ok) {
    decide(report, Outcome::compile_error,
           built->timed_out ? "the build timed out" : first_error(*built));
    record_step(report, options_, "build", now_s() - started, "failed", first_error(*built));
    return false;
  }
  context.library = fs::absolute(built->library_path);
  record_step(report, options_, "build", now_s() - started, "ok",
              built->cache_hit ? "cache hit" : "");
  return true;
}

void Verifier::check_statically(Context& context) {
  const VerifyRequest& request = context.request;
  VerifyReport& report = context.report;
  begin_step(options_, "static_checks");
  double started = now_s();
  std::vector<SourceFile> files;
  std::vector<fs::path> paths = request.sources;
  paths.insert(paths.end(), request.headers.begin(), request.headers.end());
  for (const auto& path : paths) {
    auto text = read_file(path);
    if (!text.ok()) {
      fail_infrastructure(report, "static checks: " + text.error().message);
      continue;
    }
    files.push_back({display_path(path, request.attempt_dir), std::move(*text)});
  }
  size_t before = report.findings.size();
  const auto shown = [&](const fs::path& path) { return display_path(path, request.attempt_dir); };
  for (auto& finding : check_include_directives(
           paths, build_include_roots(deps_.compiler, request.sources, request.include_dirs), shown))
    report.findings.push_back({"source", std::move(finding)});
  for (auto& finding : check_sources(files, request.track))
    report.findings.push_back({"source", std::move(finding)});
  record_step(report, options_, "static_checks", now_s() - started, "ok",
              fmt::format("{} findings", report.findings.size() - before));

  if (context.library.empty()) {
    record_step(report, options_, "library_audit", 0, "skipped", "nothing was built");
  } else {
    begin_step(options_, "library_audit");
    started = now_s();
    size_t audit_start = report.findings.size();
    auto audited = deps_.auditor.audit(context.library);
    if (!audited.ok()) {
      // Unaudited code never runs; but an unreadable library is no evidence of a hack either.
      fail_infrastructure(report, "library audit: " + audited.error().message);
      record_step(report, options_, "library_audit", now_s() - started, "failed",
                  audited.error().message);
    } else {
      for (auto& finding : *audited) report.findings.push_back({"library", std::move(finding)});
      record_step(report, options_, "library_audit", now_s() - started, "ok",
                  fmt::format("{} findings", report.findings.size() - audit_start));
    }
  }
  if (const FindingRecord* fatal = first_fatal(report.findings, before)) {
    // A hack that also fails to compile is reported as the hack: the reason must name it.
    if (report.outcome == Outcome::compile_error) report.outcome.reset();
    decide(report, Outcome::hacked, finding_reason(*fatal));
  }
}

BaselineRequest Verifier::baseline_request(const Context& context, bool cache_only) const {
  BaselineRequest request;
  request.graph_dir = context.request.capture_dir;
  request.track = context.request.track;
  const char* stem = cache_only ? "baseline-cache" : "baseline";
  request.out_path = context.request.attempt_dir / fmt::format("{}.json", stem);
  request.log_path = context.request.attempt_dir / fmt::format("{}.log", stem);
  request.iters = options_.timing_iters;
  request.warmup = options_.warmup;
  request.timing_sets = options_.timing_sets;
  request.device = options_.judge_device;
  request.timeout_s = options_.baseline_timeout_s;
  request.cache_only = cache_only;
  return request;
}

std::optional<std::future<Result<BaselineReport>>> Verifier::look_up_baselines(
    const Context& context) {
  if (!options_.baselines || deps_.baselines == nullptr) return std::nullopt;
  return std::async(std::launch::async,
                    [source = deps_.baselines, request = baseline_request(context, true)] {
                      return source->baseline(request);
                    });
}

void Verifier::time_baselines(Context& context,
                              std::optional<std::future<Result<BaselineReport>>>& lookup,
                              bool may_time) {
  VerifyReport& report = context.report;
  if (!lookup) {
    record_step(report, options_, "baseline", 0, "skipped", "baselines not requested");
    return;
  }
  begin_step(options_, "baseline");
  double started = now_s();
  Result<BaselineReport> baseline = lookup->get();
  bool complete = baseline.ok() && baseline->missing.empty() && !baseline->modes.empty();
  if (!complete && !may_time) {
    record_step(report, options_, "baseline", now_s() - started, "skipped",
                "not cached, and the judge did not start");
    return;
  }
  if (!complete) baseline = deps_.baselines->baseline(baseline_request(context, false));
  if (!baseline.ok()) {
    report.baseline_error = baseline.error().message;
    record_step(report, options_, "baseline", now_s() - started, "failed", report.baseline_error);
    return;
  }
  report.baselines = baseline->modes;
  report.baselines_from_cache = complete || baseline->from_cache;
  std::string failed;
  for (const auto& mode : baseline->modes)
    if (!mode.stats) failed += fmt::format("{}{}: {}", failed.empty() ? "" : "; ", mode.mode,
                                           mode.error);
  if (!failed.empty()) report.baseline_error = failed;
  record_step(report, options_, "baseline", now_s() - started, failed.empty() ? "ok" : "failed",
              complete ? "from the judge's cache, read while the judge started"
              : baseline->from_cache ? "from the judge's cache"
                                     : failed);
}

bool Verifier::start_judge(Context& context) {
  VerifyReport& report = context.report;
  JudgeServeRequest request;
  request.graph_dir = context.request.capture_dir;
  request.work_dir = context.request.attempt_dir / "judge";
  request.track = context.request.track;
  request.sets = options_.sets;
  request.timing_sets = options_.timing_sets;
  request.spot_slots = options_.spot_slots;
  request.device = options_.judge_device;
  request.log_path = context.request.attempt_dir / "judge.log";
  request.ready_timeout_s = options_.judge_ready_timeout_s;
  request.extra_args = options_.judge_extra_args;
  request.own_pid_namespace = use_verification_pid_namespace();
  begin_step(options_, "harness_start");
  double started = now_s();
  auto ready = deps_.judge.start(request);
  if (!ready.ok()) {
    fail_infrastructure(report, ready.error().message);
    record_step(report, options_, "harness_start", now_s() - started, "failed",
                ready.error().message);
    return false;
  }
  context.ready = *ready;
  double setup_s = std::clamp(ready->setup_s, 0.0, ready->start_s);
  record_step(report, options_, "harness_start", ready->start_s - setup_s);
  record_step(report, options_, "reference", setup_s, "ok",
              ready->memory_note.empty()
                  ? fmt::format("{} check sets, {} spot slots", ready->sets, ready->spot_slots)
                  : ready->memory_note);
  return true;
}

namespace {

// The runner's invocation for this verification: the judge's slots, a fresh sandbox directory,
// and limits derived from the runner's whole time limit.
RunnerInvocation runner_invocation(const VerifyOptions& options, const fs::path& attempt,
                                   const fs::path& library, const JudgeReady& ready) {
  RunnerInvocation invocation;
  invocation.runner = options.runner_path.empty() ? fs::path() : fs::absolute(options.runner_path);
  invocation.program = library;
  invocation.slots = ready.slots_path;
  invocation.result = attempt / "runner.json";
  std::string sandbox_template = (fs::temp_directory_path() / "stitch-sandbox-XXXXXX").string();
  if (mkdtemp(sandbox_template.data()) != nullptr) invocation.work_dir = sandbox_template;
  invocation.timing_iters = options.timing_iters;
  invocation.warmup = options.warmup;
  invocation.insecure_sandbox = options.insecure_sandbox;
  // The judge may have sized the sets down to the GPU's memory (large tensors): the runner's
  // timing sets follow.
  invocation.timing_sets = ready.timing_sets > 0 ? std::min(ready.timing_sets, options.timing_sets)
                                                 : options.timing_sets;
  // The runner's own watchdogs fire well before the wall-clock kill, so a hang is reported by the
  // runner (with the phase it hung in) rather than only by the kill.
  double limit = options.runner_timeout_s;
  invocation.timeout_s = limit;
  invocation.call_timeout_s = std::min(60.0, 0.4 * limit);
  invocation.init_timeout_s = std::min(300.0, 0.4 * limit);
  invocation.idle_timeout_s = std::clamp(0.1 * limit, 1.0, 10.0);
  return invocation;
}

// What runner.json says of the run: status, launches, determinism and the timing (on the basis
// timing_basis.h picks; a synced basis caused by off-stream work is also a note).
void take_runner_report(const RunnerReport& runner, VerifyReport& report) {
  report.runner_status = std::string(enum_name(runner.status));
  report.runner_sandbox = runner.sandbox_layers;
  report.init_ms = runner.init_ms;
  if (runner.launches_available && !runner.launches_per_forward.empty())
    report.launches_per_forward = median_of(runner.launches_per_forward);
  report.kernel_launches = runner.kernel_names;
  report.deterministic = !runner.determinism_checked || runner.deterministic;
  report.timing = timing_stats(runner.gpu_ms);
  report.synced_timing = timing_stats(runner.synced_ms);
  report.wall_timing = timing_stats(runner.wall_ms);
  TimingBasisDecision basis =
      choose_timing_basis(runner.gpu_ms, runner.synced_ms, runner.empty_sync_gap_ms);
  report.timing_basis = basis.basis;
  report.timing_basis_detail = basis.detail;
  if (basis.basis == TimingBasis::synced && basis.excess_gap_ms > 0 &&
      !runner.empty_sync_gap_ms.empty())
    report.findings.push_back({"runner", {HackKind::side_stream, basis.detail, false}});
}

// The runner's findings, and a note when check set 0 was not bit-identical on its repeat.
void take_runner_findings(const RunnerRun& run, VerifyReport& report) {
  for (const auto& finding : run.verdict.findings)
    report.findings.push_back({"runner", finding});
  if (!run.report || report.deterministic) return;
  double max_diff = 0;
  for (double diff : run.report->determinism_max_abs_diff)
    max_diff = std::max(max_diff, diff);
  report.findings.push_back(
      {"runner",
       {HackKind::undefined_behaviour,
        fmt::format("check set 0 gave different bits on its second run (max |diff| {:.3g}): "
                    "a race or an order-dependent reduction",
                    max_diff),
        false}});
}

// Routes the runner's verdict; true when the run passed and the comparison is next. Findings
// from `first_runner_finding` on are the runner's.
bool route_runner_verdict(const RunnerRun& run, size_t first_runner_finding, VerifyReport& report) {
  if (run.verdict.runner_fault) {
    fail_infrastructure(report, "runner: " + run.verdict.reason);
    return false;
  }
  if (run.verdict.outcome == Outcome::hacked) {
    const FindingRecord* fatal = first_fatal(report.findings, first_runner_finding);
    decide(report, Outcome::hacked, fatal ? finding_reason(*fatal) : run.verdict.reason);
    return false;
  }
  if (run.verdict.outcome != Outcome::passed) {
    decide(report, run.verdict.outcome, run.verdict.reason);
    return false;
  }
  return true;
}

}  // namespace

bool Verifier::run_runner_step(Context& context) {
  VerifyReport& report = context.report;
  const fs::path& attempt = context.request.attempt_dir;
  RunnerInvocation invocation =
      runner_invocation(options_, attempt, context.library, *context.ready);
  invocation.judge_pid = deps_.judge.namespace_pid();  // the verification's PID namespace
  begin_step(options_, "runner");
  double started = now_s();
  auto run = deps_.runner.run(invocation);
  std::error_code ec;
  if (!invocation.work_dir.empty()) fs::remove_all(invocation.work_dir, ec);
  if (!run.ok()) {
    fail_infrastructure(report, "runner: " + run.error().message);
    record_step(report, options_, "runner", now_s() - started, "failed", run.error().message);
    return false;
  }
  (void)write_file_atomic(attempt / "runner.log",
                          run->process.stdout_text + run->process.stderr_text);
  report.runner_ran = true;
  report.runner_reason = run->verdict.reason;
  for (const auto& layer : run->verdict.insecure_layers) report.insecure_sandbox.push_back(layer);
  if (run->report)
    take_runner_report(*run->report, report);
  else
    report.runner_status = run->process.describe();
  size_t before = report.findings.size();
  take_runner_findings(*run, report);
  std::string status = run->verdict.outcome == Outcome::passed ? "ok" : "failed";
  record_step(report, options_, "runner", now_s() - started, status, run->verdict.reason);
  return route_runner_verdict(*run, before, report);
}

void Verifier::compare(Context& context) {
  VerifyReport& report = context.report;
  begin_step(options_, "comparison");
  double started = now_s();
  auto comparison = deps_.judge.compare(options_.compare_timeout_s);
  if (!comparison.ok()) {
    fail_infrastructure(report, comparison.error().message);
    record_step(report, options_, "comparison", now_s() - started, "failed",
                comparison.error().message);
    return;
  }
  report.compared = true;
  report.rel_err_norm_max = comparison->rel_err_norm_max;
  report.comparison_messages = comparison->messages;
  report.degenerate_reasons = comparison->degenerate_reasons;
  size_t judge_findings = report.findings.size();
  std::string first_wrong;
  for (const auto& set : comparison->sets) {
    for (const auto& output : set.outputs) {
      report.output_checks.push_back(
          {set.where, output.check, output.elements, output.message, output.degenerate_reference,
           output.exact_reference_elements});
      if (!output.check.passed && first_wrong.empty())
        first_wrong = fmt::format("{}: {}", set.where,
                                  output.message.empty() ? "output check failed" : output.message);
    }
    if (!set.inputs_unchanged)
      report.findings.push_back(
          {"judge",
           {HackKind::mutates_inputs,
            fmt::format("{}: the judge's copy of the inputs changed while the runner ran",
                        set.where),
            true}});
    if (!set.passed && first_wrong.empty())
      first_wrong = fmt::format("{}: {}", set.where,
                                set.message.empty() ? "check failed" : set.message);
  }
  for (const auto& finding : comparison->findings) report.findings.push_back({"judge", finding});
  record_step(report, options_, "comparison", now_s() - started,
              comparison->passed ? "ok" : "failed");
  if (const FindingRecord* fatal = first_fatal(report.findings, judge_findings)) {
    decide(report, Outcome::hacked, finding_reason(*fatal));
  } else if (!comparison->passed) {
    if (first_wrong.empty() && !comparison->messages.empty()) first_wrong = comparison->messages[0];
    decide(report, Outcome::wrong, first_wrong.empty() ? "the judge's comparison failed"
                                                       : first_wrong);
  } else {
    decide(report, Outcome::passed, "");
  }
}

Result<VerifyReport> Verifier::verify(const VerifyRequest& given) {
  if (given.sources.empty()) return make_error("verify: no program sources");
  // Absolute paths throughout: the runner runs in its own sandbox directory.
  VerifyRequest request = given;
  request.capture_dir = fs::absolute(given.capture_dir);
  request.attempt_dir = fs::absolute(given.attempt_dir);
  for (auto& source : request.sources) source = fs::absolute(source);
  for (auto& header : request.headers) header = fs::absolute(header);
  STITCH_TRY(make_dirs(request.attempt_dir));
  Context context{request, {}, {}, std::nullopt};
  VerifyReport& report = context.report;
  report.track = request.track;
  report.arch = !request.arch.empty() ? request.arch
                : request.gpu        ? request.gpu->arch()
                                     : std::string(kDefaultArch);
  report.gpu_name = request.gpu ? request.gpu->name : "";
  report.capture_dir = request.capture_dir.string();
  for (const auto& source : request.sources)
    report.sources.push_back(display_path(source, request.attempt_dir));

  // The judge is stopped on every path out of here, including ones added later.
  struct JudgeStopper {
    JudgeSession& judge;
    ~JudgeStopper() { judge.stop(); }
  } stopper{deps_.judge};

  build(context);
  check_statically(context);
  if (!decided(report) && !request.gpu) {
    report.state = VerifyState::no_gpu;
    report.reason = "no CUDA device: built and statically checked; run on a GPU machine to verify";
  }
  if (!decided(report)) {
    // Baselines come before any candidate code runs (HACKS.md row 19). The cache is read while
    // the judge starts; what it lacks is timed once the judge is up (idle) and before the runner.
    auto lookup = look_up_baselines(context);
    bool started = start_judge(context);
    time_baselines(context, lookup, started);
    if (started && run_runner_step(context)) compare(context);
    if (started) begin_step(options_, "judge_stop");
    double stop_started = now_s();
    deps_.judge.stop();
    if (started) record_step(report, options_, "judge_stop", now_s() - stop_started);
  }
  if (report.passed() && report.reported_timing())
    report.speedups = compute_speedups(report.baselines, report.reported_timing()->median_ms);
  report.summary = summarize(report);
  STITCH_TRY(write_verify_json(request.attempt_dir, report));
  return report;
}

std::vector<std::string> detect_program_libraries(const std::vector<fs::path>& sources,
                                                  const std::vector<fs::path>& include_dirs) {
  std::vector<SourceFile> texts;
  std::set<fs::path> scanned;
  for (const auto& source : sources) {
    std::vector<fs::path> files = {source};
    for (const auto& header : local_includes(source, include_dirs)) files.push_back(header);
    for (const auto& path : files)
      if (scanned.insert(fs::absolute(path).lexically_normal()).second)
        if (auto text = read_file(path); text.ok()) texts.push_back({path.string(), *text});
  }
  return detect_libraries(texts);
}

std::vector<std::string> program_link_libraries(const std::vector<std::string>& declared,
                                                const std::vector<fs::path>& sources,
                                                const std::vector<fs::path>& include_dirs) {
  std::set<std::string> libraries(declared.begin(), declared.end());
  for (const auto& library : detect_program_libraries(sources, include_dirs))
    libraries.insert(library);
  return {libraries.begin(), libraries.end()};
}

std::vector<std::string> detect_libraries(const std::vector<SourceFile>& sources) {
  static const std::regex include_line(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  static const std::vector<std::pair<std::string, std::string>> kHeaders = {
      {"cublasLt.h", "cublasLt"}, {"cublas_v2.h", "cublas"},     {"cublas.h", "cublas"},
      {"cublasXt.h", "cublas"},   {"cudnn.h", "cudnn"},          {"curand.h", "curand"},
      {"cufft.h", "cufft"},       {"cusparse.h", "cusparse"},    {"cusolverDn.h", "cusolver"},
      {"cusparseLt.h", "cusparseLt"}};
  std::set<std::string> libraries;
  for (const auto& source : sources) {
    size_t start = 0;
    while (start < source.text.size()) {
      size_t end = source.text.find('\n', start);
      if (end == std::string::npos) end = source.text.size();
      std::string line = source.text.substr(start, end - start);
      std::smatch match;
      if (line.find("include") != std::string::npos && std::regex_search(line, match, include_line)) {
        std::string header = fs::path(match[1].str()).filename().string();
        for (const auto& [name, library] : kHeaders)
          if (header == name) libraries.insert(library);
      }
      start = end + 1;
    }
  }
  return {libraries.begin(), libraries.end()};
}

Status write_verify_json(const fs::path& attempt_dir, VerifyReport& report) {
  if (report.summary.empty()) report.summary = summarize(report);
  return write_verify_report(attempt_dir / "verify.json", report);
}

}  // namespace stitch
