// The workflow engine (workflow.h).
#include "agents/workflow.h"

#include <algorithm>
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "agents/attempt_files.h"
#include "util/fs.h"

namespace stitch::agents {
namespace {

using nlohmann::json;

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string result_line(const AttemptResult& result) {
  std::string line(result.verdict_name());
  if (result.timing) line += fmt::format("  {:.4f} ms", result.timing->median_ms);
  if (auto eager = result.baseline_ms("eager"); eager && result.timing && result.passed())
    line += fmt::format("  ({:.2f}x eager)", *eager / result.timing->median_ms);
  if (!result.passed() && !result.reason.empty()) line += "  " + result.reason.substr(0, 100);
  return line;
}

// An interrupted refine attempt's candidate goes back to the front of the queue (it was taken
// off when the attempt started): its variant is the whole merged variant, which merged onto the
// best again gives the same program.
void requeue_refine(RunState& state, const AttemptRecord& record) {
  std::string label = record.label;
  if (label.rfind("refine: ", 0) == 0) label = label.substr(8);
  state.refine.queue.insert(state.refine.queue.begin(), {label, record.variant});
}

// A run the machinery stopped (infrastructure_error) goes on where it stopped: the scope of its
// last attempt again, a refine candidate back at the front of the queue.
void reopen_after_infrastructure_error(RunState& state) {
  const AttemptRecord* last = state.attempts.empty() ? nullptr : &state.attempts.back();
  if (last == nullptr || state.plans.empty())
    state.phase = Phase::planning;
  else if (last->kind == AttemptKind::refine)
    state.phase = Phase::refining;
  else
    state.phase = last->kind == AttemptKind::subtask ? Phase::coding : Phase::integrating;
  if (last != nullptr && last->kind == AttemptKind::refine) requeue_refine(state, *last);
  state.end = RunEnd::none;
  state.end_reason.clear();
}

// A stagnant attempt is no attempt, but what its Coder left (an LLM Coder's transcripts and
// llm_coder.json: why nothing was usable) moves with its attempt.json to
// <run>/stagnant/v<plan>-NN/; a directory with nothing else goes.
fs::path set_aside_stagnant(const fs::path& dir, int plan_version) {
  std::error_code ec;
  bool coder_left_files = false;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator() && !coder_left_files; it.increment(ec))
    coder_left_files = it->is_regular_file(ec) && it->path() != dir / "attempt.json";
  if (coder_left_files) {
    const fs::path parent = dir.parent_path().parent_path() / "stagnant";
    fs::create_directories(parent, ec);
    for (int n = 1; n < 1000; ++n) {
      const fs::path target = parent / fmt::format("v{}-{:02}", plan_version, n);
      if (fs::exists(target, ec)) continue;
      fs::rename(dir, target, ec);
      if (!ec) return target;
      break;
    }
  }
  fs::remove_all(dir, ec);
  return {};
}

}  // namespace

json merge_variant(const json& base, const json& change) {
  if (!base.is_object() || !change.is_object()) return change;
  json merged = base;
  for (const auto& [key, value] : change.items())
    merged[key] = merged.contains(key) ? merge_variant(merged[key], value) : value;
  return merged;
}

Workflow::Workflow(run::RunDir& run, WorkflowDeps deps, WorkflowOptions options)
    : run_(run), deps_(deps), options_(std::move(options)) {
  if (!options_.clock) options_.clock = steady_seconds;
}

Result<RunState> Workflow::start(const std::string& task) {
  RunState state;
  state.task = task;
  emit("run.start", fmt::format("run {} → {}", task, run_.root().string()), {{"task", task}});
  STITCH_TRY(save(state));
  return drive(std::move(state));
}

Result<RunState> Workflow::resume() {
  std::error_code ec;
  if (!fs::exists(run_.root() / "state.json", ec))
    return make_error(
        "{}: no state.json — not a run of the loop (start one with `stitchcuda run "
        "TASK.py`)",
        run_.root().string());
  STITCH_ASSIGN_OR_RETURN(RunState state, load_run_state(run_.root()));
  if (state.phase == Phase::finished && state.end == RunEnd::no_gpu && options_.reopen_no_gpu) {
    state.phase = Phase::integrating;
    state.end = RunEnd::none;
    state.end_reason.clear();
    emit("run.reopen", "a GPU is here now: verifying the program the run built without one");
  }
  if (state.phase == Phase::finished && state.end == RunEnd::infrastructure_error) {
    emit("run.reopen", fmt::format("the verification machinery failed last time ({}): going on",
                                   state.end_reason));
    reopen_after_infrastructure_error(state);
  }
  if (state.phase == Phase::finished) return state;
  emit("run.resume",
       fmt::format("resuming {} ({}, {} attempts so far)", run_.root().string(),
                   phase_name(state.phase), state.attempts.size()),
       {{"phase", phase_name(state.phase)}, {"attempts", state.attempts.size()}});
  STITCH_TRY(reconcile(state));
  STITCH_TRY(save(state));
  return drive(std::move(state));
}

Status Workflow::reconcile(RunState& state) {
  // Attempts the state recorded as started: finished from result.json, else interrupted.
  for (auto& record : state.attempts) {
    if (record.status != AttemptStatus::started) continue;
    const fs::path dir = run_.root() / record.dir;
    std::error_code ec;
    if (fs::exists(dir / "result.json", ec)) {
      auto doc = read_json_file(dir / "result.json");
      auto finished =
          doc.ok() ? finished_attempt_from_json(*doc) : Result<FinishedAttempt>(doc.error());
      if (finished.ok()) {
        record.result = finished->result;
        record.status = AttemptStatus::finished;
        record.seconds = finished->seconds;
        if (auto draft = read_draft(dir); draft.ok()) {
          record.variant = draft->variant;
          record.label = draft->label;
          // Routed as the uninterrupted run did, which knew the program's digest.
          if (auto digest = program_digest(*draft); digest.ok()) record.program_digest = *digest;
        }
        emit("attempt.recovered",
             fmt::format("attempt {:02}: finished before the interruption: {}", record.number,
                         result_line(record.result.value())),
             {{"attempt", record.number}});
        route_after_attempt(state, record.number, options_.budgets);
        continue;
      }
    }
    record.status = AttemptStatus::interrupted;
    if (record.kind == AttemptKind::refine) requeue_refine(state, record);
    emit("attempt.interrupted",
         fmt::format("attempt {:02}: interrupted before its result; its work is done again",
                     record.number),
         {{"attempt", record.number}});
  }
  // Attempt directories the state never recorded (a crash between mkdir and the state save).
  std::set<std::string> known;
  for (const auto& record : state.attempts)
    known.insert(record.dir);
  std::error_code ec;
  const fs::path attempts = run_.root() / "attempts";
  if (!fs::is_directory(attempts, ec)) return {};
  std::vector<fs::path> unknown;
  for (const auto& entry : fs::directory_iterator(attempts, ec)) {
    const std::string relative = "attempts/" + entry.path().filename().string();
    if (!known.count(relative) && fs::exists(entry.path() / "attempt.json"))
      unknown.push_back(entry.path());
  }
  std::sort(unknown.begin(), unknown.end());
  for (const auto& dir : unknown) {
    auto doc = read_json_file(dir / "attempt.json");
    auto intent = doc.ok() ? attempt_intent_from_json(*doc) : Result<AttemptRecord>(doc.error());
    if (!intent.ok() || state.attempt(intent->number) != nullptr) continue;
    AttemptRecord record = std::move(*intent);
    record.dir = "attempts/" + dir.filename().string();
    if (record.kind == AttemptKind::refine) requeue_refine(state, record);
    state.attempts.push_back(std::move(record));
  }
  return {};
}

Result<RunState> Workflow::drive(RunState state) {
  clock_base_s_ = state.used.wall_s;
  clock_start_s_ = options_.clock();
  while (state.phase != Phase::finished) {
    state.used.wall_s = clock_base_s_ + (options_.clock() - clock_start_s_);
    if (std::string reason = budget_exceeded(state, options_.budgets); !reason.empty()) {
      const RunEnd end = budget_end(state);
      if (end == RunEnd::no_usable_output)
        for (auto it = state.attempts.rbegin(); it != state.attempts.rend(); ++it)
          if (it->result) {
            reason += fmt::format("; the model never produced a usable program (last: {})",
                                  it->result->reason);
            break;
          }
      finish_run(state, end, reason);
      break;
    }
    switch (state.phase) {
      case Phase::planning:
        STITCH_TRY(step_plan(state));
        break;
      case Phase::coding:
        STITCH_TRY(step_attempt(state, AttemptKind::subtask, state.current_subtask, json::object(),
                                fmt::format("plan v{} {}", state.current_plan()->version,
                                            state.subtasks.at(state.current_subtask).id)));
        break;
      case Phase::integrating:
        STITCH_TRY(
            step_attempt(state, AttemptKind::integration, -1, json::object(),
                         fmt::format("plan v{} whole program", state.current_plan()->version)));
        break;
      case Phase::refining:
        if (!state.refine.started) {
          STITCH_TRY(start_refine(state));
        } else if (state.refine.queue.empty()) {  // e.g. a state written by hand
          finish_run(state, RunEnd::succeeded, "refine tried every candidate");
        } else {
          const AttemptRecord* best = state.best();
          RefineCandidate next = state.refine.queue.front();
          state.refine.queue.erase(state.refine.queue.begin());
          STITCH_TRY(step_attempt(state, AttemptKind::refine, -1,
                                  merge_variant(best ? best->variant : json::object(), next.change),
                                  "refine: " + next.label));
        }
        break;
      case Phase::finished:
        break;
    }
  }
  state.used.wall_s = clock_base_s_ + (options_.clock() - clock_start_s_);
  STITCH_TRY(save(state));
  const AttemptRecord* best = state.best();
  std::string line = fmt::format("run {}: {}", run_end_name(state.end), state.end_reason);
  if (best && best->result && best->result->timing)
    line += fmt::format(" — best attempt {:02}: {}", best->number, result_line(*best->result));
  emit("run.end", line,
       {{"end", run_end_name(state.end)},
        {"reason", state.end_reason},
        {"best_attempt", state.best_attempt ? json(*state.best_attempt) : json(nullptr)},
        {"attempts", state.used.attempts},
        {"wall_s", state.used.wall_s}});
  return state;
}

Status Workflow::step_plan(RunState& state) {
  PlanRequest request;
  request.run_dir = run_.root();
  request.version = static_cast<int>(state.plans.size()) + 1;
  request.plan_file = run_.root() / "plans" / fmt::format("plan.v{}.json", request.version);
  request.replan_reason = state.replan_reason;
  for (const auto& plan : state.plans)
    request.tried_options.push_back(plan.options);
  for (auto it = state.attempts.rbegin(); it != state.attempts.rend(); ++it)
    if (it->status == AttemptStatus::finished) {
      fs::path feedback = run_.root() / it->dir / "feedback.json";
      if (fs::exists(feedback)) request.last_feedback = feedback;
      break;
    }
  STITCH_TRY(make_dirs(request.plan_file.parent_path()));
  STITCH_ASSIGN_OR_RETURN(PlanOutcome outcome, deps_.planner.plan(request));
  if (!outcome.draft) {
    if (outcome.exhausted)
      finish_run(state, RunEnd::failed,
                 fmt::format("{}; the Planner has no other plan to try", state.replan_reason));
    else if (outcome.no_usable_output)
      finish_run(state, RunEnd::no_usable_output, "planner: " + outcome.refusal.reason);
    else
      finish_run(state, RunEnd::refused, outcome.refusal.reason);
    emit("plan.none", fmt::format("plan: {}", state.end_reason), {{"reason", state.end_reason}});
    return save(state);
  }
  const PlanDraft& draft = *outcome.draft;
  PlanVersion version;
  version.version = request.version;
  version.file = fmt::format("plans/plan.v{}.json", request.version);
  version.reason = state.replan_reason.empty() ? "first plan" : state.replan_reason;
  version.options = draft.options;
  version.subtask_ids = draft.subtask_ids;
  // plan.json (DESIGN.md §5) is the current version; plans/ keeps every one.
  if (auto text = read_file(request.plan_file); text.ok())
    STITCH_TRY(write_file_atomic(run_.root() / "plan.json", *text));
  state.plans.push_back(version);
  state.subtasks.clear();
  for (const auto& id : draft.subtask_ids)
    state.subtasks.push_back({id, SubtaskStatus::pending, 0});
  state.current_subtask = 0;
  state.failures_in_row = 0;
  state.replan_reason.clear();
  state.used.tokens += draft.tokens;
  state.phase =
      deps_.coder.granularity() == CoderGranularity::per_subtask && !state.subtasks.empty()
          ? Phase::coding
          : Phase::integrating;
  emit("plan", fmt::format("plan v{}: {} ({})", version.version, draft.summary, version.reason),
       {{"version", version.version},
        {"subtasks", draft.subtask_ids},
        {"options", draft.options},
        {"reason", version.reason}});
  return save(state);
}

std::optional<fs::path> Workflow::feedback_for(const RunState& state, AttemptKind kind,
                                               int subtask) const {
  // The last attempt on this scope that was verified (attempts without a usable program have
  // no program to revise: their reason travels as CodeRequest::last_unusable).
  const AttemptRecord* last = nullptr;
  const PlanVersion* plan = state.current_plan();
  for (auto it = state.attempts.rbegin(); it != state.attempts.rend() && last == nullptr; ++it)
    if (it->status == AttemptStatus::finished && it->carried && it->kind == kind &&
        it->subtask == subtask && plan && it->plan_version == plan->version && it->result &&
        !it->result->no_usable_output &&
        it->result->state != VerifyState::infrastructure_error)  // says nothing of the program
      last = &*it;
  if (last == nullptr || attempt_passes(*last)) return std::nullopt;
  fs::path feedback = run_.root() / last->dir / "feedback.json";
  std::error_code ec;
  return fs::exists(feedback, ec) ? std::optional(feedback) : std::nullopt;
}

std::vector<json> Workflow::tried_variants(const RunState& state, AttemptKind kind,
                                           int subtask) const {
  std::vector<json> tried;
  const PlanVersion* plan = state.current_plan();
  for (const auto& record : state.attempts)
    if (record.status == AttemptStatus::finished && record.kind == kind &&
        record.subtask == subtask && plan && record.plan_version == plan->version &&
        !(record.result && record.result->state == VerifyState::no_gpu &&
          kind != AttemptKind::subtask) &&
        !(record.result && record.result->state == VerifyState::infrastructure_error))
      // Not judged: a program built where nothing could run, or one the machine failed.
      tried.push_back(record.variant);
  return tried;
}

int Workflow::samples_for_step(const RunState& state, AttemptKind kind) const {
  if (kind == AttemptKind::refine) return 1;
  int samples = std::max(1, deps_.coder.samples_per_step());
  if (options_.budgets.max_attempts > 0)  // a step never opens more attempts than are left
    samples = std::clamp(options_.budgets.max_attempts - state.used.attempts, 1, samples);
  return samples;
}

Status Workflow::step_attempt(RunState& state, AttemptKind kind, int subtask, json variant,
                              std::string label) {
  const PlanVersion* plan = state.current_plan();
  if (plan == nullptr) return make_error("an attempt without a plan");
  const int samples = samples_for_step(state, kind);
  const CodeRequest base = code_request(state, *plan, kind, subtask, variant);
  std::vector<int> numbers;
  std::vector<CodeRequest> requests;
  for (int sample = 0; sample < samples; ++sample) {
    const std::string sample_label =
        samples > 1 ? fmt::format("{} (sample {} of {})", label, sample + 1, samples) : label;
    STITCH_ASSIGN_OR_RETURN(fs::path dir, open_attempt(state, kind, subtask, variant, sample_label,
                                                       samples > 1 ? sample : -1));
    numbers.push_back(state.attempts.back().number);
    CodeRequest request = base;
    request.out_dir = dir / "src";
    STITCH_TRY(make_dirs(request.out_dir));
    requests.push_back(std::move(request));
    emit("attempt.start",
         fmt::format("attempt {:02}: {} — {}", numbers.back(), attempt_kind_name(kind),
                     sample_label),
         {{"attempt", numbers.back()}, {"kind", attempt_kind_name(kind)}, {"label", sample_label}});
  }
  const double started_s = options_.clock();
  std::vector<Result<CodeOutcome>> outcomes;
  if (samples == 1)
    outcomes.push_back(deps_.coder.write(requests.front()));
  else
    outcomes = deps_.coder.write_samples(requests);
  if (outcomes.size() != requests.size())
    return make_error("the Coder answered {} of {} samples", outcomes.size(), requests.size());
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (!outcomes[i].ok()) return outcomes[i].error();
    CodeOutcome& code = *outcomes[i];
    if (samples == 1 && !code.draft && !code.no_usable_output)
      return drop_stagnant_attempt(state, kind, label, code.why_not,
                                   requests.front().out_dir.parent_path());
    STITCH_ASSIGN_OR_RETURN(AttemptResult result,
                            settle_attempt(state, numbers[i], std::move(code), started_s));
    STITCH_TRY(finish_attempt(state, numbers[i], result, state.attempt(numbers[i])->seconds,
                              samples == 1));
  }
  if (samples == 1) return {};
  const int chosen = route_after_samples(state, numbers, options_.budgets);
  emit("samples.chosen",
       fmt::format("samples: attempt {:02} carried forward ({} of {} samples passed)", chosen,
                   std::count_if(numbers.begin(), numbers.end(),
                                 [&](int n) { return state.attempt(n)->result->passed(); }),
                   samples),
       {{"attempts", numbers}, {"chosen", chosen}});
  return save(state);
}

Result<AttemptResult> Workflow::settle_attempt(RunState& state, int number, CodeOutcome code,
                                               double started_s) {
  AttemptRecord* current = state.attempt(number);
  const fs::path dir = run_.root() / current->dir;
  state.used.attempts++;
  AttemptResult result;
  if (!code.draft) {  // a model's reply without a usable program: kept, with the reason
    current->tokens = code.tokens;
    state.used.tokens += code.tokens;
    result.no_usable_output = true;
    result.reason = code.why_not;
  } else {
    CodeDraft& draft = *code.draft;
    current->variant = draft.variant;
    if (!draft.label.empty() && current->sample < 0) current->label = draft.label;
    current->tokens = draft.tokens;
    state.used.tokens += draft.tokens;
    draft.label = current->label;
    STITCH_ASSIGN_OR_RETURN(current->program_digest, program_digest(draft));
    STITCH_TRY(write_draft(dir, draft));
    checkpoint("after_code", number);
    STITCH_TRY(save(state));
    VerifyJob job;
    job.run_dir = run_.root();
    job.attempt_dir = dir;
    job.draft = &draft;
    job.subtask = current->kind == AttemptKind::subtask ? current->subtask : -1;
    STITCH_ASSIGN_OR_RETURN(result, deps_.verifier.verify(job));
    checkpoint("after_verify", number);
  }
  const double seconds = options_.clock() - started_s;
  STITCH_TRY(write_json_file(dir / "result.json", finished_attempt_to_json({result, seconds})));
  checkpoint("after_result", number);
  current = state.attempt(number);
  current->seconds = seconds;
  return result;
}

Result<fs::path> Workflow::open_attempt(RunState& state, AttemptKind kind, int subtask,
                                        const json& variant, const std::string& label, int sample) {
  STITCH_ASSIGN_OR_RETURN(fs::path dir, run_.new_attempt_dir());
  AttemptRecord record;
  record.number = std::stoi(dir.filename().string());
  record.dir = "attempts/" + dir.filename().string();
  record.kind = kind;
  record.plan_version = state.current_plan()->version;
  record.subtask = subtask;
  record.variant = variant;
  record.label = label;
  record.sample = sample;
  STITCH_TRY(write_json_file(dir / "attempt.json", attempt_intent_to_json(record)));
  const int number = record.number;
  state.attempts.push_back(std::move(record));
  STITCH_TRY(save(state));
  checkpoint("after_attempt_json", number);
  return dir;
}

CodeRequest Workflow::code_request(const RunState& state, const PlanVersion& plan, AttemptKind kind,
                                   int subtask, const json& variant) const {
  CodeRequest request;
  request.run_dir = run_.root();
  request.plan_file = run_.root() / plan.file;
  request.plan_version = plan.version;
  request.subtask = subtask;
  request.subtask_ids = plan.subtask_ids;
  request.feedback =
      kind == AttemptKind::refine ? std::nullopt : feedback_for(state, kind, subtask);
  const AttemptRecord* last = state.last_finished(kind, subtask);
  if (kind != AttemptKind::refine && last && last->result && last->result->no_usable_output)
    request.last_unusable = fmt::format("attempt {:02}: {}", last->number, last->result->reason);
  request.variant = variant;
  request.tried_variants = tried_variants(state, kind, subtask);
  return request;
}

// Nothing new to try on this scope: not an attempt; the plan is abandoned (or, refining, the
// candidate counts as tried).
Status Workflow::drop_stagnant_attempt(RunState& state, AttemptKind kind, const std::string& label,
                                       const std::string& why_not, const fs::path& dir) {
  const int plan_version = state.attempts.back().plan_version;
  const fs::path kept = set_aside_stagnant(dir, plan_version);
  state.attempts.pop_back();
  json fields = {{"why", why_not}};
  if (!kept.empty()) fields["kept"] = fs::relative(kept, dir.parent_path().parent_path()).string();
  emit("coder.stagnant", fmt::format("coder: nothing new for {} ({})", label, why_not), fields);
  if (kind == AttemptKind::refine) {
    state.refine.tried++;
    state.refine.without_gain++;
    if (state.refine.queue.empty())
      finish_run(state, RunEnd::succeeded, "refine tried every candidate");
  } else {
    route_replan(state, options_.budgets, fmt::format("stagnation: {}", why_not));
  }
  return save(state);
}

Status Workflow::finish_attempt(RunState& state, int number, const AttemptResult& result,
                                double seconds, bool route) {
  AttemptRecord* current = state.attempt(number);
  current->result = result;
  current->status = AttemptStatus::finished;
  current->seconds = seconds;
  const AttemptKind kind = current->kind;
  if (route) route_after_attempt(state, number, options_.budgets);
  current = state.attempt(number);
  std::string line = fmt::format("attempt {:02}: {}", number, result_line(result));
  if (kind == AttemptKind::refine) line += current->accepted ? "  → accepted" : "  → kept the best";
  emit("attempt.done", line,
       {{"attempt", number},
        {"kind", attempt_kind_name(kind)},
        {"result", attempt_result_to_json(result)},
        {"accepted", current->accepted},
        {"seconds", seconds}});
  return save(state);
}

Status Workflow::start_refine(RunState& state) {
  state.refine.started = true;
  const AttemptRecord* best = state.best();
  if (deps_.refiner == nullptr || best == nullptr) {
    finish_run(state, RunEnd::succeeded, "verified (no refine step)");
    return save(state);
  }
  const fs::path best_dir = run_.root() / best->dir;
  std::optional<ProfileSummary> profile;
  if (deps_.profiler != nullptr) {
    STITCH_ASSIGN_OR_RETURN(CodeDraft draft, read_draft(best_dir));
    profile = deps_.profiler->profile(run_.root(), best_dir, draft);
    if (profile)
      STITCH_TRY(
          write_json_file(best_dir / "refine_profile.json", profile_summary_to_json(*profile)));
  }
  const PlanVersion* plan = nullptr;
  for (const auto& version : state.plans)
    if (version.version == best->plan_version) plan = &version;
  if (plan == nullptr) return make_error("the best attempt's plan version is unknown");
  STITCH_ASSIGN_OR_RETURN(
      std::vector<RefineCandidate> candidates,
      deps_.refiner->candidates(run_.root() / plan->file, best->variant, profile));
  state.refine.queue = candidates;
  json labels = json::array();
  for (const auto& candidate : candidates)
    labels.push_back(candidate.label);
  emit("refine.queue",
       fmt::format("refine: {} candidates{}", candidates.size(),
                   profile ? " (ranked by the profile)" : " (ranked by the cost model)"),
       {{"candidates", labels}, {"profiled", profile.has_value()}});
  if (candidates.empty()) finish_run(state, RunEnd::succeeded, "verified (no refine candidates)");
  return save(state);
}

Status Workflow::save(RunState& state) {
  return save_run_state(run_.root(), state);
}

void Workflow::emit(const std::string& name, const std::string& line, json fields) {
  json logged = fields;
  logged["line"] = line;
  (void)run_.events().append("loop." + name, logged);
  if (options_.on_event) options_.on_event(WorkflowEvent{name, line, std::move(fields)});
}

void Workflow::checkpoint(std::string_view point, int attempt_number) {
  if (options_.checkpoint) options_.checkpoint(point, attempt_number);
}

}  // namespace stitch::agents
