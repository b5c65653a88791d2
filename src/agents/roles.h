// The three roles of the loop and the refine policy, as interfaces the workflow engine
// (workflow.h) drives. Each has a built-in implementation (builtin_roles.h: no LLM, deterministic)
// and fakes in tests; LLM roles implement the same interfaces. Everything a role produces lands in
// the run directory, so a run can be resumed and audited.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/run_state.h"
#include "util/result.h"
#include "verify/feedback.h"

namespace stitch::agents {

namespace fs = std::filesystem;

// ---- Planner ------------------------------------------------------------------------------------

struct PlanRequest {
  fs::path run_dir;    // graph.json, weights, task.py, reference/
  fs::path plan_file;  // where to write this version (plans/plan.vN.json)
  int version = 1;
  // Replanning: why the previous plan is abandoned, and the options of every earlier version (so
  // a built-in Planner picks ones not yet tried).
  std::string replan_reason;
  std::vector<nlohmann::json> tried_options;
  std::optional<fs::path> last_feedback;  // feedback.json of the attempt that triggered it
};

struct PlanDraft {
  std::vector<std::string> subtask_ids;  // in execution order
  nlohmann::json options = nlohmann::json::object();
  std::string summary;  // one line for the progress view
  int64_t tokens = 0;
};

// The Planner cannot cover the task (an op outside its families): not an error of the machinery.
struct PlanRefusal {
  std::string reason;
};

struct PlanOutcome {
  std::optional<PlanDraft> draft;  // set, or refusal
  PlanRefusal refusal;
  // Replanning found no option set left to try (the run ends: every plan failed).
  bool exhausted = false;
  // An LLM Planner's model gave no usable plan (refusal.reason says why): the run ends
  // no_usable_output.
  bool no_usable_output = false;
};

class Planner {
 public:
  virtual ~Planner() = default;
  // An Error only when the machinery fails (graph unreadable, disk full).
  virtual Result<PlanOutcome> plan(const PlanRequest& request) = 0;
};

// ---- Coder --------------------------------------------------------------------------------------

// Whether the Coder writes the program one subtask at a time (each checked on its own before the
// next) or whole (straight to integration).
enum class CoderGranularity : uint8_t { per_subtask, whole_program };

struct CodeRequest {
  fs::path run_dir;
  fs::path plan_file;
  int plan_version = 1;
  int subtask = -1;  // index into the plan's subtasks; -1: the whole program
  std::vector<std::string> subtask_ids;
  std::optional<fs::path> feedback;  // feedback.json of the last failed attempt on this scope
  // The last attempt on this scope produced no usable program: which attempt, and what was wrong
  // ("attempt 03: no_usable_output (abi_violation): ..."). An LLM Coder tells its model.
  std::optional<std::string> last_unusable;
  // The knobs to apply (refine, or a Coder's own retry). Empty object: the Coder's defaults.
  nlohmann::json variant = nlohmann::json::object();
  // Variants already tried on this scope under this plan (a deterministic Coder must not repeat).
  std::vector<nlohmann::json> tried_variants;
  fs::path out_dir;  // attempt/src/: write sources here
};

struct CodeDraft {
  std::vector<fs::path> sources;  // compiled and linked together
  std::vector<fs::path> headers;  // local headers, statically checked
  std::vector<fs::path> include_dirs;
  std::vector<std::string> libraries;
  nlohmann::json variant = nlohmann::json::object();  // the knobs this program was written with
  std::string label;
  int64_t tokens = 0;
};

struct CodeOutcome {
  std::optional<CodeDraft> draft;  // set: a program to verify
  // Unset draft: the Coder has nothing new for this scope (stagnation → the engine replans), or,
  // with no_usable_output, its model's reply held no usable program (the attempt is kept with
  // that outcome and the reason goes back to the Coder on the next step).
  std::string why_not;
  bool no_usable_output = false;
  int64_t tokens = 0;  // spent without a draft (a draft carries its own)
};

class Coder {
 public:
  virtual ~Coder() = default;
  virtual CoderGranularity granularity() const = 0;
  virtual Result<CodeOutcome> write(const CodeRequest& request) = 0;
  // Programs written per step (--samples K): the engine opens that many attempts of one scope.
  virtual int samples_per_step() const { return 1; }
  // One step's K requests (one per attempt directory, in sample order); the outcomes in the same
  // order. The default writes them one after another; an LLM Coder sends them at once.
  virtual std::vector<Result<CodeOutcome>> write_samples(const std::vector<CodeRequest>& requests) {
    std::vector<Result<CodeOutcome>> outcomes;
    for (const CodeRequest& request : requests)
      outcomes.push_back(write(request));
    return outcomes;
  }
};

// ---- Verifier -----------------------------------------------------------------------------------

struct VerifyJob {
  fs::path run_dir;      // the capture
  fs::path attempt_dir;  // verify.json, feedback.json land here
  const CodeDraft* draft = nullptr;
  int subtask = -1;  // -1: the whole program (correctness + timing); else a subtask check
};

// Verifies one attempt; writes verify.json and feedback.json into the attempt directory and
// returns what routing needs (attempt_result_from_verify of those files). An Error only when the
// request cannot be acted on; program and machinery failures are in the result.
class CandidateVerifier {
 public:
  virtual ~CandidateVerifier() = default;
  virtual Result<AttemptResult> verify(const VerifyJob& job) = 0;
};

// Profiles a verified program (for refine): where its time goes, per kernel. nullopt when no
// profile can be taken (no GPU, no profiler): refine then ranks by the cost model.
class ProgramProfiler {
 public:
  virtual ~ProgramProfiler() = default;
  virtual std::optional<ProfileSummary> profile(const fs::path& run_dir,
                                                const fs::path& attempt_dir,
                                                const CodeDraft& draft) = 0;
};

// ---- Refine -------------------------------------------------------------------------------------

// RefineCandidate is in run_state.h: the state keeps the queue of them.
// Proposes changes to the best program, most promising first.
class RefinePolicy {
 public:
  virtual ~RefinePolicy() = default;
  virtual Result<std::vector<RefineCandidate>> candidates(
      const fs::path& plan_file, const nlohmann::json& best_variant,
      const std::optional<ProfileSummary>& profile) = 0;
};

}  // namespace stitch::agents
