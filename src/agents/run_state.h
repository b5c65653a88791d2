// The typed state of one run of the loop (workflow.h), persisted as state.json in the run
// directory after every step: the plan and its versions, the subtasks and their status, every
// attempt with its result, the best program, the refine queue, and what the budgets have used.
//
// Durability (docs/loop.md): an attempt's own files are its record. attempts/NN/attempt.json says
// what the attempt is (written before any work); attempts/NN/result.json is written once, last,
// when its verification is complete (the attempt's commit record). state.json is rewritten
// atomically after every step, so after a crash it is at most one step behind the attempts, and
// resuming reconciles the two (Workflow::resume): a started attempt with a result.json is finished
// from it, one without is marked interrupted and done again as a new attempt.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"
#include "verify/feedback.h"
#include "verify/verdict.h"
#include "verify/verify_report.h"

namespace stitch::agents {

inline constexpr int kStateFormatVersion = 1;

// Where the loop is. planning → coding (per subtask, when the Coder writes subtask by subtask) →
// integrating (the whole program, timed) → refining → finished.
enum class Phase : uint8_t { planning, coding, integrating, refining, finished };
std::string_view phase_name(Phase phase);

// How a finished run ended.
enum class RunEnd : uint8_t {
  none,                  // not finished
  succeeded,             // a verified program is in best/
  failed,                // no verified program: every plan failed
  refused,               // the Planner cannot cover the task
  no_gpu,                // built and statically checked; nothing can run here
  budget_exhausted,      // out of attempts, time or tokens before any program passed
  infrastructure_error,  // the machinery (judge, compiler, runner setup) failed
  no_usable_output,      // an LLM role never produced a usable answer within the budget
};
std::string_view run_end_name(RunEnd end);

enum class SubtaskStatus : uint8_t { pending, passed, failed };
std::string_view subtask_status_name(SubtaskStatus status);

// What an attempt tried: one subtask, the whole program, or a refine candidate of the best.
enum class AttemptKind : uint8_t { subtask, integration, refine };
std::string_view attempt_kind_name(AttemptKind kind);
std::optional<AttemptKind> attempt_kind_from_name(std::string_view name);

// started: attempt.json written, no result yet; finished: result.json written and routed;
// interrupted: found started after a crash with no result (its work is done again).
enum class AttemptStatus : uint8_t { started, finished, interrupted };
std::string_view attempt_status_name(AttemptStatus status);

struct Timing {
  double median_ms = 0;
  double p10_ms = 0;
  double p90_ms = 0;
};

// What a verification of one attempt found, in the few facts routing needs (result.json). Read
// from verify.json and feedback.json, never re-derived from a live report, so a resumed run routes
// exactly as an uninterrupted one would.
struct AttemptResult {
  VerifyState state = VerifyState::verified;  // verify.json state
  std::optional<Outcome> outcome;             // set when state is verified
  std::string reason;
  std::optional<Timing> timing;  // the basis the speedups use (verify.json speedup_basis)
  std::vector<std::pair<std::string, double>> baselines_ms;  // mode → median, as measured
  std::string suggestion_rule;                               // feedback.json suggestion
  std::string suggestion;
  // The Coder's reply held no usable program (an LLM Coder: no code block, ABI mismatch,
  // truncated...): nothing was verified; `reason` says what was wrong.
  bool no_usable_output = false;
  bool passed() const {
    return !no_usable_output && state == VerifyState::verified && outcome == Outcome::passed;
  }
  // "no_usable_output", the outcome's name, or the state's when there is no verdict ("no_gpu").
  std::string_view verdict_name() const {
    if (no_usable_output) return "no_usable_output";
    return outcome ? enum_name(*outcome) : enum_name(state);
  }
  std::optional<double> baseline_ms(std::string_view mode) const;
};

struct PlanVersion {
  int version = 1;
  std::string file;    // "plans/plan.v1.json", relative to the run directory
  std::string reason;  // why this version: "first plan", "replan: wrong twice on s02"
  nlohmann::json options = nlohmann::json::object();  // the Planner's knobs for it
  std::vector<std::string> subtask_ids;
};

struct SubtaskState {
  std::string id;
  SubtaskStatus status = SubtaskStatus::pending;
  int attempts = 0;
};

struct AttemptRecord {
  int number = 0;
  std::string dir;  // "attempts/03", relative to the run directory
  AttemptKind kind = AttemptKind::integration;
  int plan_version = 1;
  int subtask = -1;  // index into RunState::subtasks; -1: the whole program
  nlohmann::json variant =
      nlohmann::json::object();  // the Coder's knobs (built-in: program_variant.h)
  std::string label;             // one line: "plan v1", "refine: s02 block 512"
  // SHA-256 over the draft's sources and headers (program_digest in attempt_files.h): equal
  // digests are the same program, whatever the attempt directory. Empty before the Coder wrote.
  std::string program_digest;
  AttemptStatus status = AttemptStatus::started;
  std::optional<AttemptResult> result;
  bool accepted = false;  // refine: became the best
  // A step of K Coder samples (--samples K) records K attempts: this one's index (-1: a step of
  // one). Only the step's best sample is carried forward (routed, and its feedback used next).
  int sample = -1;
  bool carried = true;
  int64_t tokens = 0;
  double seconds = 0;
};

// One change refine proposes to the best program (refine.h).
struct RefineCandidate {
  std::string label;      // "s02_matmul…: block 512"
  nlohmann::json change;  // merged into the best program's variant (workflow.h merge_variant)
};

struct RefineState {
  bool started = false;
  std::vector<RefineCandidate> queue;  // still to try, in order
  int tried = 0;
  int without_gain = 0;
  std::optional<double> before_ms;  // the best's median when refine began
};

struct Usage {
  int attempts = 0;
  double wall_s = 0;  // across resumes
  int64_t tokens = 0;
};

struct RunState {
  int format = kStateFormatVersion;
  std::string task;
  Phase phase = Phase::planning;
  RunEnd end = RunEnd::none;
  std::string end_reason;
  std::vector<PlanVersion> plans;
  std::vector<SubtaskState> subtasks;
  int current_subtask = 0;
  std::vector<AttemptRecord> attempts;
  std::optional<int> best_attempt;  // AttemptRecord::number
  int failures_in_row = 0;          // on the current subtask / integration, reset by a pass
  int replans = 0;
  std::string replan_reason;  // set while phase is planning for a version after the first
  RefineState refine;
  Usage used;

  const PlanVersion* current_plan() const { return plans.empty() ? nullptr : &plans.back(); }
  AttemptRecord* attempt(int number);
  const AttemptRecord* attempt(int number) const;
  const AttemptRecord* best() const { return best_attempt ? attempt(*best_attempt) : nullptr; }
  // The most recent finished attempt of `kind` on `subtask` under the current plan that was carried
  // forward (samples not chosen are skipped).
  const AttemptRecord* last_finished(AttemptKind kind, int subtask) const;
};

nlohmann::json attempt_result_to_json(const AttemptResult& result);
Result<AttemptResult> attempt_result_from_json(const nlohmann::json& doc);

nlohmann::json run_state_to_json(const RunState& state);
Result<RunState> run_state_from_json(const nlohmann::json& doc);

// state.json, written atomically (util/fs.h).
Status save_run_state(const std::filesystem::path& run_dir, const RunState& state);
Result<RunState> load_run_state(const std::filesystem::path& run_dir);

// The AttemptResult of a finished verification: state, outcome, reason, timing on the speedup
// basis and the baselines of its verify.json, and the suggestion of its feedback.json.
AttemptResult attempt_result_from_verify(const VerifyReport& report,
                                         const std::optional<Feedback>& feedback);
// The same, read from the files in `attempt_dir` as the Verifier wrote them (feedback.json may be
// absent), so a resumed run routes exactly as an uninterrupted one would.
Result<AttemptResult> read_attempt_result(const std::filesystem::path& attempt_dir);

}  // namespace stitch::agents
