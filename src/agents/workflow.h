// The workflow engine: drives Planner → Coder → Verifier → (feedback | next subtask | integration
// | refine | replan) over one run directory until the run finishes or a budget ends it, saving the
// typed state (run_state.h) after every step and logging each step to events.jsonl. Routing
// decisions are the pure functions of routing.h; the roles are interfaces (roles.h), so the whole
// engine, resume included, is tested on a CPU with fakes.
//
// One attempt, in order (the durability protocol of run_state.h; a step of K samples opens K
// attempts at once, gets their programs from the Coder together, then verifies them one after
// another and routes on the best, routing.h):
//   1. attempts/NN/ created, attempt.json written, the attempt recorded as started, state saved;
//   2. the Coder writes attempts/NN/src/ and draft.json (or its model gave no usable program: the
//      attempt is kept, with its transcript, and ends no_usable_output without a verification);
//   3. the Verifier writes verify.json and feedback.json;
//   4. result.json written (the attempt's commit record);
//   5. routed, state saved.
// Resuming after a crash anywhere: attempts with result.json are finished from it (never
// verified again), started ones without it are marked interrupted and their work is redone as a
// new attempt; attempt directories the state never heard of are recorded as interrupted.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agents/roles.h"
#include "agents/routing.h"
#include "agents/run_state.h"
#include "run/run_dir.h"
#include "util/result.h"

namespace stitch::agents {

struct WorkflowDeps {
  Planner& planner;
  Coder& coder;
  CandidateVerifier& verifier;
  ProgramProfiler* profiler = nullptr;  // null: refine ranks by the plan alone
  RefinePolicy* refiner = nullptr;      // null: no refine phase
};

// One step, for progress views: `line` is a one-line human summary.
struct WorkflowEvent {
  std::string name;  // "plan", "attempt.start", "attempt.done", "refine.queue", "run.end", ...
  std::string line;
  nlohmann::json fields = nlohmann::json::object();
};

struct WorkflowOptions {
  Budgets budgets;
  // Monotonic seconds (tests: a fake clock); default steady_clock.
  std::function<double()> clock;
  std::function<void(const WorkflowEvent&)> on_event;
  // Test hook: called at named points of an attempt ("after_attempt_json", "after_code",
  // "after_verify", "after_result"), where a crash test kills the process.
  std::function<void(std::string_view point, int attempt_number)> checkpoint;
  // resume(): a run that ended no_gpu (built and checked where there was no GPU) continues with
  // its integration — set when a GPU is present now.
  bool reopen_no_gpu = false;
};

class Workflow {
 public:
  Workflow(run::RunDir& run, WorkflowDeps deps, WorkflowOptions options);

  // A fresh run over `run`'s capture. An Error only when the machinery fails (disk, unreadable
  // state); every other ending is in the returned state (end, end_reason).
  Result<RunState> start(const std::string& task);
  // Continues the run saved in state.json (a finished run is returned as it is).
  Result<RunState> resume();

 private:
  Result<RunState> drive(RunState state);
  Status reconcile(RunState& state);
  Status step_plan(RunState& state);
  Status step_attempt(RunState& state, AttemptKind kind, int subtask, nlohmann::json variant,
                      std::string label);
  // The steps of one attempt: its record and folder, the Coder's request, and its endings.
  Result<fs::path> open_attempt(RunState& state, AttemptKind kind, int subtask,
                                const nlohmann::json& variant, const std::string& label,
                                int sample);
  // The Coder's outcome for attempt `number` verified, or recorded as no_usable_output; its
  // result.json written and the state updated, not routed.
  Result<AttemptResult> settle_attempt(RunState& state, int number, CodeOutcome code,
                                       double started_s);
  int samples_for_step(const RunState& state, AttemptKind kind) const;
  CodeRequest code_request(const RunState& state, const PlanVersion& plan, AttemptKind kind,
                           int subtask, const nlohmann::json& variant) const;
  Status drop_stagnant_attempt(RunState& state, AttemptKind kind, const std::string& label,
                               const std::string& why_not, const fs::path& dir);
  // Records the verdict and says so; routes on it unless the attempt is one of several samples.
  Status finish_attempt(RunState& state, int number, const AttemptResult& result, double seconds,
                        bool route = true);
  Status start_refine(RunState& state);
  Status save(RunState& state);
  void emit(const std::string& name, const std::string& line,
            nlohmann::json fields = nlohmann::json::object());
  void checkpoint(std::string_view point, int attempt_number);
  std::optional<fs::path> feedback_for(const RunState& state, AttemptKind kind, int subtask) const;
  std::vector<nlohmann::json> tried_variants(const RunState& state, AttemptKind kind,
                                             int subtask) const;

  run::RunDir& run_;
  WorkflowDeps deps_;
  WorkflowOptions options_;
  double clock_base_s_ = 0;  // state.used.wall_s when this process took over
  double clock_start_s_ = 0;
};

// Merges a refine candidate's change into a variant: objects merged key by key (recursively),
// anything else replaced.
nlohmann::json merge_variant(const nlohmann::json& base, const nlohmann::json& change);

}  // namespace stitch::agents
