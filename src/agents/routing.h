// Routing (the paper's Verifier → next step), as pure functions on the run state, unit-tested
// without any role:
//   compile / runtime error, timeout, wrong, hacked → the Coder retries the same scope with the
//                                                    feedback;
//   a subtask passed                               → the next subtask; after the last, integration;
//   integration passed                             → refine (if enabled), else finished;
//   the same scope failed max_attempts_per_scope times in a row, or the Coder has nothing new
//   (stagnation)                                   → replan, up to max_replans; then the run fails;
//   the same program failed the same way twice (a deterministic failure: retrying cannot help)
//                                                  → replan at once; if a replan wrote that
//                                                    program again, the run fails with the reason;
//   the machinery failed                           → the run stops (infrastructure_error);
//   the Coder's reply held no usable program       → the same scope again, the reason fed back
//                                                    (the plan is not at fault: no replan); when
//                                                    the budget ends and no attempt ever had a
//                                                    usable program, the run ends no_usable_output;
//   a step of K samples                            → routed on its best sample (the fastest
//                                                    passing one, else the most advanced failure),
//                                                    which is carried forward;
//   refine: a candidate is accepted only when correct and faster beyond the measured spread.
// Budgets (attempts, wall time, LLM tokens) end the run before the next step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agents/run_state.h"

namespace stitch::agents {

struct Budgets {
  int max_attempts = 24;           // verifications in all, across resumes
  double max_wall_s = 3600;        // 0: unlimited
  int64_t max_tokens = 0;          // LLM tokens; 0: unlimited
  int max_attempts_per_scope = 3;  // failures in a row on one subtask / integration → replan
  int max_replans = 3;
  bool refine = true;
  int max_refine_attempts = 8;
  int refine_patience = 4;  // candidates in a row without a gain → stop refining
  double min_gain = 0.01;   // refine: the least relative improvement accepted
};

// True when `candidate` is faster than `best` beyond the measured spread: its median is at least
// `min_gain` below the best's, and the gap exceeds the larger half-spread ((p90 - p10) / 2) of the
// two, so noise alone does not make a change look like an improvement.
bool faster_beyond_spread(const Timing& best, const Timing& candidate, double min_gain);

// Whether a finished attempt counts as passing its scope: a subtask check passes when it built and
// is statically clean (state no_gpu: nothing more can be checked of a part) or ran correct.
bool attempt_passes(const AttemptRecord& attempt);

// The reason a run must stop before its next step, or "" to go on.
std::string budget_exceeded(const RunState& state, const Budgets& budgets);

// How a run whose budget is spent ends: no_usable_output when attempts were made and none had a
// usable program, else budget_exhausted (finish_run makes it succeeded when one passed).
RunEnd budget_end(const RunState& state);

// Ends the run: with the best program when there is one (succeeded), else with `end`.
void finish_run(RunState& state, RunEnd end, const std::string& reason);

// Abandons the current plan: back to planning with `reason`, or the run fails when the replans
// are spent.
void route_replan(RunState& state, const Budgets& budgets, const std::string& reason);

// Applies one finished attempt (status finished, result set) to the state: subtask status, best,
// failure counters, refine progress, phase. Deterministic: a resumed run routes as the original.
void route_after_attempt(RunState& state, int attempt_number, const Budgets& budgets);

// Applies one step of K samples (attempts `numbers`, every one finished): the best sample is routed
// as the step's attempt (route_after_attempt) and carried forward; the others are marked not
// carried. Returns the chosen attempt's number.
int route_after_samples(RunState& state, const std::vector<int>& numbers, const Budgets& budgets);

}  // namespace stitch::agents
