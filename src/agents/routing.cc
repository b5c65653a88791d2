// Routing of the loop (routing.h).
#include "agents/routing.h"

#include <algorithm>

#include <fmt/format.h>

namespace stitch::agents {
namespace {

std::string describe_failure(const AttemptRecord& attempt) {
  const AttemptResult& result = *attempt.result;
  std::string what(result.verdict_name());
  return result.reason.empty() ? what : fmt::format("{}: {}", what, result.reason);
}

std::string scope_name(const RunState& state, const AttemptRecord& attempt) {
  if (attempt.subtask >= 0 && attempt.subtask < static_cast<int>(state.subtasks.size()))
    return fmt::format("subtask {}", state.subtasks[attempt.subtask].id);
  return "the whole program";
}

// An earlier failed attempt of this run with the same program (digest) and the same verdict and
// reason as `attempt`, or null. Without a digest (older states) nothing counts as the same.
const AttemptRecord* same_failure_before(const RunState& state, const AttemptRecord& attempt) {
  if (attempt.program_digest.empty()) return nullptr;
  for (const auto& earlier : state.attempts) {
    if (earlier.number >= attempt.number) break;
    if (earlier.status == AttemptStatus::finished && earlier.result && !attempt_passes(earlier) &&
        earlier.kind == attempt.kind && earlier.program_digest == attempt.program_digest &&
        earlier.result->state == attempt.result->state &&
        earlier.result->outcome == attempt.result->outcome &&
        earlier.result->reason == attempt.result->reason)
      return &earlier;
  }
  return nullptr;
}

// A deterministic failure: the same program failed the same way before. Under the same plan a
// replan may change the program; after a replan that wrote it again, nothing will.
void route_repeated_failure(RunState& state, const AttemptRecord& attempt,
                            const AttemptRecord& earlier, const Budgets& budgets) {
  const std::string what = fmt::format(
      "{}: attempts {:02} and {:02} ran the same program and failed the same way ({})",
      scope_name(state, attempt), earlier.number, attempt.number, describe_failure(attempt));
  if (earlier.plan_version == attempt.plan_version)
    route_replan(state, budgets, what);
  else
    finish_run(state, RunEnd::failed,
               fmt::format("{}; replanning (v{} → v{}) did not change the program", what,
                           earlier.plan_version, attempt.plan_version));
}

void after_refine(RunState& state, AttemptRecord& attempt, const Budgets& budgets) {
  state.refine.tried++;
  const AttemptRecord* best = state.best();
  if (attempt.result->passed() && attempt.result->timing && best && best->result &&
      best->result->timing &&
      faster_beyond_spread(*best->result->timing, *attempt.result->timing, budgets.min_gain)) {
    attempt.accepted = true;
    state.best_attempt = attempt.number;
    state.refine.without_gain = 0;
  } else {
    state.refine.without_gain++;
  }
  if (state.refine.queue.empty())
    finish_run(state, RunEnd::succeeded, "refine tried every candidate");
  else if (state.refine.tried >= budgets.max_refine_attempts)
    finish_run(state, RunEnd::succeeded, "refine reached its attempt limit");
  else if (state.refine.without_gain >= budgets.refine_patience)
    finish_run(state, RunEnd::succeeded,
               fmt::format("refine stopped: {} candidates in a row without a gain",
                           state.refine.without_gain));
}

// How far a sample got, lower is better: passed, built (no_gpu), ran (wrong, timeout, runtime
// error), refused by the checks, did not build, the machinery failed, no program at all.
int sample_rank(const AttemptResult& result) {
  if (result.no_usable_output) return 9;
  if (result.passed()) return 0;
  if (result.state == VerifyState::no_gpu) return 1;
  if (result.state == VerifyState::infrastructure_error || !result.outcome) return 8;
  switch (*result.outcome) {
    case Outcome::wrong:
      return 2;
    case Outcome::timeout:
      return 3;
    case Outcome::runtime_error:
      return 4;
    case Outcome::hacked:
      return 5;
    case Outcome::compile_error:
      return 6;
    case Outcome::passed:
      return 0;
  }
  return 8;
}

// Whether sample `a` is better than sample `b` (ties: the earlier sample wins).
bool better_sample(const AttemptResult& a, const AttemptResult& b) {
  const int rank_a = sample_rank(a), rank_b = sample_rank(b);
  if (rank_a != rank_b) return rank_a < rank_b;
  if (rank_a == 0 && a.timing && b.timing) return a.timing->median_ms < b.timing->median_ms;
  return false;
}

}  // namespace

bool faster_beyond_spread(const Timing& best, const Timing& candidate, double min_gain) {
  if (best.median_ms <= 0 || candidate.median_ms <= 0) return false;
  const double half_spread =
      std::max((best.p90_ms - best.p10_ms) / 2, (candidate.p90_ms - candidate.p10_ms) / 2);
  return candidate.median_ms <= best.median_ms * (1 - min_gain) &&
         best.median_ms - candidate.median_ms > half_spread;
}

bool attempt_passes(const AttemptRecord& attempt) {
  if (!attempt.result) return false;
  if (attempt.result->passed()) return true;
  return attempt.kind == AttemptKind::subtask && attempt.result->state == VerifyState::no_gpu &&
         !attempt.result->outcome;
}

std::string budget_exceeded(const RunState& state, const Budgets& budgets) {
  if (budgets.max_attempts > 0 && state.used.attempts >= budgets.max_attempts)
    return fmt::format("attempt budget spent ({} attempts)", state.used.attempts);
  if (budgets.max_wall_s > 0 && state.used.wall_s >= budgets.max_wall_s)
    return fmt::format("time budget spent ({:.0f} s of {:.0f} s)", state.used.wall_s,
                       budgets.max_wall_s);
  if (budgets.max_tokens > 0 && state.used.tokens >= budgets.max_tokens)
    return fmt::format("token budget spent ({} tokens)", state.used.tokens);
  return "";
}

RunEnd budget_end(const RunState& state) {
  bool any = false;
  for (const auto& attempt : state.attempts) {
    if (attempt.status != AttemptStatus::finished || !attempt.result) continue;
    if (!attempt.result->no_usable_output) return RunEnd::budget_exhausted;
    any = true;
  }
  return any ? RunEnd::no_usable_output : RunEnd::budget_exhausted;
}

void finish_run(RunState& state, RunEnd end, const std::string& reason) {
  state.phase = Phase::finished;
  state.end = state.best_attempt ? RunEnd::succeeded : end;
  state.end_reason = reason;
}

void route_replan(RunState& state, const Budgets& budgets, const std::string& reason) {
  if (state.replans >= budgets.max_replans) {
    finish_run(state, RunEnd::failed,
               fmt::format("{}; no replans left ({} made)", reason, state.replans));
    return;
  }
  state.replans++;
  state.phase = Phase::planning;
  state.replan_reason = reason;
  state.failures_in_row = 0;
}

void route_after_attempt(RunState& state, int attempt_number, const Budgets& budgets) {
  AttemptRecord* attempt = state.attempt(attempt_number);
  if (attempt == nullptr || !attempt->result || attempt->status != AttemptStatus::finished) return;
  const AttemptResult& result = *attempt->result;

  if (result.state == VerifyState::infrastructure_error) {
    // The machine failed (a full disk, the judge): not the program's attempt, no budget spent;
    // --resume goes on with the same scope once the machine is fixed (Workflow::resume).
    state.used.attempts = std::max(0, state.used.attempts - 1);
    finish_run(state, RunEnd::infrastructure_error,
               fmt::format("attempt {}: the verification itself failed: {}", attempt->number,
                           result.reason));
    return;
  }
  if (attempt->kind == AttemptKind::refine) {
    after_refine(state, *attempt, budgets);
    return;
  }
  if (result.no_usable_output) {  // the same scope again with the reason; the budget bounds it
    if (attempt->kind == AttemptKind::subtask && attempt->subtask >= 0 &&
        attempt->subtask < static_cast<int>(state.subtasks.size()))
      state.subtasks[attempt->subtask].status = SubtaskStatus::failed;
    return;
  }
  if (attempt->kind == AttemptKind::integration && result.state == VerifyState::no_gpu) {
    finish_run(state, RunEnd::no_gpu,
               "built and statically checked; there is no GPU here to run, compare or time it");
    return;
  }
  if (attempt_passes(*attempt)) {
    state.failures_in_row = 0;
    if (attempt->kind == AttemptKind::subtask) {
      if (attempt->subtask >= 0 && attempt->subtask < static_cast<int>(state.subtasks.size()))
        state.subtasks[attempt->subtask].status = SubtaskStatus::passed;
      state.current_subtask = attempt->subtask + 1;
      if (state.current_subtask >= static_cast<int>(state.subtasks.size()))
        state.phase = Phase::integrating;
      return;
    }
    state.best_attempt = attempt->number;
    if (budgets.refine && budgets.max_refine_attempts > 0) {
      state.phase = Phase::refining;
      state.refine = RefineState{};
      state.refine.before_ms =
          result.timing ? std::optional(result.timing->median_ms) : std::nullopt;
    } else {
      finish_run(state, RunEnd::succeeded, "verified");
    }
    return;
  }
  // Failed: retry the same scope with the feedback, or replan after too many in a row, or at once
  // when the failure repeats an earlier one exactly.
  state.failures_in_row++;
  if (attempt->kind == AttemptKind::subtask && attempt->subtask >= 0 &&
      attempt->subtask < static_cast<int>(state.subtasks.size()))
    state.subtasks[attempt->subtask].status = SubtaskStatus::failed;
  if (const AttemptRecord* earlier = same_failure_before(state, *attempt))
    route_repeated_failure(state, *attempt, *earlier, budgets);
  else if (state.failures_in_row >= budgets.max_attempts_per_scope)
    route_replan(state, budgets,
                 fmt::format("{} failed {} times in a row (last: {})", scope_name(state, *attempt),
                             state.failures_in_row, describe_failure(*attempt)));
}

}  // namespace stitch::agents

namespace stitch::agents {

int route_after_samples(RunState& state, const std::vector<int>& numbers, const Budgets& budgets) {
  const AttemptRecord* chosen = nullptr;
  for (int number : numbers) {
    const AttemptRecord* sample = state.attempt(number);
    if (sample == nullptr || !sample->result) continue;
    if (chosen == nullptr || better_sample(*sample->result, *chosen->result)) chosen = sample;
  }
  if (chosen == nullptr) return -1;
  const int chosen_number = chosen->number;
  for (int number : numbers)
    if (AttemptRecord* sample = state.attempt(number)) sample->carried = number == chosen_number;
  route_after_attempt(state, chosen_number, budgets);
  return chosen_number;
}

}  // namespace stitch::agents
