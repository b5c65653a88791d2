// state.json and result.json: the loop's typed state and its JSON form (run_state.h).
#include "agents/run_state.h"

#include <array>
#include <cmath>
#include <set>

#include "util/fs.h"
#include "util/json_fields.h"

namespace stitch::agents {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 5> kPhaseNames = {"planning", "coding", "integrating",
                                                         "refining", "finished"};
constexpr std::array<std::string_view, 8> kRunEndNames = {"none",
                                                          "succeeded",
                                                          "failed",
                                                          "refused",
                                                          "no_gpu",
                                                          "budget_exhausted",
                                                          "infrastructure_error",
                                                          "no_usable_output"};
constexpr std::array<std::string_view, 3> kSubtaskStatusNames = {"pending", "passed", "failed"};
constexpr std::array<std::string_view, 3> kAttemptKindNames = {"subtask", "integration", "refine"};
constexpr std::array<std::string_view, 3> kAttemptStatusNames = {"started", "finished",
                                                                 "interrupted"};

// doc[key] by its name in `names` (indexed by the enum's value).
template <class Enum, size_t N>
Result<Enum> read_named(const json& doc, const char* key,
                        const std::array<std::string_view, N>& names) {
  return read_enum<Enum>(doc, key,
                         [&](std::string_view name) { return enum_from_name<Enum>(names, name); });
}

json timing_to_json(const std::optional<Timing>& timing) {
  if (!timing) return nullptr;
  return {{"median_ms", timing->median_ms}, {"p10_ms", timing->p10_ms}, {"p90_ms", timing->p90_ms}};
}

std::optional<Timing> timing_from_json(const json& doc) {
  if (!doc.is_object()) return std::nullopt;
  auto median = number_field(doc, "median_ms");
  if (!median) return std::nullopt;
  Timing timing;
  timing.median_ms = *median;
  timing.p10_ms = number_or(doc, "p10_ms", *median);
  timing.p90_ms = number_or(doc, "p90_ms", *median);
  return timing;
}

json attempt_to_json(const AttemptRecord& attempt) {
  return {{"number", attempt.number},
          {"dir", attempt.dir},
          {"kind", attempt_kind_name(attempt.kind)},
          {"plan_version", attempt.plan_version},
          {"subtask", attempt.subtask},
          {"variant", attempt.variant},
          {"label", attempt.label},
          {"program_digest", attempt.program_digest},
          {"status", attempt_status_name(attempt.status)},
          {"result", attempt.result ? attempt_result_to_json(*attempt.result) : json(nullptr)},
          {"accepted", attempt.accepted},
          {"sample", attempt.sample},
          {"carried", attempt.carried},
          {"tokens", attempt.tokens},
          {"seconds", attempt.seconds}};
}

Result<AttemptRecord> attempt_from_json(const json& doc) {
  if (!doc.is_object()) return make_error("an attempt is not an object");
  AttemptRecord attempt;
  STITCH_TRY(read_field(doc, "number", attempt.number));
  STITCH_TRY(read_field(doc, "dir", attempt.dir));
  STITCH_ASSIGN_OR_RETURN(attempt.kind, read_named<AttemptKind>(doc, "kind", kAttemptKindNames));
  STITCH_TRY(read_field(doc, "plan_version", attempt.plan_version));
  STITCH_TRY(read_field(doc, "subtask", attempt.subtask));
  if (auto found = doc.find("variant"); found != doc.end()) attempt.variant = *found;
  STITCH_TRY(read_field(doc, "label", attempt.label));
  STITCH_TRY(read_field(doc, "program_digest", attempt.program_digest));  // absent in older states
  STITCH_ASSIGN_OR_RETURN(attempt.status,
                          read_named<AttemptStatus>(doc, "status", kAttemptStatusNames));
  if (auto found = doc.find("result"); found != doc.end() && !found->is_null()) {
    STITCH_ASSIGN_OR_RETURN(attempt.result, attempt_result_from_json(*found));
  }
  STITCH_TRY(read_field(doc, "accepted", attempt.accepted));
  STITCH_TRY(read_field(doc, "sample", attempt.sample));  // absent in older states
  STITCH_TRY(read_field(doc, "carried", attempt.carried));
  STITCH_TRY(read_field(doc, "tokens", attempt.tokens));
  STITCH_TRY(read_field(doc, "seconds", attempt.seconds));
  if (attempt.number <= 0 || attempt.dir.empty())
    return make_error("attempt without a number or directory");
  return attempt;
}

}  // namespace

std::string_view phase_name(Phase phase) {
  return enum_name(kPhaseNames, phase);
}
std::string_view run_end_name(RunEnd end) {
  return enum_name(kRunEndNames, end);
}
std::string_view subtask_status_name(SubtaskStatus status) {
  return enum_name(kSubtaskStatusNames, status);
}
std::string_view attempt_kind_name(AttemptKind kind) {
  return enum_name(kAttemptKindNames, kind);
}
std::optional<AttemptKind> attempt_kind_from_name(std::string_view name) {
  return enum_from_name<AttemptKind>(kAttemptKindNames, name);
}
std::string_view attempt_status_name(AttemptStatus status) {
  return enum_name(kAttemptStatusNames, status);
}

std::optional<double> AttemptResult::baseline_ms(std::string_view mode) const {
  for (const auto& [name, ms] : baselines_ms)
    if (name == mode) return ms;
  return std::nullopt;
}

AttemptRecord* RunState::attempt(int number) {
  for (auto& record : attempts)
    if (record.number == number) return &record;
  return nullptr;
}

const AttemptRecord* RunState::attempt(int number) const {
  return const_cast<RunState*>(this)->attempt(number);
}

const AttemptRecord* RunState::last_finished(AttemptKind kind, int subtask) const {
  const PlanVersion* plan = current_plan();
  for (auto it = attempts.rbegin(); it != attempts.rend(); ++it)
    if (it->status == AttemptStatus::finished && it->carried && it->kind == kind &&
        it->subtask == subtask && plan != nullptr && it->plan_version == plan->version)
      return &*it;
  return nullptr;
}

json attempt_result_to_json(const AttemptResult& result) {
  json baselines = json::object();
  for (const auto& [mode, ms] : result.baselines_ms)
    baselines[mode] = ms;
  return {{"state", enum_name(result.state)},
          {"outcome", result.outcome ? json(enum_name(*result.outcome)) : json(nullptr)},
          {"reason", result.reason},
          {"timing", timing_to_json(result.timing)},
          {"baselines_ms", baselines},
          {"suggestion_rule", result.suggestion_rule},
          {"suggestion", result.suggestion},
          {"no_usable_output", result.no_usable_output}};
}

Result<AttemptResult> attempt_result_from_json(const json& doc) {
  if (!doc.is_object()) return make_error("an attempt result is not an object");
  AttemptResult result;
  STITCH_ASSIGN_OR_RETURN(result.state, read_enum<VerifyState>(doc, "state"));
  if (auto found = doc.find("outcome"); found != doc.end() && !found->is_null()) {
    STITCH_ASSIGN_OR_RETURN(result.outcome, read_enum<Outcome>(doc, "outcome"));
  }
  STITCH_TRY(read_field(doc, "reason", result.reason));
  if (auto found = doc.find("timing"); found != doc.end()) result.timing = timing_from_json(*found);
  if (auto found = doc.find("baselines_ms"); found != doc.end() && found->is_object())
    for (const auto& [mode, ms] : found->items())
      if (ms.is_number()) result.baselines_ms.emplace_back(mode, ms.get<double>());
  STITCH_TRY(read_field(doc, "suggestion_rule", result.suggestion_rule));
  STITCH_TRY(read_field(doc, "suggestion", result.suggestion));
  STITCH_TRY(read_field(doc, "no_usable_output", result.no_usable_output));
  return result;
}

json run_state_to_json(const RunState& state) {
  json plans = json::array();
  for (const auto& plan : state.plans)
    plans.push_back({{"version", plan.version},
                     {"file", plan.file},
                     {"reason", plan.reason},
                     {"options", plan.options},
                     {"subtask_ids", plan.subtask_ids}});
  json subtasks = json::array();
  for (const auto& subtask : state.subtasks)
    subtasks.push_back({{"id", subtask.id},
                        {"status", subtask_status_name(subtask.status)},
                        {"attempts", subtask.attempts}});
  json attempts = json::array();
  for (const auto& attempt : state.attempts)
    attempts.push_back(attempt_to_json(attempt));
  json queue = json::array();
  for (const auto& candidate : state.refine.queue)
    queue.push_back({{"label", candidate.label}, {"change", candidate.change}});
  return {{"format", "stitchcuda.run_state"},
          {"version", state.format},
          {"task", state.task},
          {"phase", phase_name(state.phase)},
          {"end", run_end_name(state.end)},
          {"end_reason", state.end_reason},
          {"plans", plans},
          {"subtasks", subtasks},
          {"current_subtask", state.current_subtask},
          {"attempts", attempts},
          {"best_attempt", state.best_attempt ? json(*state.best_attempt) : json(nullptr)},
          {"failures_in_row", state.failures_in_row},
          {"replans", state.replans},
          {"replan_reason", state.replan_reason},
          {"refine",
           {{"started", state.refine.started},
            {"queue", queue},
            {"tried", state.refine.tried},
            {"without_gain", state.refine.without_gain},
            {"before_ms", optional_number(state.refine.before_ms)}}},
          {"used",
           {{"attempts", state.used.attempts},
            {"wall_s", state.used.wall_s},
            {"tokens", state.used.tokens}}}};
}

namespace {

// What the loop indexes by without checking again: plan files inside plans/, attempt directories
// named by their numbers, subtask indices in range, the best attempt among the attempts.
Status check_run_state(const RunState& state) {
  for (const PlanVersion& plan : state.plans)
    if (!plan.file.starts_with("plans/") || plan.file.find("..") != std::string::npos)
      return make_error("plan v{}: file \"{}\" is not under plans/", plan.version, plan.file);
  const int subtasks = static_cast<int>(state.subtasks.size());
  if (state.current_subtask < 0 || state.current_subtask > subtasks)
    return make_error("current_subtask {} out of range ({} subtasks)", state.current_subtask,
                      subtasks);
  if (state.phase != Phase::planning && state.phase != Phase::finished && state.plans.empty())
    return make_error("phase {} without a plan", phase_name(state.phase));
  if (state.phase == Phase::coding && state.current_subtask == subtasks)
    return make_error("phase coding past the last subtask");
  const int latest = state.plans.empty() ? 0 : state.plans.back().version;
  std::set<int> numbers;
  for (const AttemptRecord& attempt : state.attempts) {
    if (attempt.number < 1 || !numbers.insert(attempt.number).second ||
        attempt.dir != fmt::format("attempts/{:02}", attempt.number))
      return make_error("attempt {} (\"{}\"): not numbered as its directory", attempt.number,
                        attempt.dir);
    const bool current = attempt.plan_version == latest;
    if (attempt.kind == AttemptKind::subtask &&
        (attempt.subtask < 0 || (current && attempt.subtask >= subtasks)))
      return make_error("attempt {}: subtask {} out of range", attempt.number, attempt.subtask);
    if (attempt.kind != AttemptKind::subtask && attempt.subtask != -1)
      return make_error("attempt {}: a {} attempt names subtask {}", attempt.number,
                        attempt_kind_name(attempt.kind), attempt.subtask);
  }
  if (state.best_attempt && !numbers.count(*state.best_attempt))
    return make_error("best_attempt {} is not an attempt", *state.best_attempt);
  return {};
}

}  // namespace

Result<RunState> run_state_from_json(const json& doc) {
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != "stitchcuda.run_state")
    return make_error("not a stitchcuda run state (format \"stitchcuda.run_state\")");
  RunState state;
  STITCH_TRY(read_field(doc, "version", state.format));
  if (state.format != kStateFormatVersion)
    return make_error("run state version {} (this stitchcuda reads {})", state.format,
                      kStateFormatVersion);
  STITCH_TRY(read_field(doc, "task", state.task));
  STITCH_ASSIGN_OR_RETURN(state.phase, read_named<Phase>(doc, "phase", kPhaseNames));
  STITCH_ASSIGN_OR_RETURN(state.end, read_named<RunEnd>(doc, "end", kRunEndNames));
  STITCH_TRY(read_field(doc, "end_reason", state.end_reason));
  for (const auto& plan : doc.value("plans", json::array())) {
    PlanVersion version;
    STITCH_TRY(read_field(plan, "version", version.version));
    STITCH_TRY(read_field(plan, "file", version.file));
    STITCH_TRY(read_field(plan, "reason", version.reason));
    if (auto found = plan.find("options"); found != plan.end()) version.options = *found;
    STITCH_TRY(read_field(plan, "subtask_ids", version.subtask_ids));
    state.plans.push_back(std::move(version));
  }
  for (const auto& subtask : doc.value("subtasks", json::array())) {
    SubtaskState entry;
    STITCH_TRY(read_field(subtask, "id", entry.id));
    STITCH_ASSIGN_OR_RETURN(entry.status,
                            read_named<SubtaskStatus>(subtask, "status", kSubtaskStatusNames));
    STITCH_TRY(read_field(subtask, "attempts", entry.attempts));
    state.subtasks.push_back(std::move(entry));
  }
  STITCH_TRY(read_field(doc, "current_subtask", state.current_subtask));
  for (const auto& attempt : doc.value("attempts", json::array())) {
    STITCH_ASSIGN_OR_RETURN(AttemptRecord record, attempt_from_json(attempt));
    state.attempts.push_back(std::move(record));
  }
  if (auto found = doc.find("best_attempt"); found != doc.end() && found->is_number_integer())
    state.best_attempt = found->get<int>();
  STITCH_TRY(read_field(doc, "failures_in_row", state.failures_in_row));
  STITCH_TRY(read_field(doc, "replans", state.replans));
  STITCH_TRY(read_field(doc, "replan_reason", state.replan_reason));
  const json refine = doc.value("refine", json::object());
  STITCH_TRY(read_field(refine, "started", state.refine.started));
  for (const auto& candidate : refine.value("queue", json::array())) {
    if (!candidate.is_object() || !candidate.contains("label") || !candidate.contains("change"))
      return make_error("refine queue: an entry without label and change");
    RefineCandidate entry{"", candidate["change"]};
    STITCH_TRY(read_field(candidate, "label", entry.label));
    state.refine.queue.push_back(std::move(entry));
  }
  STITCH_TRY(read_field(refine, "tried", state.refine.tried));
  STITCH_TRY(read_field(refine, "without_gain", state.refine.without_gain));
  state.refine.before_ms = number_field(refine, "before_ms");
  const json used = doc.value("used", json::object());
  STITCH_TRY(read_field(used, "attempts", state.used.attempts));
  STITCH_TRY(read_field(used, "wall_s", state.used.wall_s));
  STITCH_TRY(read_field(used, "tokens", state.used.tokens));
  STITCH_TRY(check_run_state(state));
  return state;
}

Status save_run_state(const std::filesystem::path& run_dir, const RunState& state) {
  return write_json_file(run_dir / "state.json", run_state_to_json(state));
}

Result<RunState> load_run_state(const std::filesystem::path& run_dir) {
  // A state.json that does not read back is a corrupt input (exit 2), named with what is wrong.
  const auto path = run_dir / "state.json";
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(path));
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return make_error(ErrorKind::bad_input, "{}: corrupt: not valid JSON ({} bytes{})",
                      path.string(), text.size(), text.empty() ? ", empty" : "");
  auto state = run_state_from_json(doc);
  if (!state.ok())
    return make_error(ErrorKind::bad_input, "{}: corrupt: {}", path.string(),
                      state.error().message);
  return state;
}

AttemptResult attempt_result_from_verify(const VerifyReport& report,
                                         const std::optional<Feedback>& feedback) {
  AttemptResult result;
  result.state = report.state;
  result.outcome = report.outcome;
  result.reason = report.reason;
  if (const auto& stats = report.reported_timing(); stats && std::isfinite(stats->median_ms))
    result.timing = Timing{stats->median_ms, stats->p10_ms, stats->p90_ms};
  for (const auto& baseline : report.baselines)
    if (baseline.stats && std::isfinite(baseline.stats->median_ms))
      result.baselines_ms.emplace_back(baseline.mode, baseline.stats->median_ms);
  if (feedback) {
    result.suggestion_rule = enum_name(feedback->suggestion.rule);
    result.suggestion = feedback->suggestion.text;
  }
  return result;
}

Result<AttemptResult> read_attempt_result(const std::filesystem::path& attempt_dir) {
  STITCH_ASSIGN_OR_RETURN(VerifyReport report, read_verify_report(attempt_dir / "verify.json"));
  std::optional<Feedback> feedback;
  if (std::error_code ec; std::filesystem::exists(attempt_dir / "feedback.json", ec)) {
    STITCH_ASSIGN_OR_RETURN(feedback, read_feedback(attempt_dir / "feedback.json"));
  }
  return attempt_result_from_verify(report, feedback);
}

}  // namespace stitch::agents
