// The judge's process and JSON, seen from the orchestrator; see judge_client.h.
#include "verify/judge/judge_client.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "util/fs.h"
#include "util/pid_namespace.h"
#include "verify/judge/runner_client.h"

namespace stitch {
namespace {

using nlohmann::json;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The judge writes non-finite floats as null (strict JSON has no Infinity): an error that large.
double number_or_inf(const json& parent, const char* key, double missing = 0) {
  if (!parent.contains(key)) return missing;
  const json& value = parent.at(key);
  if (value.is_null()) return std::numeric_limits<double>::infinity();
  return value.get<double>();
}

// The last few non-empty lines of a log, joined with " | ", for one-line errors.
std::string log_tail(const std::filesystem::path& path, size_t lines = 3) {
  if (path.empty()) return "";
  auto text = read_file(path);
  if (!text.ok()) return "";
  std::vector<std::string> kept;
  size_t end = text->size();
  while (end > 0 && kept.size() < lines) {
    size_t start = text->rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string line = text->substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\n'))
      line.pop_back();
    if (!line.empty()) kept.insert(kept.begin(), line);
    if (start == 0) break;
    end = start - 1;
  }
  std::string joined;
  for (const auto& line : kept) joined += (joined.empty() ? "" : " | ") + line;
  return joined;
}

JudgeOutput parse_output(const json& entry) {
  JudgeOutput output;
  OutputCheck& check = output.check;
  check.output_index = entry.value("output_index", 0);
  check.passed = entry.value("passed", false);
  check.max_abs_error = number_or_inf(entry, "max_abs_error");
  check.max_abs_error_index = entry.value("max_abs_error_index", int64_t{-1});
  check.relative_error_norm = number_or_inf(entry, "relative_error_norm");
  check.mismatches = entry.value("mismatches", int64_t{0});
  check.first_mismatch_index = entry.value("first_mismatch_index", int64_t{-1});
  check.nan_or_inf = entry.value("nan_or_inf", int64_t{0});
  output.elements = entry.value("elements", int64_t{0});
  output.message = entry.value("message", std::string());
  output.degenerate_reference = entry.value("degenerate_reference", false);
  output.degenerate_reason = entry.value("degenerate_reason", std::string());
  output.exact_reference_elements = entry.value("exact_reference_elements", int64_t{0});
  return output;
}

JudgeSet parse_set(const json& entry, std::string where) {
  JudgeSet set;
  set.where = std::move(where);
  set.passed = entry.value("passed", false);
  set.inputs_unchanged = entry.value("inputs_unchanged", true);
  set.filled = entry.value("filled", true);
  set.message = entry.value("message", std::string());
  if (entry.contains("outputs") && entry["outputs"].is_array())
    for (const auto& output : entry["outputs"]) set.outputs.push_back(parse_output(output));
  return set;
}

std::vector<std::string> strings_of(const json& parent, const char* key) {
  std::vector<std::string> values;
  if (parent.contains(key) && parent[key].is_array())
    for (const auto& value : parent[key])
      if (value.is_string()) values.push_back(value.get<std::string>());
  return values;
}

TimingStats parse_stats(const json& stats) {
  TimingStats result;
  result.median_ms = number_or_inf(stats, "median_ms");
  result.p10_ms = number_or_inf(stats, "p10_ms");
  result.p90_ms = number_or_inf(stats, "p90_ms");
  result.min_ms = number_or_inf(stats, "min_ms");
  result.iterations = stats.value("iterations", 0);
  return result;
}

// The next stdout line before `deadline`. A judge that has exited reads as `closed` even when a
// process it started still holds its stdout open: waiting for that one would wait for nothing.
LineChild::ReadResult read_protocol_line(LineChild& child, double deadline) {
  while (true) {
    double slice = std::min(0.2, std::max(0.0, deadline - now_s()));
    LineChild::ReadResult read = child.read_line(slice);
    if (read.status != LineChild::ReadStatus::timeout) return read;
    if (child.exited()) {
      read = child.read_line(0.05);  // what it wrote just before exiting
      if (read.status == LineChild::ReadStatus::line) return read;
      return {LineChild::ReadStatus::closed, ""};
    }
    if (now_s() >= deadline) return read;
  }
}

int mode_rank(const std::string& mode) {
  constexpr std::array<std::string_view, 3> kOrder = {"eager", "compile", "reduce-overhead"};
  auto found = std::find(kOrder.begin(), kOrder.end(), mode);
  return static_cast<int>(found - kOrder.begin());
}

}  // namespace

Result<JudgeComparison> parse_judge_comparison(const json& result) {
  if (!result.is_object()) return make_error("judge comparison: not a JSON object");
  try {
    JudgeComparison comparison;
    if (!result.contains("passed") || !result["passed"].is_boolean())
      return make_error("judge comparison: no boolean 'passed'");
    comparison.passed = result["passed"].get<bool>();
    comparison.track = result.value("track", std::string());
    comparison.atol = result.value("atol", 0.0);
    comparison.rtol = result.value("rtol", 0.0);
    // null: the track has no relative-error-norm bound (tf32, bf16); 0 says "none" here.
    const json& norm_bound = result.contains("rel_err_norm_max") ? result["rel_err_norm_max"]
                                                                  : json();
    comparison.rel_err_norm_max = norm_bound.is_number() ? norm_bound.get<double>() : 0.0;
    if (result.contains("check_sets") && result["check_sets"].is_array())
      for (const auto& entry : result["check_sets"])
        comparison.sets.push_back(
            parse_set(entry, fmt::format("check set {}", entry.value("set", 0))));
    if (result.contains("spot_slots") && result["spot_slots"].is_array())
      for (const auto& entry : result["spot_slots"])
        comparison.sets.push_back(
            parse_set(entry, fmt::format("spot slot {}", entry.value("slot", 0))));
    if (result.contains("findings") && result["findings"].is_array()) {
      for (const auto& entry : result["findings"])
        comparison.findings.push_back(reported_finding(
            entry.value("kind", std::string()), entry.value("detail", std::string()),
            entry.value("fatal", true), HackKind::tampers_judge));
    }
    comparison.messages = strings_of(result, "messages");
    comparison.degenerate_reasons = strings_of(result, "degenerate_reasons");
    comparison.compare_s = result.value("compare_s", 0.0);
    if (!comparison.passed && comparison.sets.empty() && comparison.findings.empty())
      comparison.messages.push_back("the judge compared no outputs");
    return comparison;
  } catch (const std::exception& error) {
    return make_error("judge comparison: malformed: {}", error.what());
  }
}

// ---- PythonJudgeSession ------------------------------------------------------------------------

std::vector<std::string> PythonJudgeSession::serve_command(const JudgeServeRequest& request) const {
  std::vector<std::string> args = {"serve",
                                   "--graph-dir", request.graph_dir.string(),
                                   "--work-dir", request.work_dir.string(),
                                   "--track", std::string(enum_name(request.track)),
                                   "--sets", std::to_string(request.sets),
                                   "--timing-sets", std::to_string(request.timing_sets),
                                   "--spot-slots", std::to_string(request.spot_slots),
                                   "--device", request.device};
  args.insert(args.end(), request.extra_args.begin(), request.extra_args.end());
  return python_module_spec(location_, "stitch_harness.judge", args).argv;
}

Result<json> PythonJudgeSession::next_event(double timeout_s, const std::string& waiting_for) {
  double deadline = now_s() + timeout_s;
  while (true) {
    LineChild::ReadResult read = read_protocol_line(*child_, deadline);
    if (read.status == LineChild::ReadStatus::timeout)
      return make_error("no '{}' from the judge within {:.0f} s", waiting_for, timeout_s);
    if (read.status == LineChild::ReadStatus::closed) {
      ProcessResult ended = child_->stop(2.0);
      std::string tail = log_tail(log_path_);
      return make_error("the judge exited before '{}' ({}){}", waiting_for, ended.describe(),
                        tail.empty() ? "" : ": " + tail);
    }
    json event = json::parse(read.line, nullptr, /*allow_exceptions=*/false);
    if (event.is_object() && event.contains("event") && event["event"].is_string()) return event;
    // Not a protocol line: the judge swaps its stdout for stderr at start, so this is noise from
    // before that (an interpreter warning); skip it.
  }
}

bool use_verification_pid_namespace() {
  const char* setting = std::getenv("STITCH_VERIFY_PID_NAMESPACE");
  if (setting && std::string_view(setting) == "0") return false;
  return can_create_pid_namespace();
}

Result<JudgeReady> PythonJudgeSession::start(const JudgeServeRequest& request) {
  stop();
  double started = now_s();
  STITCH_TRY(make_dirs(request.work_dir));
  std::error_code ec;
  std::filesystem::path slots = request.work_dir / "slots.json";
  std::filesystem::remove(slots, ec);  // never hand the runner a previous judge's slots
  if (!request.log_path.empty() && request.log_path.has_parent_path())
    STITCH_TRY(make_dirs(request.log_path.parent_path()));
  ProcessSpec command = python_module_spec(location_, "stitch_harness.judge", {});
  ChildSpec spec;
  spec.argv = serve_command(request);
  spec.env = command.env;
  spec.stderr_path = request.log_path;
  own_pid_namespace_ = request.own_pid_namespace;
  if (own_pid_namespace_) spec.pid_namespace = PidNamespace::own();
  log_path_ = request.log_path;
  STITCH_ASSIGN_OR_RETURN(child_, LineChild::spawn(spec));

  auto fail = [&](Error error) -> Result<JudgeReady> {
    stop();
    return error.with_context("judge serve");
  };
  auto event = next_event(task_timeout_s(request.ready_timeout_s), "ready");
  if (!event.ok()) return fail(event.error());
  std::string name = (*event)["event"].get<std::string>();
  if (name == "error") return fail(make_error("{}", event->value("message", std::string("error"))));
  if (name != "ready") return fail(make_error("expected 'ready', got '{}'", name));
  JudgeReady ready;
  ready.slots_path = event->value("slots", slots.string());
  ready.setup_s = event->value("setup_s", 0.0);
  ready.sets = event->value("sets", 0);
  ready.spot_slots = event->value("spot_slots", 0);
  ready.timing_sets = event->value("timing_sets", 0);
  ready.memory_note = event->value("memory_note", std::string());
  ready.start_s = now_s() - started;
  if (!std::filesystem::is_regular_file(ready.slots_path, ec))
    return fail(make_error("ready, but {} does not exist", ready.slots_path.string()));
  return ready;
}

Result<JudgeComparison> PythonJudgeSession::compare(double timeout_s) {
  if (!child_) return make_error("judge compare: the judge is not running");
  STITCH_TRY(child_->write_line(R"({"cmd": "compare"})"));
  double deadline = now_s() + task_timeout_s(timeout_s);
  while (true) {
    STITCH_ASSIGN_OR_RETURN(json event,
                            next_event(std::max(0.0, deadline - now_s()), "compared"));
    std::string name = event["event"].get<std::string>();
    if (name == "error")
      return make_error("judge compare: {}", event.value("message", std::string("error")));
    if (name == "compared") {
      if (!event.contains("result")) return make_error("judge compare: no result");
      return parse_judge_comparison(event["result"]);
    }
  }
}

void PythonJudgeSession::stop() {
  if (!child_) return;
  if (!child_->exited() && child_->write_line(R"({"cmd": "exit"})").ok()) {
    // Wait briefly for the goodbye; the process group is killed below whatever happens.
    double deadline = now_s() + std::min(5.0, stop_grace_s_);
    while (now_s() < deadline) {
      auto read = read_protocol_line(*child_, deadline);
      if (read.status != LineChild::ReadStatus::line ||
          read.line.find("\"bye\"") != std::string::npos)
        break;
    }
  }
  exit_result_ = child_->stop(stop_grace_s_);
  child_.reset();
}

// ---- PythonBaselineSource ----------------------------------------------------------------------

Result<BaselineReport> parse_baseline_report(const json& doc) {
  if (!doc.is_object()) return make_error("baseline: not a JSON object");
  try {
    BaselineReport report;
    report.gpu = doc.value("gpu", std::string());
    report.track = doc.value("track", std::string());
    report.from_cache = doc.value("from_cache", false);
    if (doc.contains("missing") && doc["missing"].is_array())
      for (const auto& mode : doc["missing"])
        if (mode.is_string()) report.missing.push_back(mode.get<std::string>());
    if (!doc.contains("modes") || !doc["modes"].is_object())
      return make_error("baseline: no 'modes' object");
    for (const auto& [mode, entry] : doc["modes"].items()) {
      BaselineTiming timing;
      timing.mode = mode;
      if (entry.contains("error")) {
        timing.error = entry["error"].is_string() ? entry["error"].get<std::string>() : "failed";
      } else if (entry.contains("timing") && entry["timing"].contains("stats")) {
        timing.stats = parse_stats(entry["timing"]["stats"]);
        timing.compile_s = entry.value("compile_s", 0.0);
      } else {
        timing.error = "no timing in the baseline entry";
      }
      report.modes.push_back(std::move(timing));
    }
    std::stable_sort(report.modes.begin(), report.modes.end(),
                     [](const BaselineTiming& a, const BaselineTiming& b) {
                       return mode_rank(a.mode) < mode_rank(b.mode);
                     });
    return report;
  } catch (const std::exception& error) {
    return make_error("baseline: malformed: {}", error.what());
  }
}

Result<BaselineReport> PythonBaselineSource::baseline(const BaselineRequest& request) {
  std::error_code ec;
  std::filesystem::remove(request.out_path, ec);
  if (request.out_path.has_parent_path()) STITCH_TRY(make_dirs(request.out_path.parent_path()));
  ProcessSpec spec = python_module_spec(
      location_, "stitch_harness.judge",
      {"baseline", "--graph-dir", request.graph_dir.string(), "--track",
       std::string(enum_name(request.track)), "--out", request.out_path.string(), "--iters",
       std::to_string(request.iters), "--warmup", std::to_string(request.warmup),
       "--timing-sets", std::to_string(request.timing_sets), "--device", request.device});
  if (request.cache_only) spec.argv.push_back("--cache-only");
  spec.timeout_s = task_timeout_s(request.timeout_s);
  STITCH_ASSIGN_OR_RETURN(ProcessResult process, runner_.run(spec));
  if (!request.log_path.empty())
    (void)write_file_atomic(request.log_path, process.stdout_text + process.stderr_text);
  // Exit code 1 with a file means some modes failed: the file says which.
  if (!std::filesystem::is_regular_file(request.out_path, ec)) {
    std::string tail = process.stderr_text.substr(
        process.stderr_text.size() > 400 ? process.stderr_text.size() - 400 : 0);
    while (!tail.empty() && tail.back() == '\n') tail.pop_back();
    return make_error("judge baseline {} without writing {}: {}", process.describe(),
                      request.out_path.string(), tail);
  }
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(request.out_path));
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return make_error("{}: not valid JSON", request.out_path.string());
  return parse_baseline_report(doc);
}

}  // namespace stitch
